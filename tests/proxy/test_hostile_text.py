"""What a hostile MCP server and client put in the trace reaches no terminal or spreadsheet raw (issue 30, items 1-2).

A real ``finmcp-proxy`` records calls between a hostile client (a run tag, sample tag, client name
and tool names made of escape sequences or spreadsheet formulas) and :class:`HostileUpstream`, whose
tool output clears the screen, sets the window title, overwrites a line and plants an OSC 8 link,
and whose session id is an ``=HYPERLINK(...)`` formula with an 8-bit CSI. Then ``finmcp-proxy
sessions``, ``show``, ``export`` (to stdout) and ``audit`` (the replay against the same upstream)
run as subprocesses: their stdout holds no control character but the newlines of its layout, and
shows each one as an escape instead. The CSV export, to stdout or a file, starts no cell with a
formula character (OWASP: a leading ``'``), while a negative number stays a number.
"""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from typing import Any
from urllib.parse import quote

import httpx2
import pytest

from finmcp.recordings.schema import CALLS_COLUMNS
from tests.support.hostile_upstream import (
    BIDI,
    CLEAR,
    HOSTILE_TOOL,
    TITLE,
    HostileUpstream,
)
from tests.support.processes import Children
from tests.support.rpc import HANDSHAKE, JSON_HEADERS, initialize
from tests.support.traces import wait_calls

RUN = f"run{CLEAR}{TITLE}"
SAMPLE = "s\r\x1b[K1"
CLIENT = "cli\x1b]8;;http://127.0.0.1:9/\x1b\\\u202e"
SESSION = '=HYPERLINK("http://127.0.0.1:9/x","click")\x9b2J'
FORMULA_TOOLS = ("=2+5", '=HYPERLINK("http://127.0.0.1:9/y","tool")', "@SUM(1+1)", "+2+5", "-2+5")
CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
"""Any control, bidi or separator character but the newline (layout)."""


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``(db, upstream)``: a run of five tool calls (and one with a negative id), the upstream still up."""
    db = tmp_path_factory.mktemp("hostile") / "runs.sqlite"
    with HostileUpstream(session_id=SESSION) as upstream:
        with Children() as children:
            proxy = children.proxy(["--upstream", upstream.url, "--db", str(db)])
            url = f"{proxy.base}/r/{quote(RUN, safe='')}/s/{quote(SAMPLE, safe='')}/t/0/mcp"
            with httpx2.Client(timeout=10) as http:
                answer = http.post(
                    url, content=json.dumps(initialize(1, client=CLIENT)), headers=JSON_HEADERS
                )
                assert answer.status_code == 200, answer.text
                headers: dict[str, Any] = {
                    **JSON_HEADERS,
                    "MCP-Protocol-Version": HANDSHAKE,
                    "Mcp-Session-Id": SESSION.encode("latin-1"),
                }
                note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
                assert http.post(url, content=json.dumps(note), headers=headers).status_code in (200, 202)
                for rid, tool in [(2, HOSTILE_TOOL), *enumerate(FORMULA_TOOLS, start=3), (-1, "neg")]:
                    call = {
                        "jsonrpc": "2.0",
                        "id": rid,
                        "method": "tools/call",
                        "params": {"name": tool, "arguments": {"q": CLEAR}},
                    }
                    answer = http.post(url, content=json.dumps(call), headers=headers)
                    assert answer.status_code == 200 and "result" in answer.json(), answer.text
            wait_calls(db, RUN, 2 + len(FORMULA_TOOLS), settled=True)
        yield db, upstream


def _cli(*args: str) -> tuple[int, str]:
    """``finmcp-proxy ARGS`` as a subprocess: exit code and stdout (strict UTF-8)."""
    done = subprocess.run(
        [sys.executable, "-m", "finmcp.proxy", *args], capture_output=True, timeout=120, check=False
    )
    return done.returncode, done.stdout.decode("utf-8")


def _no_raw_controls(text: str) -> None:
    found = sorted({f"U+{ord(c):04X}" for c in CONTROL.findall(text)})
    assert not found, f"raw control characters reached stdout: {found}\n{text!r}"


def test_sessions_shows_hostile_tags_and_client_names_escaped(hostile):
    db, _ = hostile
    code, out = _cli("sessions", "--db", str(db))
    assert code == 0
    _no_raw_controls(out)
    assert "run\\x1b[2J\\x1b]0;pwned\\x07" in out
    assert "cli\\x1b]8;;http://127.0.0.1:9/\\x1b\\\\u202e" in out
    assert '=HYPERLINK("http://127.0.0.1:9/x","click")\\x9b2J' in out


@pytest.mark.parametrize("full", [False, True], ids=["short", "full"])
def test_show_prints_tool_names_and_outputs_with_controls_visible(hostile, full):
    db, _ = hostile
    code, out = _cli("show", "--db", str(db), "--run", RUN, *(["--full"] if full else []))
    assert code == 0
    _no_raw_controls(out)
    assert "sample s\\r\\x1b[K1" in out
    assert "Get\\x1b[2JQuote\\r\\x1b[K\\x1b]0;t\\x07" in out
    assert "ok\\x1b[2J\\x1b]0;pwned\\x07\\r\\x1b[Kforged line" in out
    if full:
        assert "\\x1b]8;;http://127.0.0.1:9/x\\x1b\\click me" in out and "\\x9b2J\\u202eevil\\x7fend" in out


@pytest.mark.parametrize("fmt", ["jsonl", "finmcp", "fintoolbench", "otlp", "har", "csv"])
def test_export_to_stdout_holds_no_raw_control(hostile, fmt):
    db, _ = hostile
    code, out = _cli("export", "--db", str(db), "--run", RUN, "--format", fmt)
    assert code == 0
    if fmt == "csv":
        out = out.replace("\r\n", "\n")  # RFC 4180 line ends
    _no_raw_controls(out)


def test_json_exports_keep_the_exact_values(hostile, tmp_path):
    """JSON escapes are lossless: the file decodes to the tool output the upstream sent."""
    db, _ = hostile
    out = tmp_path / "run.jsonl"
    code, _ = _cli("export", "--db", str(db), "--run", RUN, "--format", "jsonl", "--output", str(out))
    assert code == 0
    _no_raw_controls(out.read_text("utf-8"))
    record = json.loads(out.read_text("utf-8").splitlines()[0])
    calls = [c for group in record["turns"][0]["calls"] for c in group]
    hostile_call = next(c for c in calls if c["tool"] == HOSTILE_TOOL)
    assert BIDI in hostile_call["output"] and "\x9b2J" in hostile_call["output"]
    assert record["sample_id"] == SAMPLE and record["run_id"] == RUN


def test_audit_replay_prints_tool_names_and_diffs_escaped(hostile):
    db, _ = hostile
    with HostileUpstream() as upstream:  # a session id the SDK client takes (plain ASCII)
        code, out = _cli(
            "audit", "--db", str(db), "--run", RUN, "--include-acting", "--against", upstream.url
        )
    assert code == 1, out  # the upstream counts its calls: every answer differs
    _no_raw_controls(out)
    assert "different" in out and "Get\\x1b[2JQuote" in out and "\\u009b2J\\u202eevil" in out  # JSON escapes


def _csv_rows(text: str) -> list[dict[str, str]]:
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert rows[0] == list(CALLS_COLUMNS)
    return [dict(zip(rows[0], row, strict=True)) for row in rows[1:]]


@pytest.mark.parametrize("where", ["stdout", "file"])
def test_csv_cells_never_start_a_formula(hostile, tmp_path, where):
    db, _ = hostile
    args = ["export", "--db", str(db), "--run", RUN, "--format", "csv"]
    if where == "file":
        path = tmp_path / "calls.csv"
        code, _ = _cli(*args, "--output", str(path))
        text = path.read_bytes().decode("utf-8")
    else:
        code, text = _cli(*args)
    assert code == 0
    rows = _csv_rows(text)
    for row in rows:
        for name, cell in row.items():
            assert not cell or cell[0] not in "=+-@\t\r" or re.fullmatch(r"-?\d+(\.\d+)?", cell), (name, cell)
    tools = {row["tool"] for row in rows}
    assert {"'=2+5", '\'=HYPERLINK("http://127.0.0.1:9/y","tool")', "'@SUM(1+1)", "'+2+5", "'-2+5"} <= tools
    assert {row["session_key"] for row in rows} == {'\'=HYPERLINK("http://127.0.0.1:9/x","click")\\x9b2J'}
    negative = next(row for row in rows if row["tool"] == "neg")
    assert negative["jsonrpc_id"] == "-1"  # a number stays a number
    assert float(negative["latency_ms"]) > 0


@pytest.mark.parametrize("fmt", ["otlp-proto", "parquet"])
def test_binary_exports_are_not_written_to_a_terminal(hostile, fmt):
    """Their bytes are the exact text (ESC and all): on a terminal (a pty here) the export refuses."""
    import os
    import pty

    db, _ = hostile
    controller, terminal = pty.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "finmcp.proxy", "export", "--db", str(db), "--run", RUN, "--format", fmt],
            stdout=terminal,
            stderr=subprocess.PIPE,
            timeout=120,
            check=False,
        )
        os.close(terminal)
        shown = b""
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # EIO: the terminal side is closed and drained
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(controller)
    assert done.returncode == 2 and b"\x1b" not in shown
    assert f"--format {fmt} is binary: not written to a terminal" in done.stderr.decode()
