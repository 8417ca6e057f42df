"""The command-line vocabulary ``finmcp-server``, ``finmcp-proxy`` and ``finmcp-eval`` share.

One thing, one flag, everywhere (docs/architecture.md has the glossary):

============================  =====================================================================
``--bench NAME_OR_FILE``      a shipped benchmark (``finmcp-sim``) or a references file
``--recordings FILE``         a recordings file (SQLite): read by the server, written by bake/import
                              and by the proxy's record mode
``--db STORE``                a trace store written by the proxy
``--llm-url`` / ``--llm-model``  an OpenAI-compatible endpoint (agent, judge and synthesis alike),
                              with ``--llm-key-env``, ``--llm-timeout`` and ``--llm-retries``
``--host`` / ``--port``       where a server or proxy listens (with ``--token``, ``--max-body``,
                              ``--allow-host``, ``--allow-origin``, ``--cors-origin``, ``--log-level``)
``--output FILE``             the one file a command writes (an export, chains, a graph)
``--report-dir DIR``          the folder ``finmcp-eval score`` / ``run`` write report.{json,md,html} to
``--out-dir DIR``             the working folder a command fills (``demo``, ``synth build``)
============================  =====================================================================
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Protocol

from finmcp.recordings.plumbing.listener import DEFAULT_MAX_BODY, cors_origin

DISTRIBUTION = "finmcp-kit"
"""The name finmcp installs under (``pip install finmcp-kit``); its version lives in pyproject.toml only."""
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
TRACE_STORE_HELP = "trace store written by finmcp-proxy (SQLite file)"
BENCH_HELP = "benchmark: a shipped name (finmcp-sim) or a references file"


def installed_version() -> str:
    """finmcp's version, as installed (pyproject.toml's, read from the distribution's metadata)."""
    from importlib import metadata

    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # a checkout on sys.path without pip install
        return "unknown (not installed: pip install -e .)"


class _VersionAction(argparse.Action):
    """``--version``: print ``PROG VERSION`` on stdout, as argparse's own action does, and exit 0 (the
    metadata is read only when asked)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(f"{parser.prog} {installed_version()}", file=sys.stdout, flush=True)
        parser.exit()


def add_version(parser: argparse.ArgumentParser) -> None:
    """``--version`` on a program's top-level parser."""
    parser.add_argument("--version", action=_VersionAction, help="print the version and exit")


class OptionTarget(Protocol):
    """An argument parser or an argument group."""

    def add_argument(self, *name_or_flags: str, **kwargs: Any) -> argparse.Action: ...

    def add_mutually_exclusive_group(self, *, required: bool = False) -> Any: ...


def add_option(parser: OptionTarget, name: str, **kwargs: Any) -> argparse.Action:
    """Add ``name`` with ``kwargs`` (``parser.add_argument``, kept as the one entry point of the vocabulary)."""
    return parser.add_argument(name, **kwargs)


def add_bench(parser: OptionTarget, *, help: str = BENCH_HELP, **kwargs: Any) -> argparse.Action:
    """``--bench NAME_OR_FILE``: a shipped benchmark or a references file."""
    return add_option(parser, "--bench", metavar="NAME_OR_FILE", help=help, **kwargs)


def add_recordings(parser: OptionTarget, *, help: str, **kwargs: Any) -> argparse.Action:
    """``--recordings FILE``: a recordings file (what it is used for goes in ``help``)."""
    return add_option(parser, "--recordings", metavar="FILE", help=help, **kwargs)


def add_trace_store(parser: OptionTarget, *, help: str = TRACE_STORE_HELP, **kwargs: Any) -> argparse.Action:
    """``--db STORE``: a trace store."""
    return add_option(parser, "--db", metavar="STORE", help=help, **kwargs)


def add_llm_endpoint(
    parser: OptionTarget,
    *,
    purpose: str,
    model_default: str | None = None,
    timeout: float = 60.0,
    retries: int = 2,
) -> None:
    """``--llm-url``, ``--llm-model``, ``--llm-key-env``, ``--llm-timeout``, ``--llm-retries``."""
    add_option(
        parser,
        "--llm-url",
        metavar="URL",
        help=f"OpenAI-compatible base URL for {purpose}, e.g. http://127.0.0.1:8000/v1",
    )
    model_help = f"model name for {purpose}" + (f" (default {model_default})" if model_default else "")
    add_option(parser, "--llm-model", metavar="NAME", default=model_default, help=model_help)
    add_option(
        parser,
        "--llm-key-env",
        metavar="VAR",
        default=DEFAULT_KEY_ENV,
        help=f"environment variable holding the API key (default {DEFAULT_KEY_ENV}; never stored)",
    )
    parser.add_argument(
        "--llm-timeout",
        type=float,
        default=timeout,
        metavar="S",
        help=f"seconds per request (default {timeout:g})",
    )
    parser.add_argument(
        "--llm-retries",
        type=int,
        default=retries,
        metavar="N",
        help=f"retries per request (default {retries})",
    )


def add_listener_options(
    parser: OptionTarget,
    *,
    default_port: int,
    token_help: str,
    token_default: str | None = None,
    cors: bool = False,
) -> None:
    """Where and for whom a server or proxy listens: ``--host``, ``--port``, ``--token``, ``--max-body``,
    ``--allow-host``, ``--allow-origin`` and (``cors``) ``--cors-origin`` (the policy itself is
    :mod:`recordings.plumbing.listener`)."""
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=int, default=default_port, help=f"port (default {default_port}; 0 = any free)"
    )
    parser.add_argument("--token", default=token_default, help=token_help)
    parser.add_argument(
        "--max-body", type=int, default=DEFAULT_MAX_BODY, metavar="BYTES", help="request body limit"
    )
    parser.add_argument(
        "--allow-host", action="append", default=[], metavar="HOST", help="extra allowed Host name"
    )
    parser.add_argument(
        "--allow-origin", action="append", default=[], metavar="ORIGIN", help="extra allowed Origin"
    )
    if cors:
        parser.add_argument(
            "--cors-origin",
            action="append",
            default=[],
            type=_cors_origin,
            metavar="ORIGIN",
            help="let web pages from ORIGIN (scheme://host[:port]) call this listener: CORS preflights "
            "answered, MCP headers exposed (repeatable; off by default)",
        )


def _cors_origin(value: str) -> str:
    try:
        return cors_origin(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


LOG_LEVELS = ("debug", "info", "warning", "error")


def add_log_level(parser: OptionTarget) -> None:
    """``--log-level`` (default warning)."""
    parser.add_argument(
        "--log-level", default="warning", type=str.lower, choices=LOG_LEVELS, help="default warning"
    )
