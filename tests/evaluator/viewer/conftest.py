"""Fixtures of the viewer tests: a real trace store written by a real harness run through a real proxy.

``traced`` (one per session of this folder): finmcp-server + finmcp-proxy spawned on loopback, the
oracle run over four finmcp-sim samples twice (runs ``oracle`` and ``dropped``), then one call of
``dropped`` deleted (sample ``sim-multi-0001`` loses ``SearchFunds``: a missing call). The stack
stays up so a test can append calls through the proxy while a page is open. ``viewer``: the
``finmcp-eval view`` program over that store with ``--bench finmcp-sim``.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from finmcp.evaluator.agents import OracleAgent
from finmcp.evaluator.agents.history import RecordedOutputs
from finmcp.evaluator.harness.runner import RunConfig, run_agent
from finmcp.evaluator.harness.setup import load_bench
from finmcp.evaluator.harness.spawn import SpawnConfig, Stack
from finmcp.recordings.plumbing.launch import FinmcpProcess

SAMPLES = ["sim-multi-0001", "sim-multi-0050", "sim-single-0001", "sim-multi-0150"]
"""sim-multi-0001 opens with a parallel group of three calls; sim-multi-0150 has a group of five."""
DROPPED = ("sim-multi-0001", "SearchFunds")


@dataclass
class Traced:
    db: Path
    stack: Stack


@pytest.fixture(scope="session")
def traced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Traced]:
    work = tmp_path_factory.mktemp("viewer")
    bench = load_bench("finmcp-sim", work, samples=SAMPLES)
    db = work / "runs.sqlite"
    outputs = RecordedOutputs(str(bench.recordings), bench.inventory)
    spawn = SpawnConfig(db=db, inventory=bench.inventory_name, recordings=bench.recordings)
    with Stack(spawn) as stack:

        async def both() -> None:
            for run in ("oracle", "dropped"):
                config = RunConfig(run, stack.proxy_base, work / "state.jsonl", db, progress=False)
                summary = await run_agent(bench.refs, OracleAgent(), config, outputs)
                assert summary.done == len(SAMPLES), summary

        try:
            asyncio.run(both())
        finally:
            outputs.close()
        with sqlite3.connect(db) as con:
            deleted = con.execute(
                "DELETE FROM calls WHERE run_id = 'dropped' AND sample_id = ? AND tool = ?", DROPPED
            ).rowcount
        assert deleted == 1
        yield Traced(db, stack)


@pytest.fixture(scope="session")
def viewer(traced: Traced) -> Iterator[FinmcpProcess]:
    args = ["view", "--db", str(traced.db), "--bench", "finmcp-sim", "--host", "127.0.0.1", "--port", "0"]
    with FinmcpProcess("finmcp-eval", args, timeout=60, module="finmcp.evaluator.cli") as process:
        yield process
