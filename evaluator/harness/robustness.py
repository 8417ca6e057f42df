"""Robustness runs: agents run clean and under a fault schedule, then scored for recovery.

:func:`run_robustness` starts a clean server + proxy, runs every agent (run ``{name}``), stops them,
starts a server serving the schedule (``--fault-schedule``) + proxy on the same trace DB, runs every
agent again (run ``{name}~faults``, calls tagged with their positions), and returns each agent's
recovery block (:func:`evaluator.metrics.recovery.recovery_metrics`, with ΔTF1/ΔEMR against its clean
run). The demo's robustness rows, the calibration test and ``bench/robustness_calibration.py`` use it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from finmcp.evaluator.harness.options import AgentOptions
from finmcp.recordings.plumbing.eventloop import run as run_loop

FAULTED_SUFFIX = "~faults"
DEMO_SCHEDULE = "fault_schedule.demo.json"


def demo_schedule() -> Path:
    """The shipped fault schedule of the demo and the calibration (``evaluator/benchmarks/``)."""
    from importlib import resources

    return Path(str(resources.files("finmcp.evaluator.benchmarks").joinpath(DEMO_SCHEDULE)))


@dataclass(frozen=True)
class RobustnessSetup:
    """Where and how the robustness runs go."""

    db: Path
    state: Path
    schedule: Path
    seed: int = 0
    concurrency: int = 8
    bootstrap: int = 1000
    progress: bool = False
    clean: bool = True
    """False: only the faulted runs (their clean runs already in ``db``: ``{name}``)."""
    inject: str = "server"
    """Who serves the schedule: ``server`` (``finmcp-server --fault-schedule``) or ``proxy``
    (``finmcp-proxy --fault-schedule`` in front of a server without one)."""


def _agent(options: AgentOptions, name: str) -> Any:
    from finmcp.evaluator.agents import NoiseRates, NoisyAgent, OracleAgent

    if options.kind == "noisy":
        return NoisyAgent(NoiseRates.parse(options.noise), options.seed, name=name)
    return OracleAgent(retry=options.retry)


def faulted_runs(bench: Any, setup: RobustnessSetup, agents: dict[str, AgentOptions]) -> list[Any]:
    """Run ``agents`` under the schedule only (runs ``{name}~faults``); their run summaries."""
    return _runs(bench, setup, agents, faulted=True)


def _runs(bench: Any, setup: RobustnessSetup, agents: dict[str, AgentOptions], faulted: bool) -> list[Any]:
    from finmcp.evaluator.agents.history import RecordedOutputs
    from finmcp.evaluator.harness.fingerprint import RunFingerprint, store_fingerprint
    from finmcp.evaluator.harness.runner import RunConfig, run_agent
    from finmcp.evaluator.harness.spawn import SpawnConfig, Stack
    from finmcp.recordings.fault_schedule import load_schedule

    schedule = load_schedule(setup.schedule) if faulted else None
    extra = ["--fault-schedule", str(setup.schedule)] if faulted else []
    if setup.inject not in ("server", "proxy"):
        raise ValueError(f"RobustnessSetup.inject: {setup.inject!r} is neither 'server' nor 'proxy'")
    by_proxy = setup.inject == "proxy"
    spawn = SpawnConfig(
        db=setup.db,
        inventory=bench.inventory_name,
        recordings=bench.recordings,
        seed=setup.seed,
        extra_server_args=[] if by_proxy else extra,
        extra_proxy_args=extra if by_proxy else [],
    )
    base = RunFingerprint(bench.name, bench.recordings, setup.seed, schedule)
    outputs = RecordedOutputs(str(bench.recordings), bench.inventory) if bench.recordings else None

    def remember(run: str, options: AgentOptions, tools: list[Any]) -> None:
        store_fingerprint(setup.db, run, base.complete(tools, options))

    try:
        with Stack(spawn) as stack:

            async def all_runs() -> list[Any]:
                summaries = []
                for name, options in agents.items():
                    run = name + (FAULTED_SUFFIX if faulted else "")
                    config = RunConfig(
                        run_id=run,
                        proxy_url=stack.proxy_base,
                        state_path=setup.state,
                        db_path=setup.db,
                        concurrency=setup.concurrency,
                        progress=setup.progress,
                        on_tools=functools.partial(remember, run, options),
                        position_meta=faulted,
                    )
                    agent = _agent(options, name)
                    summaries.append(await run_agent(bench.refs, agent, config, outputs))
                return summaries

            return list(run_loop(all_runs(), "auto"))
    finally:
        if outputs is not None:
            outputs.close()


def run_robustness(bench: Any, setup: RobustnessSetup, agents: dict[str, AgentOptions]) -> dict[str, Any]:
    """Run ``agents`` clean (unless ``setup.clean`` is False) and under the schedule; returns
    ``{name: recovery block}`` (see the module docstring)."""
    if setup.clean:
        _runs(bench, setup, agents, faulted=False)
    _runs(bench, setup, agents, faulted=True)
    return {name: recovery_of(bench, setup, name) for name in agents}


def recovery_of(bench: Any, setup: RobustnessSetup, name: str) -> dict[str, Any]:
    """The recovery block of agent ``name``'s faulted run against its clean run in ``setup.db``."""
    from finmcp.evaluator.harness.scoring import run_predictions
    from finmcp.evaluator.harness.state import RunState
    from finmcp.evaluator.inputs.fault_trace import load_fault_trace
    from finmcp.evaluator.inputs.model import ReferenceSet
    from finmcp.evaluator.metrics.argnorm import Canonicalizer, inventory_schema_lookup
    from finmcp.evaluator.metrics.options import EvalOptions
    from finmcp.evaluator.metrics.recovery import delta_vs_clean, recovery_metrics

    faulted = name + FAULTED_SUFFIX
    state = RunState(setup.state)
    try:
        clean_records, fault_records = state.records(name), state.records(faulted)
    finally:
        state.close()
    refs = ReferenceSet(list(bench.refs), bench.format, bench.name)
    opts = EvalOptions(
        bootstrap=setup.bootstrap,
        seed=setup.seed,
        canon=Canonicalizer(inventory_schema_lookup(bench.inventory)),
    )
    trace = load_fault_trace(setup.db, faulted)
    delta = None
    if clean_records:
        clean = run_predictions(setup.db, name, clean_records)
        delta = delta_vs_clean(refs, clean, run_predictions(setup.db, faulted, fault_records), opts, trace)
    answers = {
        (str(r["sample"]), int(r.get("trial", 0))): list(r.get("answers") or []) for r in fault_records
    }
    return recovery_metrics(trace, answers, setup.bootstrap, setup.seed, delta)
