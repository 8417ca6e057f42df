"""Loopback ports and HTTP reads that never go through a configured proxy."""

from __future__ import annotations

import json
import socket
import urllib.request
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
