"""What ``finmcp-server`` serves and how, as typed values: the seam between the CLI and the server.

:class:`ServeOptions` is every serving option of ``finmcp-server [serve]``; ``server/cli.py`` builds
it from the command line and calls :func:`server.serve.serve` with it. :class:`ServingStack` is not an
option of the product: it names the pieces of the HTTP stack (the tools/call fast path, the event
loop, uvicorn's parser) so that tests and ``bench/`` can build the server without one of them and
measure or compare against it (``bench/server_variants.py``). The product always runs
:data:`PRODUCT_STACK`.

The module is light (no SDK, no inventories): ``server/cli.py`` builds its parser from it, so
``finmcp-server --help`` loads nothing of the serving machinery.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from finmcp.recordings.plumbing.listener import DEFAULT_MAX_BODY
from finmcp.server.latency import DEFAULT_LATENCY

if TYPE_CHECKING:  # the serving machinery is not loaded to parse a command line
    from finmcp.server.sequence import ExhaustedPolicy, ReplayMode
    from finmcp.server.service import MissPolicy

DEFAULT_PORT = 8765
TOKEN_ENV = "FINMCP_SERVER_TOKEN"
Transport = Literal["http", "stdio", "sse"]
SSE_PAGE_BYTES = 512 * 1024
"""Default page budget of ``tools/list`` over ``--transport sse``.

The mcp SDK's legacy SSE client (``sse_client``) refuses an SSE event over 1 MiB and has no option to
raise the cap; over that transport every answer is one event on the GET stream, so by default
``tools/list`` pages stay well under it (the 760-tool listing is ~1.7 MB: 4 pages).
"""


class ServeError(Exception):
    """A start-up problem, reported as one line on stderr (exit status 2)."""


@dataclass(frozen=True)
class ServeOptions:
    """The serving options of ``finmcp-server`` (docs/server.md, Options), one field per flag."""

    inventories: tuple[str, ...] = ("finmcp65",)
    inventory_given: bool = True
    """False when ``--inventory`` was not on the command line: a recordings file that declares another
    server (recorded through the proxy) is then served as that server (docs/server.md)."""
    server: str | None = None
    """``--server NAME``: the declared server of the recordings file to serve."""
    transport: Transport = "http"
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    tls: tuple[str, str] | None = None
    """(certificate file, key file), both checked loadable by the CLI; None: plain HTTP."""
    recordings: Path | None = None
    recordings_inventories: tuple[str, ...] | None = None
    entities: tuple[Path, ...] = ()
    """``--entities FILE``: benchmark sample files whose named entities the simulated world adopts."""
    seed: int = 0
    miss: MissPolicy = "simulate"
    replay: ReplayMode = "key"
    replay_exhausted: ExhaustedPolicy = "repeat-last"
    latency: str = DEFAULT_LATENCY
    faults: tuple[str, ...] = ()
    fault_schedule: Path | None = None
    """``--fault-schedule FILE``: a fault schedule (:mod:`recordings.fault_schedule`), or None."""
    page_size: int | None = None
    """None: auto; 0: one page; N: N tools a page."""
    json_response: bool = False
    output_schemas: bool = True
    token: str | None = None
    max_body: int = DEFAULT_MAX_BODY
    allow_hosts: tuple[str, ...] = ()
    allow_origins: tuple[str, ...] = ()
    cors_origins: tuple[str, ...] = ()


@dataclass(frozen=True)
class ServingStack:
    """The HTTP stack's pieces (for tests and benchmarks; the product runs :data:`PRODUCT_STACK`).

    ``fast_path``: answer qualifying ``tools/call`` POSTs in the request's own task
    (:mod:`server.fastpath`); ``loop``: ``auto`` (uvloop when installed) or ``asyncio``; ``http``:
    uvicorn's parser, ``auto`` (httptools when installed) or ``h11``.
    """

    fast_path: bool = True
    loop: Literal["auto", "asyncio", "uvloop"] = "auto"
    http: Literal["auto", "h11", "httptools"] = "auto"


PRODUCT_STACK = ServingStack()
SDK_PATH = ServingStack(fast_path=False)
"""The product's stack with every call taken by the SDK's own path (the fast path's reference)."""
