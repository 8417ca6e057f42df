"""The viewer's grounded-answer panel: with the run state beside the store (``DB.harness.jsonl``, the
harness's default), a sample's page carries each answer's claims with verdict and evidence."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from finmcp.recordings.plumbing.launch import FinmcpProcess
from tests.evaluator.viewer.conftest import DROPPED, Traced
from tests.support.net import get_json


def test_sample_page_has_grounded_claims(traced: Traced, tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    with sqlite3.connect(traced.db) as src, sqlite3.connect(db) as dst:
        src.backup(dst)  # the session's store stays as the other tests see it
    shutil.copy(traced.db.parent / "state.jsonl", str(db) + ".harness.jsonl")
    args = ["view", "--db", str(db), "--host", "127.0.0.1", "--port", "0"]
    with FinmcpProcess("finmcp-eval", args, timeout=60, module="finmcp.evaluator.cli") as view:
        oracle = get_json(
            view.endpoint(f"/api/runs/oracle/samples/{DROPPED[0]}"), timeout=60
        )  # builds the world
        dropped = get_json(view.endpoint(f"/api/runs/dropped/samples/{DROPPED[0]}"), timeout=60)
    (answer,) = oracle["grounding"]
    assert answer["turn"] == 0 and answer["claims"]
    assert {c["verdict"] for c in answer["claims"]} == {"supported"}
    assert all(c["evidence"].startswith("t0.g") for c in answer["claims"])
    assert any(":SearchFunds " in c["evidence"] for c in answer["claims"])
    # without the SearchFunds call the names it listed are found in the split-history call's output
    claims = dropped["grounding"][0]["claims"]
    assert {c["verdict"] for c in claims} == {"supported"}
    assert not any(":SearchFunds " in c["evidence"] for c in claims)
    assert any(":BatchGetFundsSplitHistory " in c["evidence"] for c in claims)
