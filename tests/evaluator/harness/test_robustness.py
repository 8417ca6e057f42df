"""Robustness runs end to end (real finmcp-server + finmcp-proxy on loopback, the harness, the oracle):
the calibration of the recovery metrics, and byte-identical traces for the same seed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from finmcp.evaluator.harness.options import AgentOptions
from finmcp.evaluator.harness.robustness import RobustnessSetup, run_robustness
from finmcp.evaluator.harness.setup import load_bench
from finmcp.recordings.trace_store import open_trace_store

SCHEDULE = {
    "version": 1,
    "seed": 5,
    "rules": [
        {"kind": "rate_limit", "probability": 0.12, "retry_after": 0.05},
        {"kind": "rpc_error", "probability": 0.12},
        {"kind": "is_error", "probability": 0.12},
        {"kind": "timeout", "probability": 0.08, "timeout_ms": 30},
        {"kind": "truncated", "probability": 0.08},
        {"kind": "is_error", "probability": 0.08, "transient": False},
        {"kind": "empty", "probability": 0.05},
        {"kind": "wrong_values", "probability": 1.0, "scope": "sample", "at": [1], "member": [1]},
    ],
}
AGENTS = {"oracle": AgentOptions(kind="oracle"), "oracle-retry": AgentOptions(kind="oracle", retry=3)}
VARYING = ("id", "jsonrpc_id", "seq", "t_req_ns", "t_resp_ns", "wall_time", "latency_ms")
"""Columns of ``calls`` left out of the canonical dump: the row id, the client's JSON-RPC id counter and
``seq`` (both count across the concurrently running samples, so they follow arrival order) and the
timings. Rows are sorted by every other column; all of those (tags, session key, tool, arguments,
result, rpc_error, status, group, group source) and the fault-marked response bodies must be
byte-identical."""


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory):
    return load_bench("finmcp-sim", tmp_path_factory.mktemp("bench"), limit=24)


@pytest.fixture(scope="module")
def schedule(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("schedule") / "schedule.json"
    path.write_text(json.dumps(SCHEDULE), "utf-8")
    return path


def _setup(folder: Path, schedule: Path, clean: bool = True) -> RobustnessSetup:
    return RobustnessSetup(
        folder / "runs.sqlite", folder / "state.jsonl", schedule, bootstrap=200, clean=clean
    )


@pytest.fixture(scope="module")
def calibrated(bench, schedule: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    folder = tmp_path_factory.mktemp("calibration")
    return folder, run_robustness(bench, _setup(folder, schedule), AGENTS)


@pytest.mark.slow
def test_calibration_oracle_with_and_without_retry(calibrated) -> None:
    _, result = calibrated
    retry, plain = result["oracle-retry"], result["oracle"]
    # enough signalled transient faults to mean something, every kind present
    assert retry["by_kind"]["signalled"]["transient"] >= 20
    assert {"rate_limit", "rpc_error", "is_error", "timeout", "truncated"} <= set(retry["by_kind"])
    assert retry["by_kind"]["signalled"]["transient_recovered"]["value"] >= 0.95
    assert plain["by_kind"]["signalled"]["transient_recovered"]["value"] <= 0.05
    assert retry["by_kind"]["rate_limit"]["retry_after_honoured"]["value"] == 1.0
    # the retry policy never retries a permanent fault and then says it gave up
    assert retry["by_kind"]["signalled"]["permanent"] >= 1
    assert retry["by_kind"]["signalled"]["permanent_not_retried"]["value"] == 1.0
    assert retry["gave_up_cleanly"]["value"] == 1.0
    assert plain["gave_up_cleanly"]["value"] <= 0.2  # it answers the gold reply: invents
    # silent kinds: nothing tells the oracle, so nothing is recovered
    assert retry["by_kind"]["wrong_values"]["recovered"]["value"] == 0.0
    # ΔTF1/ΔEMR against the clean run of the same agent, with CIs
    for block in (retry, plain):
        assert block["delta_vs_clean"]["paired_samples"] == 24
        assert block["delta_vs_clean"]["EMR"]["lo"] is not None
    # on the calls sent, the plain oracle sends exactly the gold calls whatever they answer and the retry
    # policy pays for its retries (extra calls); on the calls answered, the retries recover what faults took
    assert plain["delta_vs_clean"]["EMR_sent"]["diff"] == 0.0
    assert retry["delta_vs_clean"]["EMR_sent"]["diff"] < 0
    assert plain["delta_vs_clean"]["TF1"]["diff"] < retry["delta_vs_clean"]["TF1"]["diff"] <= 0
    assert retry["repeated_acting"]["pairs"] == 0  # every finmcp-sim tool is read-only


def _canonical_dump(db: Path, run: str) -> bytes:
    with open_trace_store(db, readonly=True) as store:
        rows = store.calls(run, parse_json=False)
        bodies = sorted(
            m["body"].split('"result":', 1)[-1].split('"error":', 1)[-1]
            for m in store.messages(run_id=run)
            if m["direction"] == "s2c" and "io.finmcp/fault" in (m["body"] or "")
        )
    kept = [{k: v for k, v in row.items() if k not in VARYING} for row in rows]
    kept.sort(key=lambda r: json.dumps(r, sort_keys=True, ensure_ascii=False))
    return json.dumps([kept, bodies], ensure_ascii=False, sort_keys=True).encode("utf-8")


@pytest.mark.slow
def test_same_seed_twice_gives_byte_identical_traces(
    bench, schedule: Path, calibrated, tmp_path: Path
) -> None:
    first, _ = calibrated
    run_robustness(bench, _setup(tmp_path, schedule, clean=False), {"oracle-retry": AGENTS["oracle-retry"]})
    dumps = [_canonical_dump(folder / "runs.sqlite", "oracle-retry~faults") for folder in (first, tmp_path)]
    assert dumps[0] == dumps[1]
    assert b"wrong_values" in dumps[0] and b"rate_limit" in dumps[0]


def test_run_refuses_a_bad_schedule_and_retry_without_the_oracle(tmp_path: Path, capsys) -> None:
    from finmcp.evaluator.cli import main

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"seed": 1, "rules": [{"kind": "is_error", "probability": 7}]}), "utf-8")
    db = str(tmp_path / "runs.sqlite")
    base = ["run", "--spawn", "--run", "x", "--db", db, "--limit", "3", "--no-progress"]
    assert main([*base, "--agent", "oracle", "--faults", str(bad)]) == 2
    assert "rules[0].probability: probability 7 is out of range" in capsys.readouterr().err
    assert main([*base, "--agent", "noisy", "--retry", "2"]) == 2
    assert "--retry is a policy of --agent oracle" in capsys.readouterr().err
    assert not Path(db).exists()  # refused before anything started
