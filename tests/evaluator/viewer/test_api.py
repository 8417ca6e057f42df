"""The viewer's JSON API over a crafted trace store, through the real ``finmcp-eval view`` process.

Keyset pages, filters, the live increment (``since`` + ``pending``), the listener policy (Host,
Origin, token), the page's assets (offline: nothing external) and the command's errors.
"""

from __future__ import annotations

import json
import sqlite3
import urllib.error
import urllib.request
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from finmcp.evaluator.cli import main
from finmcp.recordings.plumbing.launch import FinmcpProcess
from finmcp.recordings.store import RecordingStore
from tests.support.net import get_json

N_SAMPLES = 120


def _insert(
    con: sqlite3.Connection, run: str, sample: str, seq: int, tool: str, status: str = "ok", **kw: Any
) -> int:
    result = kw.get(
        "result",
        {
            "content": [{"type": "text", "text": json.dumps({"tool": tool})}],
            "isError": status == "tool_error",
        },
    )
    cur = con.execute(
        "INSERT INTO calls (run_id, sample_id, turn, seq, tool, arguments, result, status, t_req_ns, t_resp_ns,"
        " wall_time, latency_ms, call_group, group_source, trial) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,0)",
        (
            run,
            sample,
            0,
            seq,
            tool,
            json.dumps({"q": sample}),
            None if status == "pending" else json.dumps(result),
            status,
            1_000_000 * seq,
            None if status == "pending" else 1_000_000 * seq + 500_000,
            "2026-01-01T00:00:00Z",
            None if status == "pending" else 0.5,
            seq,
            "sequence",
        ),
    )
    return int(cur.lastrowid or 0)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("view-api") / "runs.sqlite"
    RecordingStore.open(path).close()
    with sqlite3.connect(path) as con:
        con.execute(
            "INSERT INTO runs (run_id, created, meta) VALUES ('r1', '2026-01-01', '{\"agent\": \"x\"}')"
        )
        for i in range(N_SAMPLES):
            sample = f"s{i:04d}"
            _insert(con, "r1", sample, 0, "SearchFunds")
            _insert(
                con,
                "r1",
                sample,
                1,
                "GetNav" if i % 3 else "Broken_Tool",
                "tool_error" if i % 10 == 0 else "ok",
            )
    return path


@pytest.fixture(scope="module")
def view(store: Path) -> Iterator[FinmcpProcess]:
    args = ["view", "--db", str(store), "--host", "127.0.0.1", "--port", "0"]
    with FinmcpProcess("finmcp-eval", args, timeout=60, module="finmcp.evaluator.cli") as process:
        yield process


def _status(url: str, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(urllib.request.Request(url, headers=headers or {}), timeout=5) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def test_ready_line_and_runs(view: FinmcpProcess) -> None:
    assert view.ready is not None and view.ready.program == "finmcp-eval"
    assert view.base.startswith("http://127.0.0.1:")
    data = get_json(view.endpoint("/api/runs"))
    assert [(r["run_id"], r["calls"], r["samples"], r["meta"]) for r in data["runs"]] == [
        ("r1", 2 * N_SAMPLES, N_SAMPLES, {"agent": "x"})
    ]
    assert data["cursor"] == 2 * N_SAMPLES and data["bench"] is None


def test_keyset_pages_cover_every_sample_once(view: FinmcpProcess) -> None:
    seen: list[str] = []
    after = ""
    pages = 0
    while True:
        page = get_json(view.endpoint(f"/api/runs/r1/samples?limit=50&after={after}"))
        seen += [s["sample_id"] for s in page["samples"]]
        pages += 1
        if page["next"] is None:
            break
        after = page["next"]
    assert pages == 3 and seen == [f"s{i:04d}" for i in range(N_SAMPLES)]
    first = get_json(view.endpoint("/api/runs/r1/samples?limit=1"))["samples"][0]
    assert (
        first["calls"] == 2
        and first["failed"] == 1
        and first["tools"] == {"Broken_Tool": 1, "SearchFunds": 1}
    )


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("status=tool_error", {i for i in range(N_SAMPLES) if i % 10 == 0}),
        ("failed=1", {i for i in range(N_SAMPLES) if i % 10 == 0}),
        ("tool=Broken_Tool", {i for i in range(N_SAMPLES) if i % 3 == 0}),
        ("q=broken_t", {i for i in range(N_SAMPLES) if i % 3 == 0}),  # a tool, case-insensitive, _ literal
        ("q=s001", set(range(10, 20))),  # a sample id substring
        ("q=s001&tool=Broken_Tool", {12, 15, 18}),
        ("status=pending", set()),
    ],
)
def test_filters(view: FinmcpProcess, query: str, expected: set[int]) -> None:
    got: list[str] = []
    after = ""
    while True:
        page = get_json(view.endpoint(f"/api/runs/r1/samples?limit=7&{query}&after={after}"))
        got += [s["sample_id"] for s in page["samples"]]
        if page["next"] is None:
            break
        after = page["next"]
    assert got == [f"s{i:04d}" for i in sorted(expected)]


def test_errors_are_clear(view: FinmcpProcess) -> None:
    assert _status(view.endpoint("/api/runs/nope/samples")) == (
        404,
        {"error": f"run 'nope' not found in {view.args[2]}"},
    )
    status, body = _status(view.endpoint("/api/runs/r1/samples?min_f1=0.5"))
    assert status == 400 and "--bench" in body["error"]
    status, body = _status(view.endpoint("/api/runs/r1/samples?limit=ten"))
    assert status == 400 and "limit" in body["error"]
    status, body = _status(view.endpoint("/api/runs/r1/samples/s0001/calls?pending=a,b"))
    assert status == 400 and "pending" in body["error"]


def test_listener_policy(view: FinmcpProcess) -> None:
    assert _status(view.endpoint("/api/runs"), {"Host": "evil.example"})[0] == 421
    assert _status(view.endpoint("/api/runs"), {"Origin": "http://evil.example"})[0] == 403
    assert _status(view.endpoint("/api/runs"), {"Origin": view.base})[0] == 200


def test_live_increment_since_and_pending(view: FinmcpProcess, store: Path) -> None:
    sample = get_json(view.endpoint("/api/runs/r1/samples/s0050"))
    assert [c["tool"] for c in sample["calls"]] == ["SearchFunds", "GetNav"]
    cursor = sample["cursor"]
    idle = get_json(view.endpoint(f"/api/runs/r1/samples/s0050/calls?since={cursor}"))
    assert idle == {"calls": [], "cursor": cursor}
    with sqlite3.connect(store) as con:
        new_id = _insert(con, "r1", "s0050", 2, "LateTool", "pending")
        _insert(con, "r1", "s0051", 2, "OtherSample")
    inc = get_json(view.endpoint(f"/api/runs/r1/samples/s0050/calls?since={cursor}"))
    assert [(c["id"], c["tool"], c["status"]) for c in inc["calls"]] == [(new_id, "LateTool", "pending")]
    assert inc["cursor"] == new_id + 1
    with sqlite3.connect(store) as con:
        con.execute(
            "UPDATE calls SET status = 'rpc_error', rpc_error = ?, t_resp_ns = t_req_ns + 10 WHERE id = ?",
            (json.dumps({"code": -32000, "message": "upstream went away"}), new_id),
        )
    done = get_json(view.endpoint(f"/api/runs/r1/samples/s0050/calls?since={inc['cursor']}&pending={new_id}"))
    assert [(c["id"], c["status"], c["error"]) for c in done["calls"]] == [
        (new_id, "rpc_error", "upstream went away")
    ]


def test_assets_are_local_and_safe(view: FinmcpProcess) -> None:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(view.endpoint("/runs/r1/samples/s0001"), timeout=5) as response:
        html = response.read().decode()
        csp = response.headers["content-security-policy"]
    assert "/static/app.js" in html and "default-src 'self'" in csp
    for name in ("index.html", "app.js", "app.css"):
        text = resources.files("finmcp.evaluator.viewer").joinpath("static", name).read_text("utf-8")
        assert "http://" not in text and "https://" not in text and "@import" not in text, name
        assert ".innerHTML" not in text, name  # store values go in as text only


def test_token(store: Path) -> None:
    args = ["view", "--db", str(store), "--token", "s3cret", "--host", "127.0.0.1", "--port", "0"]
    with FinmcpProcess("finmcp-eval", args, timeout=60, module="finmcp.evaluator.cli") as process:
        assert _status(process.endpoint("/api/runs"))[0] == 401
        assert _status(process.endpoint("/api/runs"), {"Authorization": "Bearer s3cret"})[0] == 200
        assert _status(process.endpoint("/api/runs?token=s3cret"))[0] == 200
        assert _status(process.endpoint("/api/runs"), {"Cookie": "finmcp_view_token=s3cret"})[0] == 200
        assert _status(process.endpoint("/api/runs"), {"Cookie": "finmcp_view_token=wrong"})[0] == 401
        assert process.health()["ok"] is True  # /healthz stays public


def test_command_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["view", "--db", str(tmp_path / "missing.sqlite")]) == 2
    assert "trace store not found" in capsys.readouterr().err
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.commit()
    assert main(["view", "--db", str(other)]) == 2
    assert "not a finmcp trace store" in capsys.readouterr().err
    assert main(["view", "--db", str(other), "--bench", "no-such-bench.jsonl"]) == 2
