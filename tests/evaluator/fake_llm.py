"""A tiny OpenAI-compatible ``/v1/chat/completions`` server on 127.0.0.1 for the evaluator's tests.

A script decides each answer from the request body and its 1-based number; the server records every
body and header set, and the most requests it had in flight at once.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = tuple[int, Any, float] | tuple[int, Any, float, dict[str, str]]
"""(HTTP status, JSON body, delay in seconds before answering[, extra response headers])."""
Script = Callable[[dict[str, Any], int], Reply]


def completion(content: str = "", tool_calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A chat completion whose first choice says ``content`` (and requests ``tool_calls``)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": message}]}


class FakeOpenAI:
    """The server; ``url`` is the base URL (``.../v1``) a client is given."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with fake.lock:
                    fake.requests.append(body)
                    fake.headers.append(dict(self.headers))
                    n = len(fake.requests)
                    fake.in_flight += 1
                    fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
                try:
                    if self.path != "/v1/chat/completions":
                        reply: Reply = (404, {"error": "not found"}, 0.0)
                    else:
                        reply = fake.script(body, n)
                finally:
                    with fake.lock:
                        fake.in_flight -= 1
                status, data, delay = reply[0], json.dumps(reply[1]).encode(), reply[2]
                extra = reply[3] if len(reply) > 3 else {}
                time.sleep(delay)  # the model's latency, not a wait for data
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in extra.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        """Stop serving and release the port."""
        self.httpd.shutdown()
        self.httpd.server_close()
