"""The agent matrix: each framework's real agent loop over finmcp-sim, the scripted oracle as its model.

One ``finmcp-server`` (finmcp-sim's inventory and recordings), one ``finmcp-proxy`` writing the trace,
and one ``finmcp-eval model`` (the scripted oracle). Every framework (``FRAMEWORKS``, each in its
provisioned venv, ``tests/clients/provision.py``) gets the same tasks — one per (sample, turn) of
:data:`SAMPLE_COUNT` stratified samples, with the gold history, the tagged MCP URL and the tagged
model URL (``drivers/common.py``) — under its own run id. Each run is then scored with ``finmcp-eval
score`` and compared call by call with the gold plan (:func:`fidelity`), so what a framework changes
(a parallel step run one call at a time, an argument dropped, a retry, a renamed tool) is counted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from finmcp.evaluator.agents.history import RecordedOutputs, gold_messages
from finmcp.evaluator.benchmarks import load_records
from finmcp.evaluator.harness.session import tagged_url
from finmcp.evaluator.inputs.model import Reference
from finmcp.evaluator.inputs.trace_db import load_predictions_db
from tests.clients import provision

DRIVERS = Path(__file__).parent / "drivers"
SAMPLE_COUNT = 20
MAX_STEPS = 12
DRIVER_TIMEOUT_S = 240.0
CLI_TIMEOUT_S = 60.0
CLI_SAMPLES = 6
"""The command-line agent starts one process per task (~2 s of imports each, more on a busy machine):
it drives a stratified 6 of the 20 samples to keep the matrix well under two minutes."""


@dataclass(frozen=True)
class Framework:
    """One row of the matrix: its provisioned environment, its driver and how it reaches the model."""

    name: str
    env: str
    driver: str
    api: str
    per_task: bool = False  # a program started once per task (task on stdin, answer on stdout)
    samples: int = SAMPLE_COUNT  # how many of the chosen samples it drives (a stratified subset)

    @property
    def run(self) -> str:
        return f"agents-{self.name}"


FRAMEWORKS = [
    Framework("openai-agents", "openai-agents", "openai_agents_agent.py", "Responses, streamed"),
    Framework("pydantic-ai", "pydantic-ai-openai", "pydantic_ai_agent.py", "Chat Completions"),
    Framework("langgraph", "langgraph", "langgraph_agent.py", "Chat Completions, streamed"),
    Framework("smolagents", "smolagents", "smolagents_agent.py", "Chat Completions"),
    Framework("cli", "openai-agents", "cli_agent.py", "Chat Completions", per_task=True, samples=CLI_SAMPLES),
]


def missing(framework: Framework) -> str | None:
    """Why ``framework`` cannot run here (its environment is not provisioned), or None."""
    if provision.ready(framework.env):
        return None
    return f"environment {framework.env!r} is not provisioned in {provision.folder(framework.env)}; run python3 tests/clients/provision.py"


def choose_samples(refs: list[Reference], n: int = SAMPLE_COUNT) -> list[Reference]:
    """``n`` samples in file order: a quarter single-tool, the multi-tool ones mostly with a parallel
    group, the rest multi-turn (at most 4 turns, one with a parallel group first) — deterministic."""

    def parallel(r: Reference) -> bool:
        return any(len(g) > 1 for t in r.turns for g in t.calls)

    def spread(items: list[Reference], k: int) -> list[Reference]:
        return [items[(i * len(items)) // k] for i in range(k)] if k else []

    single = [r for r in refs if r.type == "single_tool"]
    multi_par = [r for r in refs if r.type == "multi_tool" and parallel(r)]
    multi_seq = [r for r in refs if r.type == "multi_tool" and not parallel(r)]
    turns = [r for r in refs if r.type == "multi_turn" and len(r.turns) <= 4]
    turns_par = [r for r in turns if parallel(r)]
    k_single, k_multi = n // 4, n // 4 + n // 8
    k_turn = n - k_single - k_multi - n // 8
    chosen = spread(single, k_single) + spread(multi_par, k_multi) + spread(multi_seq, n // 8)
    chosen += turns_par[:1] + spread([r for r in turns if r not in turns_par[:1]], k_turn - 1)
    ids = {r.id for r in chosen}
    return [r for r in refs if r.id in ids]


def subset(refs: list[Reference], n: int) -> list[Reference]:
    """A stratified ``n`` of the chosen samples (all of them when ``n`` covers them): by thirds,
    single-tool, multi-tool with a parallel group, and the shortest multi-turn ones, in file order."""
    if n >= len(refs):
        return list(refs)
    single = [r for r in refs if r.type == "single_tool"]
    multi = [r for r in refs if r.type == "multi_tool" and any(len(g) > 1 for t in r.turns for g in t.calls)]
    turns = sorted((r for r in refs if r.type == "multi_turn"), key=lambda r: len(r.turns))
    k = n // 3
    ids = {r.id for r in single[:k] + multi[:k] + turns[: n - 2 * k]}
    return [r for r in refs if r.id in ids]


def build_tasks(
    refs: list[Reference], run: str, proxy_url: str, model_base: str, outputs: RecordedOutputs
) -> list[dict[str, Any]]:
    """One task per (sample, turn): gold history, tagged MCP URL, tagged model URL."""
    tasks = []
    for ref in refs:
        for turn in range(len(ref.turns)):
            tasks.append(
                {
                    "sample": ref.id,
                    "turn": turn,
                    "trial": 0,
                    "messages": gold_messages(ref, turn, outputs),
                    "mcp_url": tagged_url(proxy_url, run, ref.id, turn),
                    "model_url": f"{model_base}/r/{run}/s/{ref.id}/t/{turn}/v1",
                    "max_steps": MAX_STEPS,
                }
            )
    return tasks


@dataclass
class Outcome:
    """A framework's run: per task its answer or error, the driver's exit status and stderr."""

    answers: dict[tuple[str, int], str | None] = field(default_factory=dict)
    errors: dict[tuple[str, int], str] = field(default_factory=dict)
    returncode: int | None = 0
    stderr: str = ""
    seconds: float = 0.0


def _lines(outcome: Outcome, stdout: str) -> None:
    for line in stdout.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            key = (row["sample"], int(row["turn"]))
            outcome.answers[key] = row["answer"]
            if row["error"]:
                outcome.errors[key] = row["error"]


def run_framework(framework: Framework, tasks: list[dict[str, Any]], workdir: Path) -> Outcome:
    """Run ``framework``'s driver over ``tasks`` (bounded by ``DRIVER_TIMEOUT_S``)."""
    python = str(provision.python_of(framework.env))
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "NO_COLOR": "1", "OPENAI_API_KEY": "scripted"}
    started = time.monotonic()
    outcome = Outcome()
    if framework.per_task:
        return _run_per_task(framework, tasks, python, env, started)
    path = workdir / f"{framework.name}.tasks.json"
    path.write_text(json.dumps(tasks, ensure_ascii=False), encoding="utf-8")
    proc = subprocess.Popen(
        [python, str(DRIVERS / framework.driver), str(path)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=DRIVERS,
    )
    try:
        stdout, stderr = proc.communicate(timeout=DRIVER_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
        stderr += f"\n(killed after {DRIVER_TIMEOUT_S} s)"
    _lines(outcome, stdout)
    outcome.returncode, outcome.stderr, outcome.seconds = proc.returncode, stderr, time.monotonic() - started
    return outcome


def _run_per_task(
    framework: Framework, tasks: list[dict[str, Any]], python: str, env: dict[str, str], started: float
) -> Outcome:
    """The command-line agent: one process per task, the turns of a sample in order, 4 samples at once."""
    outcome = Outcome()
    by_sample: dict[str, list[dict[str, Any]]] = {}
    for task in tasks:
        by_sample.setdefault(task["sample"], []).append(task)

    def one_sample(turns: list[dict[str, Any]]) -> None:
        for task in turns:
            key = (task["sample"], task["turn"])
            run_env = {**env, "OPENAI_BASE_URL": task["model_url"], "FINMCP_MCP_URL": task["mcp_url"]}
            try:
                done = subprocess.run(
                    [python, str(DRIVERS / framework.driver)],
                    input=json.dumps(task, ensure_ascii=False),
                    capture_output=True,
                    text=True,
                    env=run_env,
                    timeout=CLI_TIMEOUT_S,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                outcome.answers[key], outcome.errors[key] = None, f"timed out after {CLI_TIMEOUT_S} s"
                continue
            if done.returncode == 0:
                outcome.answers[key] = done.stdout.rstrip("\n")
            else:
                outcome.answers[key], outcome.errors[key] = (
                    None,
                    f"exit {done.returncode}: {done.stderr[-1500:]}",
                )

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(one_sample, by_sample.values()))
    outcome.seconds = time.monotonic() - started
    return outcome


def references_file(refs: list[Reference], path: Path) -> Path:
    """The chosen samples' finmcp-sim records as a references file (so the score covers them only)."""
    ids = {r.id for r in refs}
    lines = [json.dumps(rec, ensure_ascii=False) for rec in load_records("finmcp-sim") if rec["id"] in ids]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def score(db: Path, run: str, bench: Path, out: Path) -> dict[str, Any]:
    """``finmcp-eval score`` of one run against the chosen samples (JSON report, no bootstrap)."""
    cmd = [
        sys.executable,
        "-m",
        "finmcp.evaluator",
        "score",
        "--bench",
        str(bench),
        "--db",
        str(db),
        "--run",
        run,
    ]
    cmd += ["--report-dir", str(out), "--format", "json", "--bootstrap", "0"]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"score {run}: {done.stderr[-2000:]}"
    return dict(json.loads((out / "report.json").read_text(encoding="utf-8")))


def _key(tool: str, arguments: Any) -> str:
    return json.dumps([tool, arguments], sort_keys=True, ensure_ascii=False)


def fidelity(db: Path, run: str, refs: list[Reference], tool_names: set[str]) -> dict[str, int]:
    """What the trace shows the framework did with the gold plan, counted over every turn.

    ``gold_calls``/``calls``: planned and made; ``extra`` (made more often than planned: retries),
    ``missing`` (planned, never made), ``changed_arguments`` (a planned tool called with other
    arguments), ``unknown_tools`` (a name the server does not have: a renamed tool); ``parallel_groups``
    gold steps with several calls, of which ``parallel_kept`` arrived as one group in the trace."""
    preds = load_predictions_db(db, run).first_trial()
    counts: Counter[str] = Counter()
    for ref in refs:
        pred = preds.get(ref.id)
        for k, turn in enumerate(ref.turns):
            groups = pred.turns[k] if pred is not None and k < len(pred.turns) else []
            gold = Counter(_key(c.tool, c.arguments) for g in turn.calls for c in g)
            made = Counter(_key(c.tool, c.arguments) for g in groups for c in g)
            counts["gold_calls"] += sum(gold.values())
            counts["calls"] += sum(made.values())
            counts["extra"] += sum((made - gold).values())
            lost, surplus = gold - made, made - gold
            counts["missing"] += sum(lost.values())
            spare = Counter(json.loads(key)[0] for key in surplus.elements())
            for key in lost.elements():  # a planned call whose tool was called with other arguments
                tool = json.loads(key)[0]
                if spare[tool]:
                    spare[tool] -= 1
                    counts["changed_arguments"] += 1
            counts["unknown_tools"] += sum(1 for g in groups for c in g if c.tool not in tool_names)
            made_groups = [Counter(_key(c.tool, c.arguments) for c in g) for g in groups]
            for g in turn.calls:
                if len(g) > 1:
                    counts["parallel_groups"] += 1
                    want = Counter(_key(c.tool, c.arguments) for c in g)
                    counts["parallel_kept"] += any(not (want - mg) for mg in made_groups)
    return dict(counts)
