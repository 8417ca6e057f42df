"""Which event loop runs the proxy and the server: uvloop when installed (the default), else asyncio's.

uvloop (libuv, in C) roughly halves the cost of the proxy's socket and scheduling work and cuts the
server's per-call cost too; measured in ``docs/proxy.md`` and ``docs/server.md``. It is a dependency
on Linux and macOS; the proxy's ``--loop asyncio`` opts out, and platforms without it fall back to
asyncio silently under ``auto``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

LOOPS = ("auto", "uvloop", "asyncio")


def run(main: Coroutine[Any, Any, None], loop: str = "auto") -> str:
    """Run ``main`` to completion on the chosen loop; returns the loop used (``uvloop`` | ``asyncio``)."""
    if loop not in LOOPS:
        raise ValueError(f"unknown event loop {loop!r}; expected one of {', '.join(LOOPS)}")
    if loop != "asyncio":
        try:
            import uvloop
        except ImportError:
            if loop == "uvloop":
                main.close()
                raise RuntimeError("--loop uvloop: the uvloop package is not installed") from None
        else:
            with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
                runner.run(main)
            return "uvloop"
    asyncio.run(main)
    return "asyncio"


def loop_name() -> str:
    """The running loop's kind, for the ready line and /healthz."""
    module = type(asyncio.get_running_loop()).__module__
    return "uvloop" if module.startswith("uvloop") else "asyncio"
