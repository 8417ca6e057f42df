"""The viewer's grounded-answer panel: a sample's answers (from the run state beside the trace store)
with each claim's verdict and evidence (:mod:`evaluator.grounding`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from finmcp.recordings.trace_pages import PAGE_COLUMNS
from finmcp.recordings.trace_types import json_or_text


def state_beside(db: str) -> Path | None:
    """The harness's default run-state file of a SQLite trace store (``DB.harness.jsonl``), if present."""
    path = Path(str(db) + ".harness.jsonl")
    return path if "://" not in str(db) and path.is_file() else None


def sample_grounding(
    store: Any, state: Path, run_id: str, sample_id: str, trial: int, turn_base: int = 0, seed: int = 0
) -> list[dict[str, Any]]:
    """Each answer of (run, sample, trial) in the run state, checked against the sample's whole call
    outputs of that turn and earlier: ``[{turn, answer, counts, unreadable, claims}]``."""
    from finmcp.evaluator.grounding.check import Checker
    from finmcp.evaluator.harness.state import RunState

    records = [
        r
        for r in RunState(state).records(run_id)
        if str(r.get("sample")) == sample_id and int(r.get("trial", 0)) == trial
    ]
    if not records:
        return []
    calls = [dict(zip(PAGE_COLUMNS, row, strict=True)) for row in store.sample_calls(run_id, sample_id)]
    calls = [c for c in calls if int(c.get("trial") or 0) == trial]
    checker = Checker(seed)
    out = []
    for turn, answer in enumerate(records[-1].get("answers") or []):
        if isinstance(answer, str) and not answer.strip():
            continue
        outputs = [
            (
                f"t{(c['turn'] or 0) - turn_base}.g{c.get('call_group')}.c{c['seq']}:{c['tool']}",
                json_or_text(c["result"]),
            )
            for c in calls
            if c.get("turn") is None or c["turn"] - turn_base <= turn
        ]
        out.append({"turn": turn, "answer": answer, **checker.check(answer, outputs).to_dict()})
    return out
