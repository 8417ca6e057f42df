"""One ``finmcp-eval run`` pass over a benchmark or one shard of it: the unit a process or a Ray task runs.

:func:`run_pass` loads the benchmark, keeps the shard's samples, starts server + proxy when asked
(``--spawn``), drives the agent and stops what it started. Shards of one run share the run id and
the trace store and touch nothing of each other's: each has its own run-state file, checks and
sets aside only its own samples' calls, and (with PostgreSQL) its own proxy outbox.
"""

from __future__ import annotations

import fcntl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from finmcp.evaluator.errors import EvalInputError
from finmcp.evaluator.harness.options import RunOptions
from finmcp.evaluator.harness.shards import Shard, select
from finmcp.recordings.plumbing.eventloop import run as run_loop

DEFAULT_DB = "out/runs.sqlite"


@dataclass
class PassResult:
    """What one pass did: its summary, where its run state is, and its samples."""

    summary: Any
    state: Path
    samples: list[str]
    shard: Shard | None = None
    bench: Any = None
    """The benchmark the pass loaded (:class:`evaluator.harness.setup.Bench`), for scoring it."""


def is_postgres(db: str | None) -> bool:
    """True when ``--db`` names a PostgreSQL trace store."""
    from finmcp.recordings.postgres.connection import is_postgres_url

    return is_postgres_url(db)


def paths(options: RunOptions, shard: Shard | None) -> tuple[str | None, Path, Path]:
    """(trace store, run-state file, local work folder) of this pass.

    The default run state is ``<db>.harness.jsonl``, per shard ``<db>.shard-I-of-N.harness.jsonl``;
    with a PostgreSQL store the state and the proxy's outbox live in ``--workdir`` (default ``out``).
    """
    db = options.db or (DEFAULT_DB if options.spawn else None)
    label = f".{shard.label}" if shard is not None else ""
    if db is not None and is_postgres(db):
        workdir = Path(options.workdir or "out")
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in options.run)
        default_state = workdir / f"{safe}{label}.harness.jsonl"
    elif db is not None:
        workdir = Path(db).parent
        default_state = Path(db).with_name(f"{Path(db).name}{label}.harness.jsonl")
    elif options.state:
        workdir = Path(options.state).parent
        default_state = Path(options.state)
    else:
        raise EvalInputError("with --proxy, give --db (the proxy's trace DB) or --state FILE")
    state = Path(options.state) if options.state else default_state
    return db, state, workdir


def load(options: RunOptions, workdir: Path) -> Any:
    """The benchmark of ``options``; the shipped recordings are installed once under a file lock."""
    from finmcp.evaluator.harness.setup import load_bench

    workdir.mkdir(parents=True, exist_ok=True)
    with (workdir / ".finmcp-install.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # shards starting together install the recordings once
        try:
            return load_bench(
                options.bench,
                workdir,
                options.inventory,
                options.recordings,
                options.limit,
                list(options.samples) or None,
            )
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def run_pass(options: RunOptions, shard: Shard | None = None, quiet: bool = False) -> PassResult:
    """Run the agent over the benchmark (or ``shard`` of it); returns the pass's result."""
    from finmcp.evaluator.agents.history import RecordedOutputs
    from finmcp.evaluator.harness.agent_factory import make_agent
    from finmcp.evaluator.harness.outbox import outbox_path, wait_drained
    from finmcp.evaluator.harness.runner import RunConfig
    from finmcp.evaluator.harness.spawn import SpawnConfig, SpawnError, Stack

    db, state, workdir = paths(options, shard)
    postgres = db is not None and is_postgres(db)
    if postgres and not options.spawn:
        raise EvalInputError(
            "--db postgresql://… needs --spawn (a running proxy ships on its own: give --db its outbox)"
        )
    schedule = load_run_schedule(options.faults)
    bench = load(options, workdir)
    refs = select(bench.refs, shard) if shard is not None else bench.refs
    samples = [r.id for r in refs]
    agent = make_agent(options.agent)
    outputs = RecordedOutputs(str(bench.recordings), bench.inventory) if bench.recordings else None
    stack = None
    outbox = outbox_path(workdir, options.run, shard.label if shard else "all") if postgres else None
    meta_db: Path | None = None if db is None or postgres else Path(db)  # where runs.meta is written
    try:
        if options.spawn:
            assert db is not None
            proxy_db = meta_db = outbox if outbox is not None else Path(db)
            proxy_db.parent.mkdir(parents=True, exist_ok=True)
            spawn = SpawnConfig(
                db=proxy_db,
                inventory=bench.inventory_name,
                recordings=bench.recordings,
                miss=options.server_miss,
                latency=options.server_latency,
                seed=options.seed,
                ship_to=db if postgres else None,
                extra_server_args=["--fault-schedule", str(options.faults)] if options.faults else [],
            )
            try:
                stack = Stack(spawn).start()
            except SpawnError as exc:
                raise EvalInputError(f"--spawn: {exc}") from None
            proxy_url = stack.proxy_base
        elif options.proxy is not None:
            proxy_url = options.proxy
        else:
            raise EvalInputError("give --proxy URL (a running finmcp-proxy) or --spawn")
        config = RunConfig(
            run_id=options.run,
            proxy_url=proxy_url,
            state_path=state,
            db_path=None if postgres or db is None else Path(db),
            concurrency=options.concurrency,
            trials=options.trials,
            resume=options.resume,
            group_tags=options.group_tags,
            progress=not quiet and options.progress,
            own_samples=set(samples) if shard is not None else None,
            on_tools=fingerprint_writer(options, bench, meta_db, schedule),
            position_meta=schedule is not None,
        )
        summary = run_loop(_drive(refs, agent, config, outputs), options.loop)
        if outbox is not None and db is not None:
            wait_drained(outbox, db, options.run, samples)  # before the proxy (and its shipper) stops
    finally:
        if stack is not None:
            stack.stop()
        if outputs is not None:
            outputs.close()
    return PassResult(summary, state, samples, shard, bench)


def load_run_schedule(path: str | None) -> Any:
    """The run's fault schedule (``--faults``), checked before anything starts; None without one."""
    if path is None:
        return None
    from finmcp.recordings.fault_schedule import ScheduleError, load_schedule

    try:
        return load_schedule(path)
    except ScheduleError as exc:
        raise EvalInputError(f"--faults: {exc}") from None


def fingerprint_writer(options: RunOptions, bench: Any, db: Path | None, schedule: Any = None) -> Any:
    """The runner's ``on_tools``: stores the run fingerprint in ``db``'s ``runs.meta`` (None: no SQLite
    store to write it in). The world seed is known only of a server this pass started (``--spawn``);
    ``schedule`` (a :class:`recordings.fault_schedule.FaultSchedule`) is stored with the run."""
    from finmcp.evaluator.harness.fingerprint import RunFingerprint, store_fingerprint

    if db is None:
        return None
    seed = options.seed if options.spawn else None
    base = RunFingerprint(options.bench, bench.recordings, seed, schedule)
    return lambda tools: store_fingerprint(db, options.run, base.complete(tools, options.agent))


async def _drive(refs: list[Any], agent: Any, config: Any, outputs: Any) -> Any:
    from finmcp.evaluator.harness.runner import run_agent

    try:
        return await run_agent(refs, agent, config, outputs)
    finally:
        await agent.aclose()
