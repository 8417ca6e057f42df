"""``finmcp-eval run --executor ray --shards N``: the shards of one run as Ray tasks.

Each task runs :func:`evaluator.harness.execute.run_pass` for its shard: it starts its own
``finmcp-server`` and ``finmcp-proxy`` next to it on that node's loopback (``--spawn`` is required)
and drives the agent; every proxy writes into the one trace store (``--db``: a SQLite file all
tasks can reach, i.e. one node, or ``postgresql://…`` for a cluster). The driver gathers the
summaries and, with ``--report-dir``, scores the whole run.

Ray is an optional extra (``pip install 'finmcp-kit[ray]'``). Without ``RAY_ADDRESS`` a local Ray is
started on 127.0.0.1 without the dashboard; with it, the tasks go to that cluster.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from finmcp.evaluator.errors import EvalInputError
from finmcp.evaluator.harness.execute import PassResult, load, paths, run_pass
from finmcp.evaluator.harness.options import RunOptions
from finmcp.evaluator.harness.reporting import print_failures, write_report
from finmcp.evaluator.harness.shards import Shard


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise EvalInputError(
            "--executor ray needs Ray, an optional extra: pip install 'finmcp-kit[ray]'"
        ) from None
    return ray


def ensure_ray(ray: Any) -> None:
    """Connect to ``RAY_ADDRESS`` or start a loopback-only local Ray (no dashboard) unless already up."""
    if ray.is_initialized():
        return
    if os.environ.get("RAY_ADDRESS"):
        ray.init()
        return
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False)


def _shard_task(options: RunOptions, index: int, count: int) -> PassResult:
    return run_pass(options, Shard(index, count), quiet=True)


def run_on_ray(options: RunOptions) -> int:
    """Run ``options.shards`` shards as Ray tasks; print each summary; score the run with ``--report-dir``."""
    count = options.shards
    if count is None or count < 1:
        raise EvalInputError("--executor ray needs --shards N (N >= 1)")
    if options.shard:
        raise EvalInputError("--executor ray runs every shard: give --shards N, not --shard")
    if not options.spawn:
        raise EvalInputError("--executor ray needs --spawn (each task starts its own server and proxy)")
    if options.state:
        raise EvalInputError("--executor ray: every shard keeps its own run state; leave out --state")
    db, _, workdir = paths(options, None)
    assert db is not None
    if not Path(workdir).is_absolute():  # Ray workers may start elsewhere: pin every path
        pinned_db = db if db.startswith(("postgresql://", "postgres://")) else str(Path(db).resolve())
        options = replace(options, db=pinned_db, workdir=str(Path(options.workdir or "out").resolve()))
        db, _, workdir = paths(options, None)
    assert db is not None
    bench = load(options, Path(workdir))  # installs the shipped recordings once, before the tasks start
    if options.recordings is None and bench.recordings is not None:
        options = replace(options, recordings=str(bench.recordings.resolve()))
    if options.inventory is None:  # chosen once here (an inferred one is said once, not by every task)
        options = replace(options, inventory=bench.inventory_name)
    ray = _import_ray()
    ensure_ray(ray)
    task = ray.remote(num_cpus=1)(_shard_task)
    results = ray.get([task.remote(options, i, count) for i in range(count)])
    for result in results:
        print(f"{result.summary.line()} [shard {result.shard}: {len(result.samples)} samples]")
        print_failures(result.summary, result.state)
    done = sum(r.summary.done for r in results)
    failed = sum(len(r.summary.errors) for r in results)
    print(f"run {options.run}: {count} shards on Ray, {done} done, {failed} failed")
    if options.out:
        states = [r.state for r in results]
        write_report(bench, db, states, options.run, Path(options.out), options.bootstrap, options.seed)
    return 0
