"""Loopback ports and HTTP reads that never go through a configured proxy."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def free_port() -> int:
    """A loopback port with nothing listening on it (bound, then closed: refused until reused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def get_json(url: str, timeout: float = 5) -> Any:
    """GET a loopback URL and parse its JSON body (urllib errors are ``OSError``s)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never via a proxy
    with opener.open(url, timeout=timeout) as response:
        return json.loads(response.read())


@contextlib.contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """A ``ThreadingHTTPServer`` of ``handler`` on 127.0.0.1 and a free port, serving on a thread;
    yields its base URL (``http://127.0.0.1:PORT``) and shuts it down after."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
