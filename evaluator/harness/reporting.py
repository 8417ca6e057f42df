"""The end of a run: its failures on stdout, and (``--report-dir``) its scored report's files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from finmcp.evaluator.harness.scoring import score_run
from finmcp.evaluator.harness.state import RunState
from finmcp.evaluator.reports.files import write_report as write_report_files
from finmcp.evaluator.reports.model import Report
from finmcp.evaluator.reports.pipeline import print_warnings
from finmcp.recordings.plumbing.terminal import visible


def print_failures(summary: Any, state: Path) -> None:
    """Up to 10 failed samples of a summary, then how many more are in ``state``."""
    for key, error in list(summary.errors.items())[:10]:
        print(f"  failed {visible(key)}: {visible(error)}")  # an agent's or server's words
    if len(summary.errors) > 10:
        print(f"  ... {len(summary.errors) - 10} more failures in {state}")


def write_report(
    bench: Any,
    db: str | Path,
    state: Path | list[Path],
    run_id: str,
    out: Path,
    bootstrap: int,
    seed: int,
    clean_run: str | None = None,
) -> Report:
    """Score ``run_id`` and write ``report.json``, ``report.md`` and ``report.html`` under ``out``.

    ``state``: the run-state file, or the files of all its shards. A run with a fault schedule gets its
    recovery block (:func:`with_recovery`; ΔTF1/ΔEMR against ``clean_run`` when given)."""
    records = [
        r for path in (state if isinstance(state, list) else [state]) for r in RunState(path).records(run_id)
    ]
    report = score_run(
        bench.refs, db, run_id, records, bench.inventory, bootstrap, seed, bench.name, bench.format
    )
    report = with_recovery(report, bench, db, records, run_id, clean_run, bootstrap, seed, state)
    print_warnings(report.warnings, "finmcp-eval run")
    write_report_files(report, out)
    return report


def with_recovery(
    report: Report,
    bench: Any,
    db: str | Path,
    records: list[dict[str, Any]],
    run_id: str,
    clean_run: str | None,
    bootstrap: int,
    seed: int,
    state: Path | list[Path],
) -> Report:
    """``report`` with its ``recovery`` block when the run has a fault schedule (its fingerprint's
    ``faults``), else unchanged; ``clean_run``: the same agent's run without faults, for ΔTF1/ΔEMR."""
    faults = (report.fingerprint or {}).get("faults")
    if faults in (None, "none"):
        return report
    from finmcp.evaluator.harness.scoring import run_predictions
    from finmcp.evaluator.inputs.fault_trace import load_fault_trace
    from finmcp.evaluator.inputs.model import ReferenceSet
    from finmcp.evaluator.metrics.argnorm import Canonicalizer, inventory_schema_lookup
    from finmcp.evaluator.metrics.options import EvalOptions
    from finmcp.evaluator.metrics.recovery import delta_vs_clean, recovery_metrics

    trace = load_fault_trace(db, run_id)
    delta = None
    if clean_run is not None:
        clean_records = [
            r
            for path in (state if isinstance(state, list) else [state])
            for r in RunState(path).records(clean_run)
        ]
        canon = Canonicalizer(
            inventory_schema_lookup(bench.inventory) if bench.inventory is not None else None
        )
        opts = EvalOptions(bootstrap=bootstrap, seed=seed, canon=canon)
        refs = ReferenceSet(list(bench.refs), bench.format, bench.name)
        clean = run_predictions(db, clean_run, clean_records)
        delta = delta_vs_clean(refs, clean, run_predictions(db, run_id, records), opts, trace)
    answers = {(str(r["sample"]), int(r.get("trial", 0))): list(r.get("answers") or []) for r in records}
    block = recovery_metrics(trace, answers, bootstrap, seed, delta)
    return report.model_copy(update={"recovery": block})
