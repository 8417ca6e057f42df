"""Command-line output into a closed pipe (``finmcp-server tools | head``) ends quietly."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import ParamSpec

P = ParamSpec("P")

BROKEN_PIPE_EXIT = 141
"""What a shell reports for a program killed by SIGPIPE (128 + 13); Python programs mimic it."""


def quiet_on_broken_pipe(main: Callable[P, int]) -> Callable[P, int]:
    """Wrap a CLI entry point: when its reader closes the pipe, exit 141 without a traceback.

    Standard output is pointed at ``/dev/null`` first, so the interpreter's final flush cannot raise
    again (the recipe in Python's ``signal`` documentation).
    """

    @functools.wraps(main)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> int:
        try:
            return main(*args, **kwargs)
        except BrokenPipeError:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            return BROKEN_PIPE_EXIT

    return wrapper
