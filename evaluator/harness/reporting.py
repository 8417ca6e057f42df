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
) -> Report:
    """Score ``run_id`` and write ``report.json``, ``report.md`` and ``report.html`` under ``out``.

    ``state``: the run-state file, or the files of all its shards."""
    records = [
        r for path in (state if isinstance(state, list) else [state]) for r in RunState(path).records(run_id)
    ]
    report = score_run(
        bench.refs, db, run_id, records, bench.inventory, bootstrap, seed, bench.name, bench.format
    )
    print_warnings(report.warnings, "finmcp-eval run")
    write_report_files(report, out)
    return report
