"""Run fingerprints: every ``finmcp-eval run`` records what it was measured on, and ``compare`` and the
leaderboard flag a pair measured on different things.

Real runs (``run --spawn``: finmcp-server + finmcp-proxy on loopback) of the oracle on five samples:
two alike, one on another world seed, one on changed recordings, one on a references file instead of
the shipped benchmark. The fingerprint is in ``runs.meta`` and ``report.json``; ``compare`` of the
alike pair flags nothing, each other pair names what differs.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from finmcp.evaluator.benchmarks import load_records
from finmcp.evaluator.cli import main
from finmcp.evaluator.harness.scoring import leaderboard
from finmcp.evaluator.harness.setup import load_bench
from finmcp.evaluator.inputs.fingerprint import comparability
from finmcp.evaluator.reports.model import Report
from finmcp.recordings import RecordingStore, SqliteTraceStore
from finmcp.recordings.tool_fingerprint import tools_fingerprint

pytestmark = pytest.mark.slow  # five spawned server + proxy pairs


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("fingerprint")
    bench = load_bench("finmcp-sim", tmp / "bench", limit=5)
    ids = [r.id for r in bench.refs]
    samples = [arg for sid in ids for arg in ("--sample", sid)]
    assert bench.recordings is not None
    changed = tmp / "changed.recordings.sqlite"
    shutil.copy(bench.recordings, changed)
    with sqlite3.connect(changed) as con:
        con.execute("UPDATE responses SET content = '[]' WHERE id = (SELECT min(id) FROM responses)")
    refs_file = tmp / "refs.jsonl"
    refs_file.write_text("".join(json.dumps(r) + "\n" for r in load_records() if r["id"] in ids))
    db = tmp / "runs.sqlite"
    common = ["--agent", "oracle", "--spawn", "--db", str(db), "--no-progress", "--bootstrap", "20"]
    plans = {
        "a": ["--recordings", str(bench.recordings), "--report-dir", str(tmp / "report-a")],
        "b": ["--recordings", str(bench.recordings), "--report-dir", str(tmp / "report-b")],
        "seed": ["--recordings", str(bench.recordings), "--seed", "1"],
        "recordings": ["--recordings", str(changed)],
        "bench": [
            "--recordings",
            str(bench.recordings),
            "--bench",
            str(refs_file),
            "--inventory",
            "finmcp65",
        ],
    }
    for run, extra in plans.items():
        assert main(["run", "--run", run, *common, *samples, *extra]) == 0, run
    return {"db": db, "tmp": tmp, "bench": bench}


def meta(db: Path, run: str) -> dict[str, Any]:
    with SqliteTraceStore.open(db) as store:
        found = store.run_meta(run)
    assert isinstance(found, dict)
    return found["fingerprint"]


def compare(runs: dict[str, Any], a: str, b: str, name: str) -> tuple[dict[str, Any], str]:
    out = runs["tmp"] / name
    argv = ["compare", "--bench", "finmcp-sim", "--db", str(runs["db"]), "--run", a, "--run", b]
    assert main([*argv, "--report-dir", str(out), "--bootstrap", "20"]) == 0
    result = json.loads((out / "compare.json").read_text("utf-8"))
    return result, (out / "compare.md").read_text("utf-8")


def test_the_fingerprint_is_in_runs_meta_and_report_json(runs: dict[str, Any]) -> None:
    fingerprint = meta(runs["db"], "a")
    assert fingerprint["version"] == 1 and fingerprint["seed"] == 0
    assert fingerprint["tools"].startswith("sha256:") and fingerprint["recordings"].startswith("sha256:")
    with RecordingStore.open(runs["bench"].recordings) as store:
        assert fingerprint["recordings"] == store.content_digest()
    assert fingerprint["bench"]["name"] == "finmcp-sim" and len(fingerprint["bench"]["sha256"]) == 64
    assert fingerprint["finmcp"] and fingerprint["agent"] == {"kind": "oracle"}
    report = json.loads((runs["tmp"] / "report-a" / "report.json").read_text("utf-8"))
    assert report["fingerprint"] == fingerprint
    assert list(report)[-1] == "fingerprint"  # every earlier key where it was
    assert Report.from_dict(report).fingerprint == fingerprint


def test_identical_runs_are_not_flagged(runs: dict[str, Any]) -> None:
    assert meta(runs["db"], "a") == meta(runs["db"], "b")
    result, md = compare(runs, "a", "b", "cmp-ab")
    assert result["fingerprints"]["differ"] == [] and result["fingerprints"]["comparable"] is True
    assert "not comparable" not in md.lower()


@pytest.mark.parametrize(
    ("run", "differ"), [("seed", ["seed"]), ("recordings", ["recordings"]), ("bench", ["benchmark"])]
)
def test_runs_measured_on_different_things_are_flagged(
    runs: dict[str, Any], run: str, differ: list[str]
) -> None:
    result, md = compare(runs, "a", run, f"cmp-{run}")
    assert result["fingerprints"]["differ"] == differ and result["fingerprints"]["comparable"] is False
    assert f"Not comparable: {', '.join(differ)} differ." in md
    assert f"B - A (not comparable: {', '.join(differ)} differ)" in md  # the delta is shown, marked
    html = (runs["tmp"] / f"cmp-{run}" / "compare.html").read_text("utf-8")
    assert "not-comparable" in html


def test_the_leaderboard_flags_only_rows_measured_differently(runs: dict[str, Any]) -> None:
    report = Report.from_dict(json.loads((runs["tmp"] / "report-a" / "report.json").read_text("utf-8")))
    alike = report.model_copy(update={"fingerprint": dict(report.fingerprint or {})})
    unfingerprinted = report.model_copy(update={"fingerprint": None})
    plain = leaderboard([("oracle", unfingerprinted), ("again", unfingerprinted)])
    assert leaderboard([("oracle", report), ("again", alike)]) == plain  # unchanged when they agree
    other_seed = report.model_copy(update={"fingerprint": {**(report.fingerprint or {}), "seed": 1}})
    flagged = leaderboard([("oracle", report), ("again", other_seed)])
    assert "| again ⚠ |" in flagged and "again: not comparable with oracle: seed differ" in flagged


def test_comparability_ignores_what_one_side_does_not_know() -> None:
    tools = [{"name": "t", "inputSchema": {"type": "object"}}]
    a = {"tools": tools_fingerprint(tools), "seed": None, "recordings": "sha256:1"}
    b = {"tools": tools_fingerprint([*tools, {"name": "u"}]), "seed": 3, "recordings": "sha256:1"}
    assert comparability(a, b)["differ"] == ["tools"]
    assert comparability(a, None) == {"a": a, "b": None, "differ": [], "comparable": None}


def test_the_recordings_digest_ignores_storage_and_sees_answers(tmp_path: Path) -> None:
    path = tmp_path / "rec.sqlite"
    result = {"content": [{"type": "text", "text": "1"}]}
    with RecordingStore.open(path) as store:
        store.put_response("inv", "T", {"x": 1}, result, provenance="recorded:test")
        store.put_response("inv", "U", {"x": 2}, result, provenance="recorded:test")
        first = store.content_digest()
    with sqlite3.connect(path) as con:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        con.execute("VACUUM")
    other = tmp_path / "other.sqlite"
    with RecordingStore.open(other) as store:  # the same answers, written in another order, later
        store.put_response("inv", "U", {"x": 2}, result, provenance="imported:elsewhere")
        store.put_response("inv", "T", {"x": 1}, result, provenance="recorded:test")
        assert store.content_digest() == first
        store.put_response(
            "inv", "T", {"x": 1}, {"content": [{"type": "text", "text": "2"}]}, provenance="recorded:test"
        )
        assert store.content_digest() != first
    with RecordingStore.open(path) as store:
        assert store.content_digest() == first


def test_a_model_agent_records_its_model_and_decoding_settings() -> None:
    from finmcp.evaluator.harness.fingerprint import agent_fingerprint
    from finmcp.evaluator.harness.options import AgentOptions

    seen = agent_fingerprint(AgentOptions(kind="openai", llm_model="m-1", temperature=0.2, max_tokens=300))
    assert seen["model"] == "m-1" and seen["temperature"] == 0.2 and seen["max_tokens"] == 300
    assert seen["top_p"] is None  # never sent: the endpoint's default
    assert agent_fingerprint(AgentOptions(kind="noisy", noise="0.2", seed=4)) == {
        "kind": "noisy",
        "noise": "0.2",
        "seed": 4,
    }
