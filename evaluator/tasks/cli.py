"""``finmcp-eval tasks`` (a run's tasks as JSONL) and ``finmcp-eval answers`` (answers back into the store).

``tasks`` writes one ``finmcp-task/1`` line per (sample, trial, turn) (:mod:`evaluator.tasks.model`)
for agents a team runs with its own orchestration; it reads the run's ``tools/list`` from the proxy
(FinToolBench's top-K is ranked over it). ``answers`` reads JSONL lines ``{"run", "sample", "turn",
"trial", "answer"[, "error"]}`` into the trace store's ``answers`` table, where ``finmcp-eval score``
finds them; a line naming a sample or turn the benchmark does not have, or that is not such an
object, is refused with its line number and the rest are imported (exit status 1 when any was).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

from finmcp.evaluator.errors import EvalInputError
from finmcp.recordings.plumbing.flags import add_bench, add_recordings, add_trace_store
from finmcp.recordings.plumbing.terminal import visible


def add_parsers(sub: Any) -> None:
    """Register ``tasks`` and ``answers`` on the ``finmcp-eval`` subparsers."""
    p = sub.add_parser("tasks", help="write a run's tasks (finmcp-task/1 JSONL) for an agent run elsewhere")
    add_bench(p, default="finmcp-sim", help="benchmark: finmcp-sim (default) or a references file")
    p.add_argument("--run", required=True, help="run id (the proxy's run tag)")
    p.add_argument("--proxy", required=True, metavar="URL", help="the finmcp-proxy the agent will call")
    p.add_argument("--output", metavar="FILE", help="JSONL file to write (default stdout)")
    p.add_argument(
        "--trials", type=int, default=1, help="tasks for k trials of every sample (/k/{trial} tags)"
    )
    p.add_argument("--limit", type=int, help="a stratified slice of N samples")
    p.add_argument("--sample", action="append", default=[], help="only this sample id (repeatable)")
    p.add_argument("--inventory", help="inventory for a references file (default: the references' own)")
    add_recordings(p, help="gold tool outputs for the history (default: a shipped benchmark's own)")
    p.add_argument("--max-calls", type=int, default=20, help="tool calls per turn (FinMCP: 20)")
    p.add_argument("--max-steps", type=int, help="assistant steps per turn (FinToolBench: 5)")
    p.add_argument(
        "--top-k", type=int, help="tools offered per task: BM25 top-K (default: 20 on FinToolBench, else all)"
    )
    p.add_argument("--workdir", default="out", help="where a shipped benchmark's recordings are installed")
    a = sub.add_parser("answers", help="store answers (JSONL) of an agent run elsewhere, for score")
    a.add_argument("file", metavar="FILE", help='JSONL: {"run","sample","turn","trial","answer"[,"error"]}')
    a.add_argument("--run", required=True, help="run id the answers belong to")
    add_trace_store(a, required=True, help="the run's SQLite trace store (the proxy's --db)")
    add_bench(a, default="finmcp-sim", help="benchmark the answers are for (checks samples and turns)")
    a.add_argument("--inventory", help="inventory for a references file")


def cmd_tasks(args: argparse.Namespace) -> int:
    """``finmcp-eval tasks``."""
    from finmcp.evaluator.agents.history import RecordedOutputs
    from finmcp.evaluator.harness.session import untagged_url
    from finmcp.evaluator.harness.setup import load_bench
    from finmcp.evaluator.tasks.build import run_tasks
    from finmcp.evaluator.tasks.model import Limits

    if args.trials < 1 or args.max_calls < 1 or (args.max_steps is not None and args.max_steps < 1):
        raise EvalInputError("--trials, --max-calls and --max-steps must be >= 1")
    if args.top_k is not None and args.top_k < 1:
        raise EvalInputError("--top-k must be >= 1")
    tools = _tools(untagged_url(args.proxy, args.run))  # an unreachable proxy is said before any loading
    bench = load_bench(
        args.bench, Path(args.workdir), args.inventory, args.recordings, args.limit, list(args.sample) or None
    )
    outputs = RecordedOutputs(str(bench.recordings), bench.inventory) if bench.recordings else None
    limits = Limits(args.max_calls, args.max_steps)
    count = 0
    with contextlib.ExitStack() as stack:
        out = (
            stack.enter_context(Path(args.output).open("w", encoding="utf-8")) if args.output else sys.stdout
        )
        if outputs is not None:
            stack.callback(outputs.close)
        tasks = run_tasks(bench.refs, args.run, args.proxy, tools, outputs, limits, args.trials, args.top_k)
        for task in tasks:
            out.write(task.to_json() + "\n")
            count += 1
    where = f" to {args.output}" if args.output else ""
    print(
        f"finmcp-eval tasks: {count} tasks ({len(bench.refs)} samples x {args.trials} trial(s), every turn) "
        f"of run {args.run!r}{where}",
        file=sys.stderr,
    )
    return 0


def _tools(url: str) -> list[dict[str, Any]]:
    """The run's ``tools/list`` through the proxy (as the harness reads it)."""
    import asyncio

    from finmcp.evaluator.harness.mcp_client import McpCallError, McpHttpClient

    async def fetch() -> list[dict[str, Any]]:
        client = McpHttpClient(max_connections=2)
        try:
            return await client.list_tools(url)
        finally:
            await client.aclose()

    try:
        return asyncio.run(fetch())
    except McpCallError as exc:
        raise EvalInputError(f"--proxy: cannot list the tools at {url}: {exc}") from None


def read_answer_lines(path: Path, run: str, turns_of: dict[str, int]) -> tuple[list[Any], list[str]]:
    """``(rows, errors)`` of an answers file: a :class:`recordings.answers.StoredAnswer` per good line,
    one message per refused line (``FILE:LINE: why``). ``turns_of``: sample id -> its turn count."""
    from finmcp.recordings.answers import StoredAnswer

    rows: list[StoredAnswer] = []
    errors: list[str] = []
    source = f"import:{path.name}"
    with path.open(encoding="utf-8", errors="replace") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                rows.append(_answer_row(json.loads(line), run, turns_of, source))
            except json.JSONDecodeError as exc:
                errors.append(f"{where}: not JSON: {exc}")
            except ValueError as exc:
                errors.append(f"{where}: {exc}")
    return rows, errors


def _answer_row(data: Any, run: str, turns_of: dict[str, int], source: str) -> Any:
    from finmcp.recordings.answers import StoredAnswer

    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, not {type(data).__name__}")
    if data.get("run", run) != run:
        raise ValueError(f"run {data.get('run')!r} is not --run {run!r}")
    sample = data.get("sample")
    if not isinstance(sample, str | int) or isinstance(sample, bool) or str(sample) == "":
        raise ValueError("field 'sample' (the sample id) is missing")
    sample = str(sample)
    turn, trial = data.get("turn", 0), data.get("trial", 0)
    for name, value in (("turn", turn), ("trial", trial)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"field {name!r}: {value!r} is not an integer >= 0")
    if sample not in turns_of:
        raise ValueError(f"sample {sample!r} is not in the benchmark")
    if turn >= turns_of[sample]:
        raise ValueError(f"sample {sample!r} has {turns_of[sample]} turn(s): no turn {turn}")
    answer, error = data.get("answer"), data.get("error")
    if answer is not None and not isinstance(answer, str):
        raise ValueError(f"field 'answer' must be a string or null, not {type(answer).__name__}")
    if error is not None and not isinstance(error, str):
        raise ValueError(f"field 'error' must be a string or null, not {type(error).__name__}")
    if answer is None and error is None:
        raise ValueError("neither 'answer' nor 'error'")
    return StoredAnswer(run, sample, trial, turn, answer, error or None, source)


def cmd_answers(args: argparse.Namespace) -> int:
    """``finmcp-eval answers``: the good lines stored, every refused one said; 1 when any was refused."""
    from finmcp.evaluator.benchmarks import open_references
    from finmcp.recordings.answers import put_answers
    from finmcp.recordings.errors import RecordingsError
    from finmcp.recordings.postgres.connection import is_postgres_url

    path = Path(args.file)
    if not path.is_file():
        raise EvalInputError(f"answers file not found: {path}")
    if is_postgres_url(args.db):
        raise EvalInputError(
            "--db: answers are stored in a SQLite trace store (postgresql:// has no answers table yet)"
        )
    if not Path(args.db).is_file():
        raise EvalInputError(f"--db: trace store not found: {args.db} (the proxy's --db of the run)")
    refs = open_references(args.bench, inventory_name=args.inventory or "")
    turns_of = {r.id: len(r.turns) for r in refs.samples}
    rows, errors = read_answer_lines(path, args.run, turns_of)
    for message in errors:
        print(f"finmcp-eval answers: refused {visible(message)}", file=sys.stderr)
    try:
        stored = put_answers(args.db, rows) if rows else 0
    except RecordingsError as exc:
        raise EvalInputError(str(exc)) from None
    print(
        f"finmcp-eval answers: {stored} answer(s) of run {args.run!r} stored in {args.db}"
        f"{f', {len(errors)} line(s) refused' if errors else ''}",
        file=sys.stderr,
    )
    return 1 if errors else 0
