"""Run by tests/proxy/test_model_door.py with the openai SDK's environment: ``python this.py BASE_URL``.

Streams a chat completion and a response through the model door, then asks for a model the fake
answers with 429; prints ``{"chat": text, "responses": text, "error": "rate limited" | message}``.
"""

from __future__ import annotations

import json
import sys

import openai


def main() -> None:
    client = openai.OpenAI(base_url=sys.argv[1], api_key="sk-test", max_retries=0)
    chat = client.chat.completions.create(
        model="fake",
        messages=[{"role": "user", "content": "q"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    text = "".join(c.choices[0].delta.content or "" for c in chat if c.choices)
    responses = client.responses.create(model="fake", input="q", stream=True)
    answer = ""
    for event in responses:
        if event.type == "response.output_text.delta":
            answer += event.delta
    try:
        client.chat.completions.create(model="fake-429", messages=[{"role": "user", "content": "q"}])
        error = "no error"
    except openai.RateLimitError as exc:
        error = "rate limited" if "fake 429" in str(exc) else str(exc)
    print(json.dumps({"chat": text, "responses": answer, "error": error}))


if __name__ == "__main__":
    main()
