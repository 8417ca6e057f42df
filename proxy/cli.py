"""Command line of ``finmcp-proxy``.

finmcp-proxy --upstream URL | --upstream-cmd "cmd args" | --upstream-sse URL
             [--host 127.0.0.1 --port 8766] [--transport http|stdio] --db runs.sqlite [--recordings rec.sqlite]
finmcp-proxy --transport stdio --db runs.sqlite [options] --upstream-cmd -- cmd args...
    (everything after ``--upstream-cmd --`` is the command, unquoted: the form other wrappers use)
finmcp-proxy sessions --db runs.sqlite [--run R]
finmcp-proxy show --db runs.sqlite --run R [--sample S]
finmcp-proxy export --db runs.sqlite --run R --format jsonl|finmcp|fintoolbench|otlp|otlp-proto|har|csv|parquet [--output FILE]
    (the file FinMCP-Bench's official evaluation.py reads: finmcp-eval export --format finmcp --bench ...)
finmcp-proxy audit (--db runs.sqlite --run R [--sample S] | --recording FILE)
             --against URL|RECORDINGS | --against-cmd "cmd args" [--ignore PATH] [--mask RE] [--volatile]
             [--include-acting] [--fail-on SEVERITY] [--json [FILE]] [--html FILE]
    (or, last: --against-cmd -- cmd args...)
finmcp-proxy flush --db local.sqlite --ship-to postgresql://... [--timeout S]
    (ship what a stopped proxy left in its outbox; exits 0 when nothing is left)

With --ship-to postgresql://... the serving proxy's --db file is also an outbox that a shipper
drains to PostgreSQL (proxy/shipper.py, docs/proxy.md "Shipping to PostgreSQL").

The parsers are built from light modules only (``finmcp-proxy --help`` loads no serving machinery:
tests/reliability/test_help_is_light.py); each command imports what it runs.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import shlex
import sys
from typing import Any

from finmcp.proxy.audit_cli import AUDIT_DESCRIPTION, add_audit_arguments
from finmcp.proxy.defaults import (
    DEFAULT_BATCH_ROWS,
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_HEAD_TIMEOUT,
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_INTERVAL,
    DEFAULT_MAX_ANSWER,
    DEFAULT_MAX_BUFFERED,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_MAX_STREAM_MESSAGES,
    DEFAULT_PORT,
)
from finmcp.proxy.tags import TagError, Tags
from finmcp.recordings.plumbing.eventloop import LOOPS
from finmcp.recordings.plumbing.flags import (
    add_listener_options,
    add_log_level,
    add_option,
    add_recordings,
    add_trace_store,
    add_version,
)
from finmcp.recordings.plumbing.options import options_from
from finmcp.recordings.plumbing.pipes import quiet_on_broken_pipe
from finmcp.recordings.plumbing.tls import TlsConfigError, add_tls_options, check_tls_files

SUMMARIES = {
    "serve": "(the default) proxy an MCP server, logging every message to --db",
    "sessions": "list the runs and sessions of a trace store",
    "show": "a run's (or one sample's) calls in parallel groups",
    "export": "write a run's calls (jsonl, finmcp, otlp, har, csv, parquet, ...)",
    "audit": "drift audit: re-issue recorded calls against a live server, compare definitions and answers",
    "flush": "ship what a stopped proxy left in its outbox to PostgreSQL",
}
"""Each command and its one-line summary (``finmcp-proxy --help`` lists them; each has ``--help``)."""
COMMANDS = tuple(SUMMARIES)
EXPORT_FORMATS = ("jsonl", "finmcp", "fintoolbench", "otlp", "otlp-proto", "har", "csv", "parquet")
DESCRIPTION = "\n".join(
    [
        "Transparent logging proxy for MCP servers: every message between an MCP client",
        "and the upstream server is stored in a trace store (--db), tagged by run,",
        "sample, turn and trial.",
        "",
        "commands (finmcp-proxy COMMAND --help shows a command's options):",
        *(f"  {name:<9} {summary}" for name, summary in SUMMARIES.items()),
    ]
)
EPILOG = f"""\
tags (HTTP side; docs/proxy.md, "Point your agent at the proxy"):
  path      /r/RUN/s/SAMPLE/t/TURN/mcp, every /LETTER/VALUE pair optional:
              /r/gpt4o-a/s/201/t/0/mcp   run gpt4o-a, sample 201, turn 0
              /r/R/s/S/k/2/t/0/mcp       /k/N: trial N of a repeated sample
              /r/R/mcp, /mcp             partly tagged, untagged
            after the tags, a path other than /mcp is forwarded as is
            (/r/R/fintool760/mcp reaches the upstream's /fintool760/mcp)
  headers   X-Finmcp-Run, X-Finmcp-Sample, X-Finmcp-Turn, X-Finmcp-Trial tag
            as the path does; a header overrides the path; none is forwarded
            X-Finmcp-Proxy-Token: TOKEN, with --token, instead of
            Authorization: Bearer TOKEN (not forwarded)
  defaults  --run, --sample, --turn, --trial tag what nothing else tags

exit codes: 0 stopped (SIGINT/SIGTERM; stdio: stdin closed); 2 bad usage, a port
  in use, or (stdio) an upstream that could not be started; 1 (stdio) the
  upstream went away before stdin closed

examples:
  finmcp-proxy --upstream http://127.0.0.1:8765/mcp --db runs.sqlite
      listens on 127.0.0.1:{DEFAULT_PORT}; clients use a tagged URL such as
      http://127.0.0.1:{DEFAULT_PORT}/r/myrun/s/201/t/0/mcp
  finmcp-proxy --transport stdio --db runs.sqlite \\
      --upstream-cmd -- finmcp-server --transport stdio
      what an MCP host launches: stdio on both sides
  finmcp-proxy sessions --db runs.sqlite
  finmcp-proxy show --db runs.sqlite --run myrun --sample 201
  finmcp-proxy export --db runs.sqlite --run myrun --format otlp \\
      --output run.otlp.json
  finmcp-proxy audit --db runs.sqlite --run myrun \\
      --against http://127.0.0.1:8765/mcp
"""
COMMAND_FLAGS = ("--upstream-cmd", "--against-cmd")


def command_after_dashes(argv: list[str]) -> list[str]:
    """``argv`` with ``FLAG -- CMD ARGS...`` (the rest of the line) as ``FLAG "CMD ARGS..."`` for argparse.

    ``FLAG`` is ``--upstream-cmd`` or ``--against-cmd``; the words after ``--`` are joined with shell
    quoting, so the command the proxy splits again is exactly those words. Raises :class:`ValueError`
    when nothing follows ``--``.
    """
    for index, arg in enumerate(argv[:-1]):
        if arg in COMMAND_FLAGS and argv[index + 1] == "--":
            command = argv[index + 2 :]
            if not command:
                raise ValueError(f"{arg} --: expected the command after '--'")
            return [*argv[:index], arg, shlex.join(command)]
    return argv


_ENV_REF = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


def _header_of(flag: str, value: str) -> tuple[bytes, bytes]:
    """``Name: value`` with ``$NAME`` / ``${NAME}`` taken from the environment (``$$`` is a ``$``).

    The value is a secret as often as not, so no error quotes it: only the header name and the
    variable's name are shown.
    """
    name, sep, content = value.partition(":")
    name = name.strip()
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"{flag} {name or value[:20]!r}...: expected 'Name: value'")
    if any(c in name for c in " \t\r\n") or any(c in content for c in "\r\n"):
        raise argparse.ArgumentTypeError(f"{flag} {name!r}: line breaks or spaces in a header name")

    def expand(match: re.Match[str]) -> str:
        variable = match.group(1) or match.group(2)
        if variable not in os.environ:
            raise argparse.ArgumentTypeError(f"{flag} {name!r}: environment variable ${variable} is not set")
        return os.environ[variable]

    parts = content.strip().split("$$")
    expanded = "$".join(_ENV_REF.sub(expand, part) for part in parts)
    try:
        return name.encode("latin-1"), expanded.encode("latin-1")
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError(
            f"{flag} {name!r}: the value must be Latin-1 text (HTTP header bytes)"
        ) from None


def _header(value: str) -> tuple[bytes, bytes]:
    """An ``--upstream-header`` value (see :func:`_header_of`)."""
    return _header_of("--upstream-header", value)


def _llm_header(value: str) -> tuple[bytes, bytes]:
    """An ``--llm-header`` value (see :func:`_header_of`)."""
    return _header_of("--llm-header", value)


def _otlp_header(value: str) -> tuple[bytes, bytes]:
    """An ``--otlp-header`` value (see :func:`_header_of`)."""
    return _header_of("--otlp-header", value)


def _otlp_endpoint(value: str) -> str:
    from finmcp.proxy.exports.live import check_endpoint

    try:
        return check_endpoint(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--otlp-endpoint {exc}") from None


def _ship_url(value: str) -> str:
    from finmcp.proxy.shipper import is_ship_target

    if not is_ship_target(value):
        raise argparse.ArgumentTypeError(
            f"--ship-to {value!r}: expected a postgresql:// URL (postgresql://user@host:port/database)"
        )
    return value


def _positive(kind: type[int] | type[float]) -> Any:
    def parse(value: str) -> int | float:
        try:
            number = kind(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
        if number <= 0:
            raise argparse.ArgumentTypeError(f"{value!r} must be greater than 0")
        return number

    return parse


PositiveFlag = tuple[str, type[int] | type[float], float, str, str]
"""A flag taking a positive number: (flag, int or float, default, metavar, what it sets)."""


def add_shipping(p: argparse.ArgumentParser, *, required: bool) -> None:
    """``--ship-to URL`` and the shipper's batch size and interval."""
    p.add_argument(
        "--ship-to",
        metavar="URL",
        type=_ship_url,
        required=required,
        help="also ship the --db file's rows to this PostgreSQL trace store (the file is the outbox)",
    )
    pace: list[PositiveFlag] = [
        ("--ship-batch", int, DEFAULT_BATCH_ROWS, "ROWS", "most outbox entries per shipment"),
        (
            "--ship-interval",
            float,
            DEFAULT_INTERVAL,
            "S",
            "seconds between shipments while the outbox is not full",
        ),
    ]
    _add_positive(p, pace)


def add_client_limits(p: argparse.ArgumentParser) -> None:
    """What one client or one answer may hold of the proxy (docs/reliability.md, "Limits")."""
    limits: list[PositiveFlag] = [
        (
            "--max-answer",
            int,
            DEFAULT_MAX_ANSWER,
            "BYTES",
            "bytes of one JSON upstream answer kept for the trace; a tools/call answer over it gets a 502, "
            "any other is forwarded whole and stored as its first BYTES, length and SHA-256",
        ),
        (
            "--head-timeout",
            float,
            DEFAULT_HEAD_TIMEOUT,
            "S",
            "seconds a client has to send a request head (408)",
        ),
        (
            "--body-timeout",
            float,
            DEFAULT_BODY_TIMEOUT,
            "S",
            "seconds a client has to send a request body (408)",
        ),
        (
            "--idle-timeout",
            float,
            DEFAULT_IDLE_TIMEOUT,
            "S",
            "seconds a kept-alive client connection may idle",
        ),
        (
            "--max-connections",
            int,
            DEFAULT_MAX_CONNECTIONS,
            "N",
            "client connections open at once (503 beyond)",
        ),
        (
            "--max-buffered",
            int,
            DEFAULT_MAX_BUFFERED,
            "BYTES",
            "request bytes buffered across all client connections (503 beyond)",
        ),
    ]
    _add_positive(p, limits)


def _add_positive(p: argparse.ArgumentParser, flags: list[PositiveFlag]) -> None:
    for flag, kind, default, metavar, what in flags:
        p.add_argument(
            flag, type=_positive(kind), default=default, metavar=metavar, help=f"{what} (default {default})"
        )


def build_serve_parser() -> argparse.ArgumentParser:
    """The parser of ``finmcp-proxy`` serving (HTTP listener or stdio); the subcommands have their own."""
    p = argparse.ArgumentParser(
        prog="finmcp-proxy",
        usage="%(prog)s [serve] --db STORE (--upstream URL | --upstream-cmd COMMAND\n"
        "                    | --upstream-sse URL) [options]\n"
        "       %(prog)s {sessions,show,export,audit,flush} ...",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_version(p)
    up = p.add_mutually_exclusive_group(required=True)
    up.add_argument(
        "--upstream", metavar="URL", help="Streamable HTTP upstream, e.g. http://127.0.0.1:8765/mcp"
    )
    up.add_argument(
        "--upstream-cmd",
        metavar="COMMAND",
        help='stdio upstream launched by the proxy: "cmd args..." (one quoted word), or last on the line: '
        "--upstream-cmd -- cmd args...",
    )
    up.add_argument("--upstream-sse", metavar="URL", help="legacy HTTP+SSE upstream, e.g. http://host/sse")
    add_listener_options(
        p,
        default_port=DEFAULT_PORT,
        token_default=os.environ.get("FINMCP_PROXY_TOKEN"),
        token_help="require this token (Authorization: Bearer or X-Finmcp-Proxy-Token; or set FINMCP_PROXY_TOKEN)",
        cors=True,
    )
    p.add_argument(
        "--transport", choices=("http", "stdio"), default="http", help="client side (default http)"
    )
    add_trace_store(p, required=True, help="trace store (SQLite file, created if missing)")
    add_shipping(p, required=False)
    add_recordings(
        p,
        help="record mode: also store each successful upstream answer in this recordings file",
    )
    add_option(
        p,
        "--recordings-inventory",
        metavar="NAME",
        help="inventory name recordings are stored under (default: NAME of an upstream .../NAME/mcp, else finmcp65)",
    )
    p.add_argument(
        "--group-gap-ms",
        type=float,
        default=30.0,
        help="a call within this many ms of the last answer joins its group (default 30; 0: never)",
    )
    p.add_argument(
        "--group-sequence",
        choices=("on", "off"),
        default="on",
        help="a call arriving after its client got an answer of the current group opens a new group (default on)",
    )
    p.add_argument(
        "--timeout", type=float, default=120.0, help="seconds without an upstream byte before failing"
    )
    add_client_limits(p)
    p.add_argument(
        "--max-event-bytes",
        type=_positive(int),
        default=DEFAULT_MAX_EVENT_BYTES,
        metavar="BYTES",
        help=f"largest SSE event forwarded; a longer one stops its stream with an error for its requests "
        f"(default {DEFAULT_MAX_EVENT_BYTES}, 64 MiB)",
    )
    p.add_argument(
        "--max-stream-messages",
        type=_positive(int),
        default=DEFAULT_MAX_STREAM_MESSAGES,
        metavar="N",
        help="most messages (progress, logs, ...) on one request's SSE stream; past it the stream stops "
        f"with an error for the requests still unanswered (default {DEFAULT_MAX_STREAM_MESSAGES})",
    )
    p.add_argument(
        "--upstream-header",
        action="append",
        type=_header,
        default=[],
        metavar="'NAME: VALUE'",
        help="header added to every upstream request (repeatable); $VAR and ${VAR} in VALUE are read "
        "from the environment at start (a missing one is an error), so keys stay out of command lines; "
        "the value is never stored or logged",
    )
    p.add_argument(
        "--upstream-ca",
        metavar="FILE",
        help="trust these PEM CA certificates for an https:// upstream instead of the system trust store",
    )
    add_tls_options(p)
    p.add_argument(
        "--llm-upstream",
        metavar="URL",
        help="open the model door: forward /v1/... requests (OpenAI Chat Completions and Responses, "
        "Anthropic Messages, any other /v1 path), tagged like MCP ones (/r/RUN/s/SAMPLE/t/TURN/v1/...), "
        'to URL + /v1/... and log each exchange (docs/proxy.md, "Model door"); TLS as --upstream-ca says',
    )
    p.add_argument(
        "--llm-header",
        action="append",
        type=_llm_header,
        default=[],
        metavar="'NAME: VALUE'",
        help="header added to every model request, replacing the agent's own of that name (repeatable; "
        "$VAR from the environment, as --upstream-header: the key is never stored)",
    )
    p.add_argument(
        "--otlp-endpoint",
        type=_otlp_endpoint,
        metavar="URL",
        help="also send each finished call live as an OpenTelemetry span (OTLP/HTTP JSON) to this "
        "traces URL, e.g. http://127.0.0.1:4318/v1/traces (off the proxy's path; proxy/exports/live.py)",
    )
    p.add_argument(
        "--otlp-header",
        action="append",
        type=_otlp_header,
        default=[],
        metavar="'NAME: VALUE'",
        help="header added to every OTLP request (repeatable; $VAR from the environment, as --upstream-header)",
    )
    p.add_argument(
        "--tool-baseline",
        metavar="FILE",
        help="tool-definition baseline (JSON, created on first contact): a tools/list answer whose tools "
        "differ from it is a WARNING, a trace note and /healthz tool_drift; never updated silently",
    )
    p.add_argument(
        "--tool-baseline-update",
        action="store_true",
        help="accept the upstream's current tool definitions into --tool-baseline (instead of warning)",
    )
    p.add_argument(
        "--fault-schedule",
        metavar="FILE",
        help="inject the faults of this schedule (JSON, docs/server.md) into tools/call: rpc_error, is_error, "
        "timeout, rate_limit are answered by the proxy (never forwarded); truncated, empty, wrong_values "
        "alter the upstream's answer (docs/proxy.md, Fault injection)",
    )
    p.add_argument("--run", help="default run tag (URL/header tags override it)")
    p.add_argument("--sample", help="default sample tag")
    p.add_argument("--turn", help="default turn tag (integer, stored as given)")
    p.add_argument("--trial", help="default trial number (integer)")
    p.add_argument(
        "--loop",
        choices=LOOPS,
        default="auto",
        help="event loop: uvloop when installed (auto, the default) or asyncio's own",
    )
    add_log_level(p)
    return p


RAW = argparse.RawDescriptionHelpFormatter
READ_STORE_HELP = "trace store to read: a SQLite file or a postgresql:// URL"


def build_inspect_parser() -> argparse.ArgumentParser:
    """The parser of the inspection subcommands: sessions, show, export, audit."""
    p = argparse.ArgumentParser(prog="finmcp-proxy", description=DESCRIPTION, formatter_class=RAW)
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sessions", help=SUMMARIES["sessions"], description=SUMMARIES["sessions"])
    add_trace_store(s, required=True, help=READ_STORE_HELP)
    s.add_argument("--run")
    s = sub.add_parser("show", help=SUMMARIES["show"], description=SUMMARIES["show"])
    add_trace_store(s, required=True, help=READ_STORE_HELP)
    s.add_argument("--run", required=True)
    s.add_argument("--sample")
    s.add_argument("--full", action="store_true", help="do not shorten arguments and outputs")
    s = sub.add_parser(
        "export",
        help=SUMMARIES["export"],
        description="Export a run's calls. --format finmcp writes predictions only ({id, messages_pred} "
        "of the samples with calls); the file FinMCP-Bench's official evaluation.py reads (every "
        "reference sample with its gold messages) is written by: finmcp-eval export --format finmcp "
        "--bench NAME_OR_FILE --db DB --run RUN",
    )
    add_trace_store(s, required=True, help=READ_STORE_HELP)
    s.add_argument("--run", required=True)
    s.add_argument(
        "--format",
        choices=EXPORT_FORMATS,
        default="jsonl",
        help="jsonl (finmcp-eval's own), finmcp (FinMCP-Bench predictions only; see above), "
        "fintoolbench (FinToolBench result lines), otlp (OpenTelemetry OTLP/JSON traces; otlp-proto: "
        "the same as protobuf, needs pip install 'finmcp-kit[otel]'), "
        "har (HTTP Archive 1.2 of the HTTP side), csv / parquet (the calls table; parquet needs "
        "pyarrow: pip install 'finmcp-kit[parquet]')",
    )
    s.add_argument("--output", dest="out", help="output file (default stdout)")
    s = sub.add_parser("audit", help=SUMMARIES["audit"], description=AUDIT_DESCRIPTION, formatter_class=RAW)
    add_audit_arguments(s, _header)
    s = sub.add_parser(
        "flush",
        help=SUMMARIES["flush"],
        description=SUMMARIES["flush"] + " (for a proxy that will not come back)",
    )
    add_trace_store(s, required=True, help="the outbox: a proxy's --db file")
    add_shipping(s, required=True)
    s.add_argument(
        "--timeout", type=_positive(float), default=60.0, help="give up after S seconds (default 60)"
    )
    add_log_level(s)
    return p


@quiet_on_broken_pipe
def main(argv: list[str] | None = None) -> int:
    """Entry point of ``finmcp-proxy``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        argv = command_after_dashes(argv)
    except ValueError as exc:
        print(f"finmcp-proxy: {exc}", file=sys.stderr)
        return 2
    if argv and argv[0] in COMMANDS[1:]:
        return _inspect(argv)
    if argv and argv[0] == "serve":
        argv = argv[1:]
    args = build_serve_parser().parse_args(argv)
    if _is_postgres(args.db):
        return 2
    logging.basicConfig(
        level=getattr(logging, args.log_level.upper(), logging.WARNING),
        stream=sys.stderr,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    try:
        defaults = Tags().merged(run=args.run, sample=args.sample, turn=args.turn, trial=args.trial)
    except TagError as exc:
        print(f"finmcp-proxy: {exc}", file=sys.stderr)
        return 2
    from finmcp.proxy.http_types import ClientLimits
    from finmcp.proxy.serve import ProxyConfig, main_serve

    host, port = args.host, args.port
    config = options_from(  # every other field is the flag of its name
        ProxyConfig,
        args,
        host=host,
        port=port,
        record_into=args.recordings,
        record_inventory=args.recordings_inventory,
        group_sequence=args.group_sequence == "on",
        allow_hosts=args.allow_host,
        allow_origins=args.allow_origin,
        cors_origins=args.cors_origin,
        upstream_headers=args.upstream_header,
        defaults=defaults,
        otlp_headers=args.otlp_header,
        llm_headers=args.llm_header,
        limits=options_from(ClientLimits, args),
    )
    from finmcp.proxy.upstream_http import Target
    from finmcp.proxy.upstream_tls import client_context

    try:
        check_tls_files(args.tls_cert, args.tls_key)
        tls = client_context(config.upstream_ca)
        for url in (config.upstream, config.upstream_sse, config.llm_upstream):
            if url:
                Target.parse(url, tls)
    except (ValueError, TlsConfigError) as exc:
        print(f"finmcp-proxy: {exc}", file=sys.stderr)
        return 2
    if config.tool_baseline_update and not config.tool_baseline:
        print("finmcp-proxy: --tool-baseline-update needs --tool-baseline FILE", file=sys.stderr)
        return 2
    if config.llm_upstream and config.transport != "http":
        print(
            "finmcp-proxy: --llm-upstream needs --transport http (the model door is on the listener)",
            file=sys.stderr,
        )
        return 2
    if config.fault_schedule and config.record_into:
        print(
            "finmcp-proxy: --fault-schedule with --recordings would record injected faults as the upstream's"
            " answers; record without the schedule",
            file=sys.stderr,
        )
        return 2
    if config.cors_origins and config.transport != "http":
        print("finmcp-proxy: --cors-origin needs --transport http (stdio has no listener)", file=sys.stderr)
        return 2
    if config.tls_cert and config.transport != "http":
        print(
            "finmcp-proxy: --tls-cert/--tls-key need --transport http (stdio has no listener)",
            file=sys.stderr,
        )
        return 2
    return main_serve(config)


def _is_postgres(db: str) -> bool:
    """A serving proxy's ``--db`` is a SQLite file: a PostgreSQL URL gets one line pointing to ``--ship-to``."""
    from finmcp.recordings.postgres.connection import is_postgres_url, redacted_url

    if not is_postgres_url(db):
        return False
    print(
        f"finmcp-proxy: --db {redacted_url(db)}: the proxy writes its trace to a SQLite file"
        " (--db runs.sqlite); to have it in PostgreSQL, add --ship-to with that URL"
        " (the file is the outbox a shipper empties into PostgreSQL)",
        file=sys.stderr,
    )
    return True


def _inspect(argv: list[str]) -> int:
    args = build_inspect_parser().parse_args(argv)
    from pathlib import Path

    from finmcp.recordings.errors import RecordingsError
    from finmcp.recordings.postgres.connection import is_postgres_url

    if args.db is not None and not is_postgres_url(args.db) and not Path(args.db).exists():
        print(f"finmcp-proxy {args.command}: trace store not found: {args.db}", file=sys.stderr)
        return 2
    try:
        return _run_inspect(args)
    except RecordingsError as exc:  # unreachable server, not a trace store (passwords redacted)
        print(f"finmcp-proxy {args.command}: error: {exc}", file=sys.stderr)
        return 2


def _run_inspect(args: argparse.Namespace) -> int:
    """The subcommand of ``args``, called with its typed options."""
    if args.command == "sessions":
        from finmcp.proxy.inspect import cmd_sessions

        return cmd_sessions(args.db, args.run)
    if args.command == "show":
        from finmcp.proxy.inspect import ShowOptions, cmd_show

        return cmd_show(options_from(ShowOptions, args))
    if args.command == "flush":
        from finmcp.proxy.flush import FlushOptions, cmd_flush

        return cmd_flush(options_from(FlushOptions, args))
    if args.command == "export":
        from finmcp.proxy.export import cmd_export

        return cmd_export(args.db, args.run, args.format, args.out)
    from finmcp.proxy.audit import AuditOptions, cmd_audit

    return cmd_audit(options_from(AuditOptions, args))
