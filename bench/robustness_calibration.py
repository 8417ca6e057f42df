"""The robustness calibration table (issue 29): agents clean and under a fault schedule, recovery per kind.

``python -m bench.robustness_calibration [--limit N] [--schedule FILE] [--bootstrap B] [--json FILE]``
starts finmcp-server + finmcp-proxy on loopback (clean, then serving the schedule; default: the demo's
``evaluator/benchmarks/fault_schedule.demo.json``), runs the oracle without and with a retry policy and
two noisy agents on a stratified slice of finmcp-sim, and prints per agent and fault kind the share of
transient faults recovered and of appropriate retries, with 95% bootstrap CIs, then gave-up-cleanly and
ΔTF1/ΔEMR against each agent's clean run. Calibrated: oracle+retry recovers >= 0.95 of the signalled
transient faults, the oracle without one <= 0.05.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from finmcp.evaluator.harness.demo import DEMO_AGENTS
from finmcp.evaluator.harness.options import AgentOptions
from finmcp.evaluator.harness.robustness import RobustnessSetup, demo_schedule, run_robustness
from finmcp.evaluator.harness.setup import load_bench
from finmcp.evaluator.reports.recovery import estimate

AGENTS = {
    "oracle": AgentOptions(kind="oracle"),
    "oracle-retry": AgentOptions(kind="oracle", retry=3),
    **{name: AgentOptions("noisy", noise) for name, noise in DEMO_AGENTS if noise is not None},
}
KINDS = ("rpc_error", "is_error", "timeout", "rate_limit", "truncated", "empty", "wrong_values", "signalled")


def table(results: dict[str, Any]) -> str:
    """The calibration table in Markdown: a row per agent and kind."""
    header = ["agent", "kind", "faults", "transient recovered", "appropriate retry"]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for agent, block in results.items():
        for kind in KINDS:
            entry = block["by_kind"].get(kind)
            if entry is None:
                continue
            cells = [agent, kind, str(entry["faults"])]
            cells += [estimate(entry["transient_recovered"]), estimate(entry["appropriate_retry"])]
            lines.append("| " + " | ".join(cells) + " |")
    head = "| agent | gave up cleanly | ΔTF1 answered | ΔEMR answered | ΔTF1 sent | ΔEMR sent |"
    lines += ["", head, "|---|---|---|---|---|---|"]
    for agent, block in results.items():
        delta = block.get("delta_vs_clean") or {}
        cells = [agent, estimate(block["gave_up_cleanly"])]
        cells += [estimate(delta.get(key), "diff") for key in ("TF1", "EMR", "TF1_sent", "EMR_sent")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the calibration and print its table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=200, help="finmcp-sim samples (stratified; default 200)")
    parser.add_argument("--schedule", type=Path, default=None, help="fault schedule (default: the demo's)")
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--json", type=Path, default=None, help="also write the recovery blocks here")
    args = parser.parse_args(argv)
    schedule = args.schedule or demo_schedule()
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        bench = load_bench("finmcp-sim", folder, limit=args.limit)
        setup = RobustnessSetup(
            folder / "runs.sqlite", folder / "state.jsonl", schedule, bootstrap=args.bootstrap
        )
        results = run_robustness(bench, setup, AGENTS)
    print(f"robustness calibration: {len(bench.refs)} samples of finmcp-sim, schedule {schedule}")
    print(table(results))
    print(f"({time.monotonic() - started:.1f} s)")
    if args.json is not None:
        args.json.write_text(json.dumps(results, ensure_ascii=False, indent=1), "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
