"""What the sharded-run tests share: the noisy agent's command line and scoring a run to a report."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from finmcp.evaluator.cli import main

NOISE = "drop=0.2,wrong=0.2,over=0.2,split=0.2,merge=0.2,reorder=0.2"
"""Noise rates that perturb every kind of call, so equal scores are not equal by accident."""


def run_command(db: Path | str, run: str, ids: list[str], *extra: str) -> list[str]:
    """``finmcp-eval run`` of the noisy agent (seed 3) on ``ids``, spawning its server and proxy."""
    exe = str(Path(sys.executable).with_name("finmcp-eval"))
    samples = [a for i in ids for a in ("--sample", i)]
    return [exe, "run", "--agent", "noisy", "--noise", NOISE, "--seed", "3", "--spawn", "--run", run,
            "--db", str(db), "--no-progress", "--concurrency", "4", *samples, *extra]  # fmt: skip


def score_report(db: Path | str, run: str, out: Path) -> dict[str, Any]:
    """``finmcp-eval score`` of ``run`` against finmcp-sim; the report with the run id and the store's
    name replaced by ``RUN`` and ``STORE`` (the numbers are what is compared)."""
    status = main(
        ["score", "--bench", "finmcp-sim", "--db", str(db), "--run", run, "--report-dir", str(out),
         "--format", "json", "--bootstrap", "200", "--missing", "drop"]
    )  # fmt: skip
    assert status == 0
    report = json.loads((out / "report.json").read_text("utf-8"))
    report["inputs"]["predictions"] = "STORE"
    return json.loads(json.dumps(report).replace(run, "RUN"))
