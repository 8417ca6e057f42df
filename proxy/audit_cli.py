"""The ``finmcp-proxy audit`` flags (a light module: ``--help`` loads no MCP client)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from finmcp.proxy.drift.severity import DEFAULT_FAIL_ON, FAIL_ON_CHOICES
from finmcp.recordings.plumbing.flags import add_trace_store

AUDIT_DESCRIPTION = """\
Drift audit: re-issue recorded calls against a live MCP server and compare the tool definitions
and the answers; each finding is classed breaks-replay, changes-references or cosmetic.

recorded side: --db TRACE --run RUN [--sample S]  (its logged calls and tools/list answers)
               or --recording FILE                (a recordings file's responses and declaration)
live side:     --against URL (Streamable HTTP; --upstream-ca, --upstream-header as the proxy's)
               --against-cmd "cmd args" | --against-cmd -- cmd args  (stdio, the caller's environment)
               --against RECORDINGS  (served by a stdio finmcp-server --replay sequence --miss strict)

Only calls of tools annotated readOnlyHint are re-issued unless --include-acting. Answers are
compared as JSON values (numbers by value, lists by element, objects by key, a text block holding
JSON parsed), after --ignore PATH (content[*].text.datetime; [*] any index, * any key),
--mask REGEX and --volatile (ISO timestamps, UUIDs).

exit status: 0 no finding at or above --fail-on, 1 findings, 2 usage error.
"""


def add_audit_arguments(s: argparse.ArgumentParser, header: Callable[[str], tuple[bytes, bytes]]) -> None:
    """The audit subcommand's flags; ``header`` parses an ``--upstream-header`` (the proxy's own)."""
    add_trace_store(s, help="trace store to read: a SQLite file or a postgresql:// URL")
    s.add_argument("--run", help="the run whose logged calls are audited (with --db)")
    s.add_argument("--sample", help="only this sample's calls")
    s.add_argument("--recording", metavar="FILE", help="audit a recordings file's responses instead of a run")
    against = s.add_mutually_exclusive_group(required=True)
    against.add_argument(
        "--against",
        metavar="URL|FILE",
        help="Streamable HTTP endpoint to call, or a recordings file (served by a stdio finmcp-server "
        "with --replay sequence --miss strict)",
    )
    against.add_argument(
        "--against-cmd",
        metavar="COMMAND",
        help='a stdio MCP server to launch (with the caller\'s environment) and call: "cmd args...", '
        "or last: --against-cmd -- cmd args...",
    )
    s.add_argument(
        "--recordings-inventory",
        metavar="NAME",
        help="with a recordings file: inventory the recordings are under",
    )
    s.add_argument(
        "--upstream-header",
        action="append",
        type=header,
        default=[],
        metavar="'NAME: VALUE'",
        help="header sent with every request to --against URL (repeatable; $VAR read from the environment)",
    )
    s.add_argument(
        "--upstream-ca", metavar="FILE", help="trust these PEM CA certificates for an https:// target"
    )
    s.add_argument(
        "--era", default="auto", choices=("auto", "handshake", "stateless"), help="client protocol era"
    )
    s.add_argument(
        "--tool-baseline",
        metavar="FILE",
        help="also list the live tools that differ from this baseline (finmcp-proxy --tool-baseline's file)",
    )
    s.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="PATH",
        help="leave this path out on both sides (repeatable)",
    )
    s.add_argument(
        "--mask",
        action="append",
        default=[],
        metavar="REGEX",
        help="mask matching substrings on both sides (repeatable)",
    )
    s.add_argument("--volatile", action="store_true", help="mask ISO 8601 timestamps and UUIDs")
    s.add_argument(
        "--include-acting",
        action="store_true",
        help="also re-issue calls of tools not annotated readOnlyHint",
    )
    s.add_argument(
        "--fail-on",
        choices=FAIL_ON_CHOICES,
        default=DEFAULT_FAIL_ON,
        help=f"exit 1 when a finding is at or above this severity (default {DEFAULT_FAIL_ON})",
    )
    s.add_argument(
        "--json",
        nargs="?",
        const="-",
        metavar="FILE",
        help="write the JSON report to FILE; without FILE (or -) print it instead of the text report",
    )
    s.add_argument("--html", metavar="FILE", help="write the report as a self-contained HTML page")
    s.add_argument("--timeout", type=float, default=60.0)
