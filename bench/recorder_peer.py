"""mcp-recorder 0.5's replay server, as its ``mcp-recorder replay`` command runs it, on loopback (bench only).

``python -m bench.recorder_peer --cassette FILE --host 127.0.0.1 --port 0`` does what ``mcp-recorder
replay --cassette FILE`` does (its logging set-up, ``load_cassette``, the ``method_params`` matcher,
``create_replay_app``, ``uvicorn.run`` with ``log_level="warning"``), except that it binds only a
loopback address (127.0.0.1 by default, where the command listens on every interface) and prints
finmcp's ready line. :func:`write_cassette` writes a cassette
(mcp-recorder's JSON format 1.0) that answers the benchmark's calls with given responses.

mcp-recorder is the ``bench`` extra (pyproject.toml); only this bench module imports it.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

from bench.uvicorn_run import run_announced
from finmcp.recordings.plumbing.launch import LaunchSpec, LoopbackProcess
from finmcp.recordings.plumbing.listener import LOOPBACK_HOSTS


class RecorderProcess(LoopbackProcess):
    """``python -m bench.recorder_peer --cassette FILE`` on 127.0.0.1 and a free port."""

    spec = LaunchSpec("finmcp-bench-recorder", ("--host", "127.0.0.1", "--port", "0"), stop_timeout=5.0)


def available() -> bool:
    """True when mcp-recorder is installed (``pip install -e '.[bench]'``)."""
    return importlib.util.find_spec("mcp_recorder") is not None


def write_cassette(
    path: Path,
    url: str,
    initialize: tuple[dict[str, Any], dict[str, Any]] | None,
    answers: dict[str, dict[str, Any]],
    sse: bool,
    request_for: Any,
    copies: int,
) -> None:
    """A cassette with ``copies`` of ``initialize`` (request, response; when given) and of each code's
    call and answer (mcp-recorder's matcher consumes one recorded interaction per matching request).

    ``request_for(code)`` is the JSON-RPC request the answer belongs to (its ``_meta`` is not matched).
    """
    interactions: list[dict[str, Any]] = []
    for _ in range(copies):
        if initialize is not None:
            interactions.append(_interaction(*initialize, sse))
        for code, answer in answers.items():
            interactions.append(_interaction(request_for(code), answer, sse))
    cassette = {
        "version": "1.0",
        "metadata": {"recorded_at": "2026-01-01T00:00:00+00:00", "server_url": url, "transport_type": "http"},
        "interactions": interactions,
    }
    path.write_text(json.dumps(cassette, ensure_ascii=False), encoding="utf-8")


def _interaction(request: dict[str, Any], response: dict[str, Any], sse: bool) -> dict[str, Any]:
    return {
        "type": "jsonrpc_request",
        "request": request,
        "response": response,
        "response_is_sse": sse,
        "response_status": 200,
        "latency_ms": 0,
    }


def main(argv: list[str]) -> int:
    """Serve a cassette as ``mcp-recorder replay`` does, on ``--host``/``--port`` (0: a free port)."""
    parser = argparse.ArgumentParser(prog="bench.recorder_peer")
    parser.add_argument("--cassette", type=Path, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    if args.host not in LOOPBACK_HOSTS:
        parser.error(f"--host {args.host}: a bench peer listens on loopback only (127.0.0.1, ::1, localhost)")
    from mcp_recorder._utils import load_cassette
    from mcp_recorder.cli import _configure_logging  # what the replay command runs first
    from mcp_recorder.matcher import create_matcher
    from mcp_recorder.replayer import create_replay_app

    _configure_logging(False)
    loaded = load_cassette(args.cassette)
    app = create_replay_app(loaded, create_matcher("method_params", loaded.interactions))
    run_announced(app, args.host, args.port, "finmcp-bench-recorder", "replay", log_level="warning")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
