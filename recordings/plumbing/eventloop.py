"""Which event loop runs the proxy and the server: uvloop when installed (the default), else asyncio's.

uvloop (libuv, in C) roughly halves the cost of the proxy's socket and scheduling work and cuts the
server's per-call cost too; measured in ``docs/proxy.md`` and ``docs/server.md``. It is a dependency
on Linux and macOS; the proxy's ``--loop asyncio`` opts out, and platforms without it fall back to
asyncio silently under ``auto``.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, TypeVar

# asyncio is imported where a loop runs: a command line's parser reads LOOPS and nothing else

T = TypeVar("T")
LOOPS = ("auto", "uvloop", "asyncio")


def run(main: Coroutine[Any, Any, T], loop: str = "auto") -> T:
    """Run ``main`` to completion on the chosen loop and return its result (``loop_name`` says which)."""
    if loop not in LOOPS:
        raise ValueError(f"unknown event loop {loop!r}; expected one of {', '.join(LOOPS)}")
    import asyncio

    if loop != "asyncio":
        try:
            import uvloop
        except ImportError:
            if loop == "uvloop":
                main.close()
                raise RuntimeError("--loop uvloop: the uvloop package is not installed") from None
        else:
            with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
                return runner.run(main)
    return asyncio.run(main)


def loop_name() -> str:
    """The running loop's kind, for the ready line and /healthz."""
    import asyncio

    module = type(asyncio.get_running_loop()).__module__
    return "uvloop" if module.startswith("uvloop") else "asyncio"
