"""Start an ASGI app the way a minimal server is started (``uvicorn.run``), for bench peers and baselines."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

from finmcp.recordings.plumbing.launch import announce_ready


def run_announced(app: Any, host: str, port: int, program: str, note: str, **options: Any) -> None:
    """``uvicorn.run(app, host, port, **options)``; port 0 takes a free port first (uvicorn.run binds by
    itself), and the ready line the launchers wait for is printed once the port accepts connections."""
    import uvicorn

    if port == 0:
        with socket.socket() as probe:
            probe.bind((host, 0))
            port = probe.getsockname()[1]
    threading.Thread(target=_announce_when_listening, args=(host, port, program, note), daemon=True).start()
    uvicorn.run(app, host=host, port=port, **options)


def _announce_when_listening(host: str, port: int, program: str, note: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=1):
                announce_ready(program, f"http://{host}:{port}", note)
                return
        except OSError:
            time.sleep(0.02)
