"""``finmcp-eval demo`` (``make demo``): spawn server + proxy, run three agents on finmcp-sim, score them.

Agents: ``oracle`` (must score 1.0 everywhere) and two ``noisy`` settings. Then the robustness rows
(:data:`ROBUST_AGENTS`): a second server serving the shipped fault schedule
(``evaluator/benchmarks/fault_schedule.demo.json``) and the oracle without and with a retry policy
under it (runs ``oracle~faults``, ``oracle-retry~faults``), scored with their recovery block against
the clean ``oracle`` run. Everything is written under
``out/demo/`` (a fresh trace DB each time): ``runs.sqlite``, one ``{agent}/report.{json,md,html}`` per
agent, ``leaderboard.md`` and ``leaderboard.html`` (with each agent's paired comparison to ``oracle``). No network beyond loopback, no LLM.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import time
from pathlib import Path
from typing import Any

from finmcp.evaluator.errors import EvalInputError
from finmcp.evaluator.harness.options import DemoOptions
from finmcp.evaluator.reports.model import Report
from finmcp.recordings.plumbing.eventloop import run as run_loop

WARM_UP_PAYS_FROM_SAMPLES = 150
"""From this many samples on, the demo waits for the server's start-up warm-up before its runs.

Measured on 2 shared cores (load ~2, same-run pairs, waiting or not): waiting adds ~4 s to the
start-up and spares the runs the cold server's slow calls. The whole demo (613 samples) took
17.2-17.5 s waiting, 19.8-21.2 s not; 300 samples 11.4-12.2 s against 12.3-16.1 s; 100 samples
8.5-8.9 s against 8.1 s; 20 samples 7.3-7.6 s against 4.3-4.5 s (docs/server.md, "Warm-up").
"""
DEMO_AGENTS = (
    ("oracle", None),
    ("noisy-light", "drop=0.05,wrong=0.05,over=0.05,split=0.05,merge=0.05,reorder=0.05"),
    ("noisy-heavy", "drop=0.2,wrong=0.2,over=0.2,split=0.2,merge=0.2,reorder=0.2"),
)


ROBUST_AGENTS = (("oracle", 0), ("oracle-retry", 3))
"""The robustness rows: agent name and the oracle's ``retry`` (their clean run is ``oracle``'s)."""
ROBUST_SAMPLES = 100
"""The robustness rows run on a stratified slice of this many samples (or fewer, with ``--limit``), to
keep the demo's added time small: ~230 faults, enough for CIs of a few points."""


def _fresh(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", ".harness.jsonl"):
        Path(str(path) + suffix).unlink(missing_ok=True)


def _agent(name: str, noise: str | None, seed: int) -> Any:
    from finmcp.evaluator.agents import NoiseRates, NoisyAgent, OracleAgent

    return OracleAgent() if noise is None else NoisyAgent(NoiseRates.parse(noise), seed, name=name)


def _store_fingerprint(db: Path, run_id: str, base: Any, agent: Any, tools: list[dict[str, Any]]) -> None:
    from finmcp.evaluator.harness.fingerprint import store_fingerprint

    store_fingerprint(db, run_id, base.complete(tools, agent))


def process_cpu_seconds(pid: int) -> float | None:
    """CPU seconds (user + system) a live process has used, from ``/proc/PID/stat`` (None elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_demo(options: DemoOptions, timings: dict[str, Any] | None = None) -> int:
    """Run the demo; prints the leaderboard and the report paths.

    ``timings``, when given, receives where the time went: ``startup_s`` (loading the benchmark,
    starting server and proxy and waiting for the server's warm-up: with ``timings`` the runs always
    start warm), ``runs_s`` (the runs alone) and ``scoring_s`` (wall clock),
    ``calls`` (tools/call requests the agents sent), and the CPU seconds of the runs spent by the
    server, the proxy and this process (the harness and its agents): ``server_cpu_s``, ``proxy_cpu_s``,
    ``harness_cpu_s`` (``bench/bench_demo.py`` reports them beside the demo's calls/s).
    """
    from finmcp.evaluator.agents.history import RecordedOutputs
    from finmcp.evaluator.harness.fingerprint import RunFingerprint
    from finmcp.evaluator.harness.options import AgentOptions
    from finmcp.evaluator.harness.reporting import write_report
    from finmcp.evaluator.harness.runner import RunConfig, run_agent
    from finmcp.evaluator.harness.scoring import leaderboard
    from finmcp.evaluator.harness.setup import load_bench, stratified_slice
    from finmcp.evaluator.harness.spawn import SpawnConfig, SpawnError, Stack

    start = time.monotonic()
    out = Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    db = out / "runs.sqlite"
    _fresh(db)
    state = db.with_name(db.name + ".harness.jsonl")
    bench = load_bench("finmcp-sim", out, limit=options.limit)
    outputs = RecordedOutputs(str(bench.recordings), bench.inventory)
    progress = options.progress
    print(
        f"finmcp-eval demo: {len(bench.refs)} samples of finmcp-sim, agents {', '.join(n for n, _ in DEMO_AGENTS)}"
    )
    # the runs start once the server is warm when they are measured (its warm-up is not the runs' CPU) or
    # long enough to gain from it (docs/server.md, "Warm-up": WARM_UP_PAYS_FROM_SAMPLES)
    warm_first = timings is not None or len(bench.refs) >= WARM_UP_PAYS_FROM_SAMPLES
    spawn = SpawnConfig(
        db=db,
        inventory=bench.inventory_name,
        recordings=bench.recordings,
        seed=options.seed,
        wait_warm=warm_first,
    )
    cpu: dict[str, float | None] = {}
    base = RunFingerprint("finmcp-sim", bench.recordings, options.seed)  # the same for every demo run
    agents = {
        name: AgentOptions(kind="oracle") if noise is None else AgentOptions("noisy", noise, options.seed)
        for name, noise in DEMO_AGENTS
    }
    try:
        with Stack(spawn) as stack:
            print(f"server {stack.server_url}  proxy {stack.proxy_base}/mcp  trace DB {db}")
            pids = {
                "server": stack.server.process if stack.server else None,
                "proxy": stack.proxy.process if stack.proxy else None,
            }
            started_cpu = {k: process_cpu_seconds(p.pid) if p else None for k, p in pids.items()}
            started = time.monotonic() - start  # loading the benchmark, starting (and warming) the stack
            harness_cpu = time.process_time()

            async def all_runs() -> list[Any]:
                summaries = []
                for name, noise in DEMO_AGENTS:
                    config = RunConfig(
                        run_id=name,
                        proxy_url=stack.proxy_base,
                        state_path=state,
                        db_path=db,
                        concurrency=options.concurrency,
                        progress=progress,
                        on_tools=functools.partial(_store_fingerprint, db, name, base, agents[name]),
                    )
                    summaries.append(
                        await run_agent(bench.refs, _agent(name, noise, options.seed), config, outputs)
                    )
                return summaries

            summaries = run_loop(all_runs(), options.loop)
            cpu["harness"] = time.process_time() - harness_cpu
            for kind, proc in pids.items():
                now = process_cpu_seconds(proc.pid) if proc else None
                was = started_cpu[kind]
                cpu[kind] = None if now is None or was is None else now - was
            for summary in summaries:
                print(summary.line())
        robust_started = time.monotonic()
        robust_bench = dataclasses.replace(bench, refs=stratified_slice(bench.refs, ROBUST_SAMPLES))
        robust = _robustness_runs(robust_bench, db, state, options)
        robust_s = time.monotonic() - robust_started
    except SpawnError as exc:
        raise EvalInputError(f"demo: could not start server and proxy: {exc}") from None
    finally:
        outputs.close()
    ran = time.monotonic() - start
    rows = []
    for name, _ in DEMO_AGENTS:
        report = write_report(bench, db, state, name, out / name, options.bootstrap, options.seed)
        rows.append((name, report))
    for run in robust:
        report = write_report(
            robust_bench, db, state, run, out / run, options.bootstrap, options.seed, "oracle"
        )
        rows.append((run, report))
    table = leaderboard(rows)
    (out / "leaderboard.md").write_text(table, "utf-8")
    write_leaderboard_html(out / "leaderboard.html", rows, _comparisons(bench, db, state, options))
    print()
    print(table)
    for name, _ in DEMO_AGENTS:
        print(f"HTML report ({name}): {(out / name / 'report.html').resolve()}")
    print(f"HTML leaderboard with paired tests: {(out / 'leaderboard.html').resolve()}")
    print(
        f"demo finished in {time.monotonic() - start:.1f} s (runs {ran:.1f} s, of which robustness rows"
        f" {robust_s:.1f} s; scoring {time.monotonic() - start - ran:.1f} s)"
    )
    if timings is not None:
        timings.update(
            startup_s=started,
            runs_s=ran - started,
            scoring_s=time.monotonic() - start - ran,
            calls=sum(s.calls for s in summaries),
            server_cpu_s=cpu.get("server"),
            proxy_cpu_s=cpu.get("proxy"),
            harness_cpu_s=cpu.get("harness"),
            leaderboard=table,
        )
    return 0


def _robustness_runs(bench: Any, db: Path, state: Path, options: DemoOptions) -> list[str]:
    """The robustness rows' runs (a second server serving the demo's fault schedule); their run ids."""
    from finmcp.evaluator.harness.options import AgentOptions
    from finmcp.evaluator.harness.robustness import (
        FAULTED_SUFFIX,
        RobustnessSetup,
        demo_schedule,
        faulted_runs,
    )

    agents = {name: AgentOptions(kind="oracle", retry=retry) for name, retry in ROBUST_AGENTS}
    setup = RobustnessSetup(
        db, state, demo_schedule(), options.seed, options.concurrency, options.bootstrap, options.progress
    )
    summaries = faulted_runs(bench, setup, agents)
    for summary in summaries:
        print(summary.line())
    return [name + FAULTED_SUFFIX for name in agents]


def _comparisons(bench: Any, db: Path, state: Path, options: DemoOptions) -> list[dict[str, Any]]:
    """Every demo agent paired against the first (``oracle``): paired bootstrap, McNemar, per scenario."""
    from finmcp.evaluator.harness.scoring import run_predictions
    from finmcp.evaluator.harness.state import RunState
    from finmcp.evaluator.inputs.model import ReferenceSet
    from finmcp.evaluator.metrics.argnorm import Canonicalizer, inventory_schema_lookup
    from finmcp.evaluator.metrics.compare import compare_runs
    from finmcp.evaluator.metrics.options import EvalOptions
    from finmcp.evaluator.reports.pipeline import compare_sample_counts

    refs = ReferenceSet(list(bench.refs), bench.format, bench.name)
    opts = EvalOptions(
        bootstrap=options.bootstrap,
        seed=options.seed,
        canon=Canonicalizer(inventory_schema_lookup(bench.inventory)),
    )
    records = RunState(state)
    try:
        preds = {name: run_predictions(db, name, records.records(name)) for name, _ in DEMO_AGENTS}
    finally:
        records.close()
    base = DEMO_AGENTS[0][0]
    results = []
    for name, _ in DEMO_AGENTS[1:]:
        result = compare_runs(refs, preds[base], preds[name], opts)
        result["samples"] = compare_sample_counts(refs, preds[base], preds[name], opts.missing)
        results.append(result)
    return results


def write_leaderboard_html(
    path: Path, rows: list[tuple[str, Report]], comparisons: list[dict[str, Any]]
) -> None:
    """``leaderboard.html``: the leaderboard table and each agent's paired comparison with the first."""
    from finmcp.evaluator.harness.scoring import LEADERBOARD
    from finmcp.evaluator.reports.compare_html import render_leaderboard_html

    path.write_text(
        render_leaderboard_html(rows, LEADERBOARD, comparisons, "finmcp-eval demo leaderboard"), "utf-8"
    )
