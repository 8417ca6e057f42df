"""A tiny fake model upstream on loopback: OpenAI Chat Completions and Responses, Anthropic Messages.

``python -m tests.support.fake_llm [--port 0] [--chunks N] [--delay S] [--tls-cert F --tls-key F]`` prints ``READY http://127.0.0.1:PORT``
and serves until killed; :class:`FakeLLM` runs it as a subprocess (``with FakeLLM() as llm: llm.url``).
Plain asyncio streams, HTTP/1.1 keep-alive, Content-Length request bodies.

What it answers is chosen by the request's ``model``:

- ``fake``: text (``The answer is 42.``, in ``--chunks`` pieces when streamed); ``fake-tool``: a call of
  ``get_quote`` with ``{"symbol": "AAPL"}``;
- ``fake-nousage``: as ``fake`` with no usage anywhere; ``fake-slow``: ``--delay`` seconds (default
  0.05) between stream pieces; ``fake-cut``: a stream that stops after two pieces (connection closed);
- ``fake-429`` / ``fake-500``: that HTTP status with an OpenAI-style JSON error; ``fake-malformed``:
  ``200`` with a body that is not JSON.

Usage is reported as OpenAI and Anthropic do: Chat Completions streams only with
``stream_options.include_usage``; input 11 tokens (3 cached), output 7. ``GET /seen`` answers the
headers of the last model request it read (tests check what the door added and removed).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import ssl
import subprocess
import sys
from pathlib import Path
from typing import Any

TEXT = "The answer is 42."
ROOT = Path(__file__).resolve().parents[2]
USAGE_IN, USAGE_OUT, USAGE_CACHED = 11, 7, 3


class Fake:
    def __init__(self, chunks: int, delay: float) -> None:
        self.chunks = chunks
        self.delay = delay
        self.seen: list[list[str]] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = [line.split(":", 1) for line in lines[1:] if ":" in line]
                length = next((int(v) for k, v in headers if k.strip().lower() == "content-length"), 0)
                body = await reader.readexactly(length) if length else b""
                if path == "/seen":
                    await self._json(writer, 200, {"headers": self.seen[-1] if self.seen else []})
                    continue
                self.seen.append([f"{k.strip().lower()}: {v.strip()}" for k, v in headers])
                if not await self.answer(writer, method, path, body):
                    writer.close()
                    return
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            writer.close()

    async def _json(
        self, writer: asyncio.StreamWriter, status: int, value: Any, raw: bytes | None = None
    ) -> None:
        body = raw if raw is not None else json.dumps(value).encode()
        writer.write(
            b"HTTP/1.1 %d X\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
            % (status, len(body), body)
        )
        await writer.drain()

    async def answer(self, writer: asyncio.StreamWriter, method: str, path: str, body: bytes) -> bool:
        request = json.loads(body) if body else {}
        model = request.get("model", "fake")
        api = {"/v1/chat/completions": "chat", "/v1/responses": "responses", "/v1/messages": "messages"}.get(
            path
        )
        if api is None:
            await self._json(writer, 200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})
            return True
        if model in ("fake-429", "fake-500"):
            status = int(model[-3:])
            await self._json(
                writer, status, {"error": {"message": f"fake {status}", "type": "rate_limit_error"}}
            )
            return True
        if model == "fake-malformed":
            await self._json(writer, 200, None, b'{"id": "x", "choices": [ not json')
            return True
        usage = model != "fake-nousage"
        tool = model == "fake-tool"
        if not request.get("stream"):
            await self._json(writer, 200, whole(api, model, tool, usage))
            return True
        include = usage and (
            api != "chat" or bool((request.get("stream_options") or {}).get("include_usage"))
        )
        events = stream(api, model, tool, include, self.chunks)
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
            b"transfer-encoding: chunked\r\n\r\n"
        )
        for i, event in enumerate(events):
            if model == "fake-cut" and i == 2:
                await writer.drain()
                writer.transport.abort()
                return False
            writer.write(b"%x\r\n%s\r\n" % (len(event), event))
            await writer.drain()
            if model == "fake-slow" and self.delay:
                await asyncio.sleep(self.delay)
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True


def _pieces(n: int) -> list[str]:
    words = TEXT.split(" ")
    n = max(1, n)
    out = [" ".join(words[i * len(words) // n : (i + 1) * len(words) // n]) for i in range(n)]
    return [p + (" " if i < n - 1 and p else "") for i, p in enumerate(out)]


def whole(api: str, model: str, tool: bool, usage: bool) -> dict[str, Any]:
    """A non-streamed answer in the API's format."""
    args = '{"symbol": "AAPL"}'
    if api == "chat":
        message: dict[str, Any] = {"role": "assistant", "content": None if tool else TEXT}
        if tool:
            message["tool_calls"] = [
                {"id": "call_1", "type": "function", "function": {"name": "get_quote", "arguments": args}}
            ]
        out: dict[str, Any] = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool else "stop"}],
        }
        if usage:
            out["usage"] = {
                "prompt_tokens": USAGE_IN,
                "completion_tokens": USAGE_OUT,
                "total_tokens": USAGE_IN + USAGE_OUT,
                "prompt_tokens_details": {"cached_tokens": USAGE_CACHED},
            }
        return out
    if api == "responses":
        item: dict[str, Any] = (
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "name": "get_quote",
                "arguments": args,
                "status": "completed",
            }
            if tool
            else {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": TEXT, "annotations": []}],
            }
        )
        out = {
            "id": "resp_1",
            "object": "response",
            "created_at": 1,
            "model": model,
            "status": "completed",
            "output": [item],
        }
        if usage:
            out["usage"] = {
                "input_tokens": USAGE_IN,
                "output_tokens": USAGE_OUT,
                "total_tokens": USAGE_IN + USAGE_OUT,
                "input_tokens_details": {"cached_tokens": USAGE_CACHED},
                "output_tokens_details": {"reasoning_tokens": 0},
            }
        return out
    block = (
        {"type": "tool_use", "id": "toolu_1", "name": "get_quote", "input": {"symbol": "AAPL"}}
        if tool
        else {"type": "text", "text": TEXT}
    )
    out = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [block],
        "stop_reason": "tool_use" if tool else "end_turn",
        "stop_sequence": None,
    }
    if usage:
        out["usage"] = {
            "input_tokens": USAGE_IN,
            "output_tokens": USAGE_OUT,
            "cache_read_input_tokens": USAGE_CACHED,
        }
    return out


def _sse(data: Any, event: str | None = None) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data)
    return (f"event: {event}\n" if event else "").encode() + f"data: {text}\n\n".encode()


def stream(api: str, model: str, tool: bool, usage: bool, chunks: int) -> list[bytes]:
    """A streamed answer's SSE events in the API's format."""
    final = whole(api, model, tool, usage)
    if api == "chat":
        base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": model}
        out = [
            _sse(
                {
                    **base,
                    "choices": [
                        {"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}
                    ],
                }
            )
        ]
        if tool:
            out.append(
                _sse(
                    {
                        **base,
                        "choices": [
                            {
                                "index": 0,
                                "delta": {
                                    "tool_calls": [
                                        {
                                            "index": 0,
                                            "id": "call_1",
                                            "type": "function",
                                            "function": {"name": "get_quote", "arguments": ""},
                                        }
                                    ]
                                },
                                "finish_reason": None,
                            }
                        ],
                    }
                )
            )
            for part in ('{"symbol":', ' "AAPL"}'):
                out.append(
                    _sse(
                        {
                            **base,
                            "choices": [
                                {
                                    "index": 0,
                                    "delta": {"tool_calls": [{"index": 0, "function": {"arguments": part}}]},
                                    "finish_reason": None,
                                }
                            ],
                        }
                    )
                )
        else:
            for piece in _pieces(chunks):
                out.append(
                    _sse(
                        {
                            **base,
                            "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}],
                        }
                    )
                )
        out.append(
            _sse(
                {
                    **base,
                    "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls" if tool else "stop"}],
                }
            )
        )
        if usage:
            out.append(_sse({**base, "choices": [], "usage": final["usage"]}))
        out.append(_sse("[DONE]"))
        return out
    if api == "responses":
        created = {**final, "status": "in_progress", "output": []}
        created.pop("usage", None)
        out = [_sse({"type": "response.created", "response": created}, "response.created")]
        if tool:
            out.append(
                _sse(
                    {"type": "response.output_item.added", "output_index": 0, "item": final["output"][0]},
                    "response.output_item.added",
                )
            )
        else:
            for piece in _pieces(chunks):
                out.append(
                    _sse(
                        {
                            "type": "response.output_text.delta",
                            "output_index": 0,
                            "content_index": 0,
                            "item_id": "msg_1",
                            "delta": piece,
                        },
                        "response.output_text.delta",
                    )
                )
        out.append(_sse({"type": "response.completed", "response": final}, "response.completed"))
        return out
    start = {k: v for k, v in final.items() if k != "usage"} | {"content": [], "stop_reason": None}
    if usage:
        start["usage"] = {
            "input_tokens": USAGE_IN,
            "output_tokens": 1,
            "cache_read_input_tokens": USAGE_CACHED,
        }
    out = [_sse({"type": "message_start", "message": start}, "message_start")]
    if tool:
        out.append(
            _sse(
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "tool_use", "id": "toolu_1", "name": "get_quote", "input": {}},
                },
                "content_block_start",
            )
        )
        for part in ('{"symbol":', ' "AAPL"}'):
            out.append(
                _sse(
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "input_json_delta", "partial_json": part},
                    },
                    "content_block_delta",
                )
            )
    else:
        out.append(
            _sse(
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                "content_block_start",
            )
        )
        for piece in _pieces(chunks):
            out.append(
                _sse(
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "text_delta", "text": piece},
                    },
                    "content_block_delta",
                )
            )
    out.append(_sse({"type": "content_block_stop", "index": 0}, "content_block_stop"))
    delta: dict[str, Any] = {
        "type": "message_delta",
        "delta": {"stop_reason": final["stop_reason"], "stop_sequence": None},
    }
    if usage:
        delta["usage"] = {"output_tokens": USAGE_OUT}
    out.append(_sse(delta, "message_delta"))
    out.append(_sse({"type": "message_stop"}, "message_stop"))
    return out


async def _main(
    port: int, chunks: int, delay: float, cert: str | None = None, key: str | None = None
) -> None:
    fake = Fake(chunks, delay)
    tls = None
    if cert:
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        tls.load_cert_chain(cert, key)
    server = await asyncio.start_server(fake.handle, "127.0.0.1", port, ssl=tls)
    scheme = "https" if tls else "http"
    print(f"READY {scheme}://127.0.0.1:{server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


class FakeLLM:
    """The fake as a subprocess: ``with FakeLLM(chunks=4) as llm: llm.url``."""

    def __init__(self, chunks: int = 4, delay: float = 0.05, tls: tuple[str, str] | None = None) -> None:
        self.args = ["--chunks", str(chunks), "--delay", str(delay)]
        if tls is not None:  # (cert, key): the fake speaks HTTPS
            self.args += ["--tls-cert", tls[0], "--tls-key", tls[1]]
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""

    def __enter__(self) -> FakeLLM:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.support.fake_llm", *self.args],
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=env,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line.startswith("READY "):
            self.proc.kill()
            raise RuntimeError(f"fake model upstream did not start: {line!r}")
        self.url = line.split(" ", 1)[1]
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(5)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="fake_llm")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--chunks", type=int, default=4)
    p.add_argument("--delay", type=float, default=0.05)
    p.add_argument("--tls-cert")
    p.add_argument("--tls-key")
    args = p.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_main(args.port, args.chunks, args.delay, args.tls_cert, args.tls_key))


if __name__ == "__main__":
    main()
