"""The agent matrix: each framework's real agent loop over finmcp-sim, the scripted oracle as its model.

One ``finmcp-server`` (finmcp-sim's inventory and recordings), one ``finmcp-eval model`` (the scripted
oracle) and one ``finmcp-proxy`` in front of both: its MCP door forwards to the server, its model door
(``--llm-upstream``) to the scripted model, so every tool call and every model exchange of every agent
lands in one trace store, tagged by run, sample and turn. Every framework (``FRAMEWORKS``, each in its
provisioned venv, ``tests/clients/provision.py``) gets tasks — one per (sample, turn) of a stratified
subset of :data:`SAMPLE_COUNT` samples, with the gold history, the tagged MCP URL and the tagged model
URL, both through the proxy (``drivers/common.py``) — under its own run id; the command-line agent is
run by ``finmcp-eval run --agent cmd:`` itself (:func:`run_cli`). Each run is then scored with
``finmcp-eval score`` and compared call by call with the gold plan (:func:`fidelity`), so what a
framework changes (a parallel step run one call at a time, an argument dropped, a retry, a renamed
tool) is counted; its tokens (:func:`tokens`) and answers (:func:`stored`) are read from the store.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from finmcp.evaluator.agents.history import RecordedOutputs, gold_messages
from finmcp.evaluator.benchmarks import load_records
from finmcp.evaluator.harness.session import tagged_url
from finmcp.evaluator.inputs.answers import stored_answers
from finmcp.evaluator.inputs.model import Reference
from finmcp.evaluator.inputs.trace_db import load_predictions_db
from finmcp.evaluator.tasks.build import model_url
from finmcp.recordings.model_exchanges import usage_by_sample
from finmcp.recordings.trace_store import open_trace_store
from tests.clients import provision

DRIVERS = Path(__file__).parent / "drivers"
SAMPLE_COUNT = 20
MAX_STEPS = 12
DRIVER_TIMEOUT_S = 240.0
CLI_TIMEOUT_S = 60.0
CLI_SAMPLES = 6
"""The command-line agent starts one process per task (~2 s of imports each, more on a busy machine):
it drives a stratified 6 of the 20 samples (9 tasks), which is what ``--agent cmd:`` has to show."""


@dataclass(frozen=True)
class Framework:
    """One row of the matrix: its provisioned environment, its driver and how it reaches the model."""

    name: str
    env: str
    driver: str
    api: str
    per_task: bool = False  # a program run by ``finmcp-eval run --agent cmd:`` (a process per task)
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
    refs: list[Reference], run: str, proxy_url: str, outputs: RecordedOutputs
) -> list[dict[str, Any]]:
    """One task per (sample, turn): gold history, tagged MCP URL, tagged model URL (the proxy's model door)."""
    tasks = []
    for ref in refs:
        for turn in range(len(ref.turns)):
            mcp = tagged_url(proxy_url, run, ref.id, turn)
            tasks.append(
                {
                    "sample": ref.id,
                    "turn": turn,
                    "trial": 0,
                    "messages": gold_messages(ref, turn, outputs),
                    "mcp_url": mcp,
                    "model_url": model_url(mcp),
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


def run_cli(
    framework: Framework, refs: list[Reference], proxy_url: str, db: Path, recordings: Path, workdir: Path
) -> Outcome:
    """The command-line agent, run by ``finmcp-eval run --agent cmd:'PYTHON cli_agent.py'`` through the
    running proxy (one process per task, the task on stdin, the doors' URLs in the environment, the
    answer on stdout); its answers (and a failed task's error) are read back from the store."""
    python = provision.python_of(framework.env)
    cmd = [sys.executable, "-m", "finmcp.evaluator", "run", "--bench", "finmcp-sim", "--proxy", proxy_url,
           "--run", framework.run, "--db", str(db), "--state", str(workdir / f"{framework.name}.state.jsonl"),
           "--recordings", str(recordings), "--agent", f"cmd:{python} {DRIVERS / framework.driver}",
           "--task-timeout", str(CLI_TIMEOUT_S), "--max-steps", str(MAX_STEPS), "--concurrency", "4",
           "--workdir", str(workdir), "--no-progress"]  # fmt: skip
    for ref in refs:
        cmd += ["--sample", ref.id]
    started = time.monotonic()
    env = {**os.environ, "OPENAI_API_KEY": "scripted", "NO_COLOR": "1"}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=DRIVER_TIMEOUT_S, check=False)
    outcome = Outcome(returncode=done.returncode, stderr=done.stderr + done.stdout[-2000:])
    for key, answer in stored(db, framework.run).items():
        outcome.answers[key] = answer.answer
        if answer.error:
            outcome.errors[key] = answer.error
    outcome.seconds = time.monotonic() - started
    return outcome


def stored(db: Path, run: str) -> dict[tuple[str, int], Any]:
    """``{(sample, turn): StoredAnswer}`` of trial 0 as scoring reads them: the ``answers`` table's rows,
    else the model door's final text of the turn (:func:`finmcp.evaluator.inputs.answers.stored_answers`)."""
    return {
        (sample, turn): answer
        for (sample, trial), turns in stored_answers(db, run).items()
        if trial == 0
        for turn, answer in turns.items()
    }


def tokens(db: Path, run: str) -> dict[str, int]:
    """The model door's log of ``run``: exchanges, input and output tokens (as the model reported them),
    exchanges without usage and failed ones."""
    with open_trace_store(db, readonly=True) as store:
        usage = usage_by_sample(store, run)
    keys = ("exchanges", "input_tokens", "output_tokens", "unreported", "errors")
    return {k: sum(int(getattr(u, k)) for u in usage.values()) for k in keys}


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
