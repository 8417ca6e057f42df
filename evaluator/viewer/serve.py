"""``finmcp-eval view``: its flags, and serving the viewer on loopback until SIGINT/SIGTERM.

Binds like ``finmcp-server``/``finmcp-proxy`` (``--host 127.0.0.1`` by default, the shared listener
policy, ``--token``) and prints the shared ready line ``finmcp-eval ready: http://HOST:PORT (view
STORE)`` on stderr once it accepts requests, after a line with the URL to open. Its default port,
8770, is none of the others' (server 8765, proxy 8766, the README tour's 8767 and 8768), so the
viewer starts while the tour's programs run. The parser part is light (``finmcp-eval --help`` builds
it); serving imports uvicorn, the app and the trace store when it runs.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Any

from finmcp.evaluator.errors import EvalInputError
from finmcp.recordings.plumbing.flags import add_bench, add_listener_options, add_trace_store
from finmcp.recordings.plumbing.listener import ListenerPolicy, ListenError, bind_listener, socket_url
from finmcp.recordings.plumbing.options import options_from

DEFAULT_PORT = 8770
TOKEN_ENV = "FINMCP_VIEW_TOKEN"


def add_parser(sub: Any) -> None:
    """The ``view`` subcommand."""
    p = sub.add_parser("view", help="a local web app to look at runs, samples, calls and the diff")
    add_trace_store(
        p, required=True, help="trace store: SQLite file written by finmcp-proxy, or a postgresql:// URL"
    )
    add_bench(p, help="benchmark for the reference calls, the diff and metric values (optional)")
    p.add_argument("--turn-base", type=int, default=0, help="number of the first turn in trace tags")
    add_listener_options(
        p,
        default_port=DEFAULT_PORT,
        token_help=f"require this token (?token= once in the browser, or a bearer header; env {TOKEN_ENV})",
    )


@dataclass(frozen=True)
class ViewOptions:
    """``finmcp-eval view``: the trace store to show, an optional benchmark, and where to listen."""

    db: str
    bench: str | None = None
    turn_base: int = 0
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    token: str | None = None
    """Required of every request (else ``$FINMCP_VIEW_TOKEN``, else none)."""
    max_body: int | None = None
    allow_host: tuple[str, ...] = ()
    allow_origin: tuple[str, ...] = ()


def view_options(args: argparse.Namespace) -> ViewOptions:
    """The typed options of parsed ``finmcp-eval view`` arguments."""
    return options_from(
        ViewOptions, args, allow_host=tuple(args.allow_host), allow_origin=tuple(args.allow_origin)
    )


def run(args: ViewOptions) -> int:
    """Serve until interrupted; returns the exit status (2, with one line on stderr, when the address
    cannot be bound: :func:`recordings.plumbing.listener.listen_error`)."""
    import asyncio
    import os

    import uvicorn

    from finmcp.evaluator.viewer.app import Viewer, build_app
    from finmcp.evaluator.viewer.diff import load_benchmark
    from finmcp.recordings.errors import RecordingsError
    from finmcp.recordings.plumbing.launch import announce_ready
    from finmcp.recordings.trace_store import open_trace_store

    token = args.token or os.environ.get(TOKEN_ENV) or None
    try:
        policy = ListenerPolicy.build(
            args.host,
            token,
            args.max_body,
            allow_hosts=args.allow_host,
            allow_origins=args.allow_origin,
        )
    except ValueError as exc:
        raise EvalInputError(f"--max-body: {exc}") from None
    bench = load_benchmark(args.bench) if args.bench else None
    try:
        store = open_trace_store(args.db, readonly=True)
    except RecordingsError as exc:
        raise EvalInputError(f"--db: {exc}") from None
    try:
        sock = bind_listener("finmcp-eval view", args.host, args.port, exposes="read the traces", token=token)
    except ListenError as exc:  # the same line as finmcp-server's and finmcp-proxy's, naming --port
        store.close()
        print(f"finmcp-eval view: {exc}", file=sys.stderr)
        return 2
    base = socket_url(sock)
    from finmcp.evaluator.viewer.grounding import state_beside

    app = build_app(Viewer(store, bench, args.turn_base, state=state_beside(args.db)), policy)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)

    async def main() -> None:
        async def announce() -> None:
            while not server.started and not server.should_exit:
                await asyncio.sleep(0.01)
            if server.started:
                print(f"finmcp-eval view: open {base}/" + ("?token=..." if token else ""), file=sys.stderr)
                announce_ready("finmcp-eval", base, f"view {store.label}")

        watcher = asyncio.ensure_future(announce())
        try:
            await server.serve(sockets=[sock])
        finally:
            watcher.cancel()

    try:
        asyncio.run(main())
    finally:
        store.close()
    return 0
