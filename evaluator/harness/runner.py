"""Drive an agent over references through the proxy: samples concurrently, turns and steps in order.

For each (sample, trial) the runner walks the turns; for turn k it gives the agent the gold prefix
(turns 0..k-1, as FinMCP-Bench's inference does), the tools from the run's ``tools/list``, and a
session on ``/r/{run}/s/{sample}[/k/{trial}]/t/{k}/mcp``. A sample that raises is recorded as an
error in the run state and the run goes on. Each sample's answers (and a failed turn's error) also go
to the trace store's ``answers`` table when it is a SQLite file (:mod:`recordings.answers`), where
``finmcp-eval score`` finds them. The run state also keeps each turn's stop reason
(``stopped``) and the agent's events about the model (``agent_events``, each with its ``turn``).
"""

from __future__ import annotations

import asyncio
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from finmcp.evaluator.agents.base import Agent, TurnContext
from finmcp.evaluator.agents.history import OutputLookup, gold_messages
from finmcp.evaluator.errors import EvalInputError
from finmcp.evaluator.harness.mcp_client import McpHttpClient
from finmcp.evaluator.harness.session import HarnessSession, tagged_url, untagged_url
from finmcp.evaluator.harness.state import RunState
from finmcp.evaluator.inputs.model import Reference
from finmcp.evaluator.progress import Progress
from finmcp.recordings.answers import AnswerStore, StoredAnswer
from finmcp.recordings.errors import RecordingsError
from finmcp.recordings.trace_store import open_trace_store

PARTIAL_SUFFIX = "~partial"
"""Calls of an interrupted sample are moved to run ``{run}~partial`` before it is re-run."""


@dataclass
class RunConfig:
    """How to drive one run."""

    run_id: str
    proxy_url: str
    state_path: Path
    db_path: Path | None = None
    """The proxy's trace DB, when known (needed to set aside partial traces on --resume)."""
    concurrency: int = 8
    trials: int = 1
    resume: bool = False
    group_tags: bool = True
    progress: bool = True
    own_samples: set[str] | None = None
    """A shard's sample ids: the new-run check and --resume's set-aside look at these only (None: all)."""
    on_tools: Callable[[list[dict[str, Any]]], None] | None = None
    position_meta: bool = False
    """Send each call's tags and positions in ``_meta`` (a run with a fault schedule; :class:`HarnessSession`)."""
    """Called with the run's ``tools/list`` before the first sample (the run fingerprint is stored there)."""


@dataclass
class RunSummary:
    """What a run did."""

    run_id: str
    samples: int = 0
    done: int = 0
    errors: dict[str, str] = field(default_factory=dict)
    skipped: int = 0
    calls: int = 0
    seconds: float = 0.0

    def line(self) -> str:
        """One human-readable line."""
        return (
            f"run {self.run_id}: {self.done} done, {len(self.errors)} failed, {self.skipped} skipped "
            f"(resume), {self.calls} calls in {self.seconds:.1f} s"
        )


def check_run_is_new(db_path: Path | None, run_id: str, samples: set[str] | None = None) -> None:
    """Refuse to mix a new run into an existing one of the same id (use --resume or another --run).

    With ``samples`` (a shard's), only calls of those samples count: other shards of the run may
    already be writing theirs."""
    if db_path is None or not Path(db_path).is_file():
        return
    try:
        with open_trace_store(db_path, readonly=True) as store:
            per_sample = store.calls_per_sample(run_id)
    except RecordingsError:
        per_sample = {}
    count = sum(n for sample, n in per_sample.items() if samples is None or str(sample) in samples)
    if count:
        where = "this shard's samples of " if samples is not None else ""
        raise EvalInputError(
            f"run {run_id!r} already has {count} call(s) of {where}it in {db_path}; use --resume to complete it or another --run"
        )


def set_aside_partial(
    db_path: Path, run_id: str, keep: set[tuple[str, int]], samples: set[str] | None = None
) -> int:
    """Move the calls of unfinished samples of ``run_id`` to run ``{run_id}~partial``; returns how many.

    With ``samples`` (a shard's), other samples' calls are left alone (another shard owns them)."""
    try:
        with open_trace_store(db_path) as store:
            return store.set_aside(run_id, run_id + PARTIAL_SUFFIX, keep, samples)
    except RecordingsError as exc:
        raise EvalInputError(f"trace DB {db_path}: cannot set aside partial samples: {exc}") from None


async def run_agent(
    refs: list[Reference],
    agent: Agent,
    config: RunConfig,
    outputs: OutputLookup | None = None,
    on_sample: Callable[[dict[str, Any]], None] | None = None,
) -> RunSummary:
    """Run ``agent`` on every (sample, trial) not yet finished; returns the summary."""
    state = RunState(config.state_path)
    finished = state.finished(config.run_id) if config.resume else set()
    if config.resume:
        if config.db_path is not None and Path(config.db_path).is_file():
            set_aside_partial(config.db_path, config.run_id, finished, config.own_samples)
    else:
        check_run_is_new(config.db_path, config.run_id, config.own_samples)
    jobs = [(ref, k) for ref in refs for k in range(config.trials) if (ref.id, k) not in finished]
    summary = RunSummary(
        config.run_id, samples=len(refs) * config.trials, skipped=len(refs) * config.trials - len(jobs)
    )
    client = McpHttpClient(max_connections=max(4, config.concurrency * 4))
    answer_store = open_answer_store(config.db_path)
    start = time.monotonic()
    try:
        tools = await client.list_tools(untagged_url(config.proxy_url, config.run_id))
        if config.on_tools is not None:
            config.on_tools(tools)
        limiter = asyncio.Semaphore(max(1, config.concurrency))
        with Progress(config.run_id, len(jobs), enabled=config.progress, unit="samples") as bar:

            async def job(ref: Reference, trial: int) -> None:
                async with limiter:
                    record = await _run_sample(ref, trial, agent, config, client, tools, outputs)
                store_answers(answer_store, record)
                state.append(record)
                summary.calls += record["calls"]
                if record["status"] == "done":
                    summary.done += 1
                else:
                    summary.errors[f"{ref.id}#{trial}"] = record["error"]
                if on_sample is not None:
                    on_sample(record)
                bar.advance()

            await asyncio.gather(*(job(ref, k) for ref, k in jobs))
    finally:
        summary.seconds = time.monotonic() - start
        state.close()
        if answer_store is not None:
            answer_store.close()
        await client.aclose()
    return summary


async def _run_sample(
    ref: Reference,
    trial: int,
    agent: Agent,
    config: RunConfig,
    client: McpHttpClient,
    tools: list[dict[str, Any]],
    outputs: OutputLookup | None,
) -> dict[str, Any]:
    start = time.monotonic()
    record: dict[str, Any] = {"run": config.run_id, "sample": ref.id, "trial": trial, "agent": agent.name}
    answers: list[str] = []
    stopped: list[str] = []
    events: list[dict[str, Any]] = []
    sessions: list[HarnessSession] = []
    trial_tag = trial if config.trials > 1 else None
    sample_calls = [0]
    try:
        for turn in range(len(ref.turns)):
            url = tagged_url(config.proxy_url, config.run_id, ref.id, turn, trial_tag)
            place = _place(config.run_id, ref.id, trial, turn) if config.position_meta else None
            sessions.append(HarnessSession(client, url, config.group_tags, place, sample_calls))
            result = await agent.run_turn(
                _context(config.run_id, ref, turn, trial, tools, outputs, sessions[-1])
            )
            answers.append(result.answer)
            stopped.append(result.stopped)
            events += [{"turn": turn, **event} for event in result.events]
        record.update(status="done", error=None)
    except Exception as exc:  # one sample's failure never aborts the run
        record.update(status="error", error=f"{type(exc).__name__}: {exc}", where=_where(exc))
    calls = sum(s.calls_made for s in sessions)
    record.update(answers=answers, calls=calls, seconds=round(time.monotonic() - start, 4), stopped=stopped)
    if events:
        record["agent_events"] = events
    return record


def _context(
    run: str,
    ref: Reference,
    turn: int,
    trial: int,
    tools: list[dict[str, Any]],
    outputs: OutputLookup | None,
    session: HarnessSession,
) -> TurnContext:
    return TurnContext(ref, turn, trial, tools, gold_messages(ref, turn, outputs), session, run)


def open_answer_store(db_path: Path | None) -> AnswerStore | None:
    """The ``answers`` table of the run's SQLite trace store (None: no such file known)."""
    if db_path is None or not Path(db_path).is_file():
        return None
    try:
        return AnswerStore.open(db_path)
    except RecordingsError as exc:
        raise EvalInputError(f"trace DB {db_path}: cannot store answers: {exc}") from None


def store_answers(store: AnswerStore | None, record: dict[str, Any]) -> None:
    """Write a finished sample's answers (and a failed turn's error) into ``store``; a write that fails
    is noted in ``record`` (``answers_stored``: the error), never fatal (the run state has them too)."""
    if store is None:
        return
    run, sample, trial = record["run"], str(record["sample"]), int(record["trial"])
    rows = [StoredAnswer(run, sample, trial, turn, text) for turn, text in enumerate(record["answers"])]
    if record["status"] != "done":
        rows.append(StoredAnswer(run, sample, trial, len(rows), None, record["error"]))
    try:
        store.put(rows)
    except RecordingsError as exc:
        record["answers_stored"] = str(exc)


def _place(run: str, sample: str, trial: int, turn: int) -> dict[str, Any]:
    from finmcp.recordings.fault_schedule import RUN_META, SAMPLE_META, TRIAL_META, TURN_META

    return {RUN_META: run, SAMPLE_META: sample, TRIAL_META: trial, TURN_META: turn}


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else ""
