"""Benchmark of the drift audit: every finmcp-sim recording audited against a live finmcp-server.

The shipped finmcp-sim recordings (``finmcp.evaluator.benchmarks.install_recordings``: the 1,779
recorded finmcp65 answers ``make demo`` serves) are installed into a temporary file; a live
finmcp-server is started on them as ``make demo`` starts it (``--recordings FILE``, ``--latency
none``, warm); ``finmcp-proxy audit --recording FILE --against URL --include-acting`` re-issues every
recorded call and compares the answers (every tool: the simulator's acting tools change nothing).
The audit must report 0 findings (the bench fails otherwise).

Rows: ``audit`` (wall time, calls/s, findings) and the baseline measured in the same run, ``sdk
loop``: the same calls through one SDK client in a plain loop, no comparison, so the ratio is what
the audit adds on top of the calls themselves. Run directly (``python -m bench.bench_audit``) or
through ``python -m bench audit``.
"""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client

from finmcp.evaluator.benchmarks import install_recordings
from finmcp.proxy.audit import AuditOptions, cmd_audit
from finmcp.server.testing import ServerProcess


async def _sdk_loop(url: str, calls: list[tuple[str, dict[str, Any]]]) -> None:
    async with Client(url, mode="auto") as client:
        for tool, arguments in calls:
            await client.call_tool(tool, arguments)


def run() -> list[dict[str, Any]]:
    """Audit every finmcp-sim recording against a live server; rows for the audit and its baseline."""
    with tempfile.TemporaryDirectory() as tmp:
        rec = Path(tmp) / "finmcp-sim.recordings.sqlite"
        store = install_recordings(rec)
        calls = [(r["tool"], r["arguments"]) for r in store.iter_responses()]
        store.close()
        args = ["--recordings", str(rec), "--latency", "none"]
        with ServerProcess(args, wait_warm=True) as server:
            report_file = Path(tmp) / "drift.json"
            options = AuditOptions(
                recording=str(rec), against=server.url, include_acting=True, json=str(report_file)
            )
            started = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                code = cmd_audit(options)
            audit_s = time.perf_counter() - started
            report = json.loads(report_file.read_text())
            started = time.perf_counter()
            anyio.run(_sdk_loop, server.url, calls)
            loop_s = time.perf_counter() - started
    findings = len(report["findings"])
    if code != 0 or findings or report["counts"] != {"identical": len(calls)}:
        raise AssertionError(
            f"the audit of the finmcp-sim recordings found drift: {report['counts']}, {findings} findings"
        )
    return [
        {
            "bench": "audit",
            "case": "finmcp-sim recordings vs live finmcp-server",
            "calls": len(calls),
            "findings": findings,
            "wall_s": round(audit_s, 2),
            "calls_per_s": round(len(calls) / audit_s, 1),
            "baseline": "sdk loop",
            "baseline_wall_s": round(loop_s, 2),
            "baseline_calls_per_s": round(len(calls) / loop_s, 1),
            "ratio": round(audit_s / loop_s, 2),
        }
    ]


if __name__ == "__main__":
    for row in run():
        print(json.dumps(row))
