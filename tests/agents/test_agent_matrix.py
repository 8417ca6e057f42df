"""The agent matrix: four frameworks' real agent loops and a command-line agent, the scripted oracle as model.

``tests/agents/matrix.py`` says what runs (one server, one ``finmcp-eval model``, one proxy with both
doors in front of them; each framework in its provisioned venv over 20 stratified finmcp-sim samples,
all five agents at once under distinct run ids; the command-line agent over 6 of them, through
``finmcp-eval run --agent cmd:``). Every run is scored with ``finmcp-eval score``; each test checks
one framework's row of the table in docs/agents.md: its official TF1, EMR and consist, the answers it
returned and the answers the store holds for scoring, the model's tokens the door logged, and what it
changed of the gold plan, measured from the trace (:func:`tests.agents.matrix.fidelity`). A framework
whose environment is not provisioned skips (fails under ``FINMCP_CI=1``).
"""

from __future__ import annotations

import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest

from finmcp.evaluator.agents.history import RecordedOutputs
from finmcp.evaluator.benchmarks import install_recordings, load_benchmark
from finmcp.recordings.answers import StoredAnswer
from finmcp.recordings.plumbing.launch import FinmcpProcess
from finmcp.tool_specs.inventory import load_inventory
from tests.agents.matrix import (
    FRAMEWORKS,
    Framework,
    Outcome,
    build_tasks,
    choose_samples,
    fidelity,
    missing,
    references_file,
    run_cli,
    run_framework,
    score,
    stored,
    subset,
    tokens,
)
from tests.support.postgres import require_or_skip
from tests.support.processes import Children

ANSWERS_MISSED = {
    # refuses an empty final answer ("Exceeded maximum output retries"): the ###STOP### turns, whose gold
    # reply is empty, end in an error instead of ""
    "pydantic-ai": "stop_turns",
}
NOT_A_FINAL_TEXT = {"smolagents"}
"""Frameworks whose answer reaches the model door as a tool call (smolagents' ``final_answer`` tool), not
as a final text: the door captures none of their answers (their drivers still return them)."""
SEQUENTIAL = {"openai-agents"}
"""Frameworks that run the calls of one assistant message one after another (none overlaps): every gold
parallel step arrives as single-call steps. The others run them concurrently; whether the proxy's
grouping sees the overlap depends on timing, so their kept count is measured, not pinned."""


@dataclass
class Row:
    """One framework's measured row."""

    framework: Framework
    outcome: Outcome
    gold: dict[tuple[str, int], str]
    report: dict[str, Any]
    fidelity: dict[str, int]
    tokens: dict[str, int]  # the model door's log of the run (tests.agents.matrix.tokens)
    stored: dict[tuple[str, int], StoredAnswer]  # what scoring reads: answers table, else the door's text

    def headline(self, key: str) -> float:
        return float(self.report["headline"][key]["value"])

    def captured(self) -> int:
        """Tasks whose stored answer (answers table or model door) is the gold reply."""
        return sum(self.stored[k].answer == v for k, v in self.gold.items() if k in self.stored)


@pytest.fixture(scope="module")
def rows(module_children: Children, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Row]:
    """Every framework that can run here, all at once against one stack (distinct run ids); scored."""
    work = tmp_path_factory.mktemp("agents")
    recordings, db = work / "finmcp-sim.recordings.sqlite", work / "runs.sqlite"
    install_recordings(recordings).close()
    server = module_children.server(
        ["--inventory", "finmcp65", "--recordings", str(recordings), "--latency", "none"]
    )
    inventory = load_inventory("finmcp65")
    refs = choose_samples(load_benchmark("finmcp-sim"))
    outputs = RecordedOutputs(str(recordings), inventory)
    runnable = [f for f in FRAMEWORKS if missing(f) is None]
    started = time.monotonic()
    with FinmcpProcess(
        "finmcp-eval", ["model", "--bench", "finmcp-sim", "--host", "127.0.0.1", "--port", "0"]
    ) as model:
        proxy = module_children.proxy(
            ["--upstream", server.url, "--db", str(db), "--llm-upstream", model.base]
        )

        def one(framework: Framework) -> Outcome:
            chosen = subset(refs, framework.samples)
            if framework.per_task:
                return run_cli(framework, chosen, proxy.url, db, recordings, work)
            return run_framework(framework, build_tasks(chosen, framework.run, proxy.url, outputs), work)

        with ThreadPoolExecutor(max_workers=len(runnable) or 1) as pool:  # all at once, one stack
            outcomes = dict(zip([f.name for f in runnable], pool.map(one, runnable), strict=True))
    print(f"agent-matrix: {len(runnable)} agents in {time.monotonic() - started:.0f} s")
    out: dict[str, Row] = {}
    for framework in runnable:
        chosen = subset(refs, framework.samples)
        bench = references_file(chosen, work / f"{framework.name}.references.jsonl")
        report = score(db, framework.run, bench, work / framework.name)
        gold = {(r.id, k): t.assistant for r in chosen for k, t in enumerate(r.turns)}
        measured = fidelity(db, framework.run, chosen, set(inventory.names))
        out[framework.name] = Row(
            framework,
            outcomes[framework.name],
            gold,
            report,
            measured,
            tokens(db, framework.run),
            stored(db, framework.run),
        )
    outputs.close()
    for name, row in out.items():  # the measured table (pytest -s shows it; docs/agents.md has it)
        answered = sum(row.outcome.answers.get(k) == v for k, v in row.gold.items())
        heads = [row.headline(k) for k in ("official.macro_F1", "paper.EMR", "official.consist_mean")]
        sources = Counter(a.source for a in row.stored.values())
        print(
            f"agent-matrix {name}: tf1/emr/consist {heads} returned {answered}/{len(row.gold)}"
            f" captured {row.captured()}/{len(row.gold)} {dict(sources)} tokens {row.tokens}"
            f" {row.fidelity} {row.outcome.seconds:.0f}s errors {dict(list(row.outcome.errors.items())[:2])}"
        )
    return out


@pytest.mark.slow
@pytest.mark.parametrize("framework", FRAMEWORKS, ids=[f.name for f in FRAMEWORKS])
def test_framework_runs_the_gold_plan_and_is_scored(framework: Framework, rows: dict[str, Row]) -> None:
    reason = missing(framework)
    if reason is not None:
        require_or_skip(reason)
    row = rows[framework.name]
    done = row.outcome
    context = f"{framework.name}: exit {done.returncode}, errors {dict(list(done.errors.items())[:3])}\n{done.stderr[-2000:]}"
    assert done.returncode == 0 and set(done.answers) == set(row.gold), context
    missed = sorted(key for key, text in row.gold.items() if done.answers.get(key) != text)
    stop_turns = sorted(key for key, text in row.gold.items() if not text)
    assert missed == (stop_turns if ANSWERS_MISSED.get(framework.name) == "stop_turns" else []), (
        missed,
        context,
    )
    # what scoring reads from the store: the CLI agent's answers table rows (the harness), the frameworks'
    # final texts logged by the model door
    if framework.name in NOT_A_FINAL_TEXT:
        assert row.stored == {}, row.stored
    else:
        assert row.captured() == len(row.gold), (row.captured(), len(row.gold))
        assert {a.source for a in row.stored.values()} == {"harness" if framework.per_task else "model"}
    # every model exchange logged through the door, with the usage the model reported
    assert row.tokens["exchanges"] >= len(row.gold) and row.tokens["errors"] == 0, row.tokens
    assert row.tokens["unreported"] == 0 and row.tokens["input_tokens"] > 0 < row.tokens["output_tokens"], (
        row.tokens
    )
    measured = row.fidelity
    # every gold call reached the server exactly once, under its own name and with its own arguments
    assert measured["calls"] == measured["gold_calls"] > 0, measured
    assert measured["extra"] == measured["missing"] == measured["unknown_tools"] == 0, measured
    assert row.headline("official.macro_F1") == 1.0
    if framework.name in SEQUENTIAL:  # each parallel step split: exact only where no step is parallel
        assert measured["parallel_kept"] == 0, measured
        refs = {r.id: r for r in load_benchmark("finmcp-sim")}
        samples = {sample for sample, _ in row.gold}
        serial = sum(all(len(g) == 1 for t in refs[s].turns for g in t.calls) for s in samples)
        assert row.headline("paper.EMR") == pytest.approx(serial / len(samples))
        assert row.headline("official.consist_mean") == 1.0
    else:
        assert measured["parallel_kept"] >= 1, measured
