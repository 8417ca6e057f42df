"""Command line of ``finmcp-eval``: ``score``, ``compare``, ``export``, ``run``, ``tasks``, ``answers``,
``demo``, ``synth``, ``view`` and ``model``.

Bad input prints one clear message on stderr and exits with status 2 (no traceback).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from finmcp.evaluator.errors import EvalInputError
from finmcp.recordings.plumbing.flags import (
    add_bench,
    add_llm_endpoint,
    add_recordings,
    add_trace_store,
    add_version,
)
from finmcp.recordings.plumbing.pipes import quiet_on_broken_pipe
from finmcp.recordings.plumbing.terminal import visible, visible_json

if TYPE_CHECKING:
    from finmcp.evaluator.reports.model import Report

FORMATS = ("json", "md", "html")


def _load_inventory(name: str) -> Any:
    """``tool_specs.inventory.load_inventory(name)``, imported lazily; errors become EvalInputError."""
    try:
        from finmcp.tool_specs.inventory import load_inventory
    except ImportError as exc:
        raise EvalInputError(f"--inventory {name}: tool_specs inventories are unavailable ({exc})") from None
    try:
        return load_inventory(name)
    except Exception as exc:  # InventoryError, missing data files, bad manifests
        raise EvalInputError(f"--inventory {name}: {exc}") from None


def _try_inventory(name: str) -> Any:
    try:
        return _load_inventory(name)
    except EvalInputError:
        return None


def _formats(text: str) -> list[str]:
    formats = [f.strip() for f in text.split(",") if f.strip()]
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        raise EvalInputError(f"--format: unknown format(s) {bad or text!r}; choose from {', '.join(FORMATS)}")
    return formats


TRACE_STORE_HELP = "trace store: the proxy's SQLite file or a postgresql:// URL"


def _add_wait_flush(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--wait-flush",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="postgresql:// store: wait this long for proxies still shipping rows of the run, then "
        "refuse (0 = refuse at once; default 30)",
    )


def _add_common(p: argparse.ArgumentParser) -> None:
    add_bench(
        p,
        help="benchmark: finmcp-sim, or a references file (finmcp JSON/JSONL, official FinMCP-Bench JSON, "
        "FinToolBench JSONL)",
    )
    add_trace_store(p, help=TRACE_STORE_HELP)
    _add_wait_flush(p)
    p.add_argument(
        "--report-dir", dest="out", help="folder for the report files (default: Markdown on stdout)"
    )
    p.add_argument("--format", default="json,md,html", help="comma-separated: json,md,html")
    p.add_argument("--bootstrap", type=int, default=2000, help="bootstrap resamples (0 = no CIs)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--inventory", help="validate reference tool names against this inventory (name or file)")
    p.add_argument(
        "--skip-invalid", action="store_true", help="skip invalid reference samples (as the official script)"
    )
    p.add_argument("--missing", choices=("empty", "drop"), default="empty", help="samples without prediction")
    p.add_argument("--turn-base", type=int, default=0, help="number of the first turn in trace tags (0 or 1)")


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser with all subcommands."""
    parser = argparse.ArgumentParser(
        prog="finmcp-eval", description="Offline evaluator for FinMCP-Bench / FinToolBench"
    )
    add_version(parser)
    sub = parser.add_subparsers(dest="command", required=True)
    score = sub.add_parser("score", help="score one run")
    _add_common(score)
    score.add_argument("--run", help="run id (trace DB or exported JSONL)")
    score.add_argument(
        "--preds", help="predictions: exported JSONL, official FinMCP-Bench file or FinToolBench results"
    )
    score.add_argument("--judge", choices=("rules", "llm"), default="rules", help="FinToolBench judge")
    add_llm_endpoint(score, purpose="--judge llm")
    score.add_argument("--judge-cache", help="SQLite file caching judgments")
    score.add_argument("--no-progress", action="store_true", help="no judge progress on stderr")
    score.add_argument("--judge-repeats", type=int, default=3, help="SoftScore judgments per record")
    score.add_argument("--tool-manifest", help="FinToolBench tool manifest (tags for TMR/IMR/DMR)")
    score.add_argument(
        "--prices",
        metavar="FILE",
        help='model prices for the model door\'s cost: JSON {"MODEL": {"input": $, "output": $, "cached": $}}'
        " per million tokens (docs/evaluator.md)",
    )
    compare = sub.add_parser("compare", help="paired comparison of two runs")
    _add_common(compare)
    compare.add_argument("--run", action="append", default=[], help="run id; give twice (A then B)")
    compare.add_argument(
        "--preds", action="append", default=[], help="predictions file; give twice (A then B)"
    )
    export = sub.add_parser(
        "export", help="write a run as the official FinMCP-Bench file (references + messages_pred)"
    )
    export.add_argument("--format", choices=("finmcp",), default="finmcp", help="finmcp (the default)")
    add_bench(export, required=True, help="benchmark: finmcp-sim, or a FinMCP-Bench references file")
    add_trace_store(export, required=True, help=TRACE_STORE_HELP)
    _add_wait_flush(export)
    export.add_argument("--run", required=True, help="run id")
    export.add_argument("--output", dest="out", help="output JSON file (default stdout)")
    add_recordings(export, help="gold tool outputs for messages (default: a shipped benchmark's own)")
    export.add_argument("--inventory", help="validate reference tool names against this inventory")
    export.add_argument("--skip-invalid", action="store_true", help="leave out invalid reference samples")
    export.add_argument("--turn-base", type=int, default=0, help="number of the first turn in trace tags")
    from finmcp.evaluator.harness.cli import add_demo_arguments
    from finmcp.evaluator.harness.cli import add_parser as add_run_parser

    add_run_parser(sub)
    from finmcp.evaluator.tasks.cli import add_parsers as add_task_parsers

    add_task_parsers(sub)
    add_demo_arguments(sub.add_parser("demo", help="end-to-end demo on the embedded defaults"))
    from finmcp.evaluator.synth.cli import add_parser as add_synth_parser

    add_synth_parser(sub)
    from finmcp.evaluator.viewer.serve import add_parser as add_view_parser

    add_view_parser(sub)
    from finmcp.evaluator.scripted.serve import add_parser as add_model_parser

    add_model_parser(sub)
    return parser


def _predictions(
    args: argparse.Namespace, run: str | None, preds: str | None, observations: str = "fintoolbench"
):
    from finmcp.evaluator.inputs.predictions import load_predictions_file
    from finmcp.evaluator.inputs.trace_db import collect_predictions

    if preds:
        return load_predictions_file(preds, run, args.turn_base)
    from finmcp.evaluator.inputs.answers import with_stored_answers

    with _trace_rows(args, run) as rows:
        found = collect_predictions(rows, args.turn_base, observations)
    return with_stored_answers(found, args.db, str(run))


def _trace_rows(args: argparse.Namespace, run: str | None):
    """The opened rows of ``run`` in ``--db`` once no proxy is still shipping them (``--wait-flush``)."""
    from finmcp.evaluator.inputs.in_flight import wait_until_shipped
    from finmcp.evaluator.inputs.trace_rows import open_trace_rows

    if not args.db:
        raise EvalInputError("give predictions with --db DB --run R or with --preds FILE")
    if not run:
        raise EvalInputError("--db needs --run RUN_ID")
    rows = open_trace_rows(args.db, run)
    try:
        wait_until_shipped(rows, args.wait_flush)
    except BaseException:
        rows.close()
        raise
    return rows


def _references(args: argparse.Namespace, preds: Any, inventory: Any):
    from finmcp.evaluator.benchmarks import open_references
    from finmcp.evaluator.inputs.references import parse_references

    known = inventory.names if inventory is not None else None
    name = args.inventory or ""
    if args.bench:
        return open_references(
            args.bench, known_tools=known, inventory_name=name, skip_invalid=args.skip_invalid
        )
    if preds is not None and preds.records is not None:  # an official file embeds its references
        records = [r for r in preds.records if isinstance(r, dict) and not r.get("error")]
        return parse_references(records, preds.source, known, name, args.skip_invalid)
    raise EvalInputError(
        "--bench NAME_OR_FILE is required (only an official FinMCP-Bench prediction file embeds references)"
    )


def _options(args: argparse.Namespace, refs: Any, inventory: Any, fintool: bool):
    from finmcp.evaluator.metrics.argnorm import Canonicalizer, inventory_schema_lookup
    from finmcp.evaluator.metrics.fintoolbench import resolve_tool_metadata
    from finmcp.evaluator.metrics.options import EvalOptions

    if args.bootstrap < 0:
        raise EvalInputError("--bootstrap must be >= 0")
    schema_inv = inventory
    if schema_inv is None:
        names = {r.inventory for r in refs.samples if r.inventory}
        if len(names) == 1:
            schema_inv = _try_inventory(names.pop())
        elif refs.format == "finmcp_official":  # argument schemas only (no validation): the 79-tool superset
            schema_inv = _try_inventory("qieman79")
    opts = EvalOptions(
        bootstrap=args.bootstrap,
        seed=args.seed,
        missing=args.missing,
        canon=Canonicalizer(inventory_schema_lookup(schema_inv) if schema_inv is not None else None),
    )
    if fintool:
        from finmcp.evaluator.llm import Endpoint
        from finmcp.evaluator.metrics.judges import make_judge

        if getattr(args, "judge_repeats", 3) < 1:
            raise EvalInputError("--judge-repeats must be >= 1")
        opts.judge = make_judge(
            args.judge,
            Endpoint.from_args(args, "--judge llm") if args.judge == "llm" else None,
            args.judge_cache,
            progress=not getattr(args, "no_progress", False),
        )
        opts.judge_repeats = args.judge_repeats
        if args.tool_manifest and not Path(args.tool_manifest).is_file():
            raise EvalInputError(f"--tool-manifest: file not found: {args.tool_manifest}")
        opts.tool_meta, opts.tool_meta_source = resolve_tool_metadata(
            args.tool_manifest, inventory or _try_inventory("fintool760")
        )
    return opts


def cmd_score(args: argparse.Namespace) -> int:
    from finmcp.evaluator.reports.files import write_report
    from finmcp.evaluator.reports.markdown import render_markdown
    from finmcp.evaluator.reports.model import SampleCounts
    from finmcp.evaluator.reports.model_usage import attach_model_usage, load_prices
    from finmcp.evaluator.reports.pipeline import evaluate, is_fintoolbench, print_warnings

    formats = _formats(args.format)
    inventory = _load_inventory(args.inventory) if args.inventory else None
    if args.db and not args.preds:
        report = _score_trace(args, inventory)
        report = attach_model_usage(
            report, args.db, args.run, load_prices(args.prices) if args.prices else None
        )
    else:
        preds = _predictions(args, args.run, args.preds)
        refs = _references(args, preds, inventory)
        fintool = is_fintoolbench(refs) or preds.format == "fintoolbench_result"
        report = evaluate(refs, preds, _options(args, refs, inventory, fintool))
    print_warnings(report.warnings, "finmcp-eval score")
    md = render_markdown(report)
    if args.out is None:
        sys.stdout.write(md)
        print(f"finmcp-eval score: {SampleCounts.of_report(report).line()}", file=sys.stderr)
    else:
        write_report(report, Path(args.out), formats, md)
    return 0


def _score_trace(args: argparse.Namespace, inventory: Any) -> Report:
    """Score ``--run`` of ``--db`` streaming its rows (FinToolBench references: loaded whole, with the
    run's stored answers: :mod:`evaluator.inputs.answers`)."""
    from finmcp.evaluator.inputs.answers import with_stored_answers
    from finmcp.evaluator.inputs.trace_db import collect_predictions
    from finmcp.evaluator.reports.pipeline import evaluate, is_fintoolbench
    from finmcp.evaluator.reports.streaming import evaluate_trace

    with _trace_rows(args, args.run) as rows:
        refs = _references(args, None, inventory)
        fintool = is_fintoolbench(refs)
        opts = _options(args, refs, inventory, fintool)
        if fintool:
            preds = with_stored_answers(collect_predictions(rows, args.turn_base), args.db, args.run)
            return evaluate(refs, preds, opts)
        return evaluate_trace(refs, rows, args.turn_base, opts)


def cmd_compare(args: argparse.Namespace) -> int:
    from finmcp.evaluator.metrics.compare import compare_runs
    from finmcp.evaluator.reports.compare_html import render_compare_html
    from finmcp.evaluator.reports.files import write_files
    from finmcp.evaluator.reports.markdown import not_comparable, render_compare_markdown
    from finmcp.evaluator.reports.model import SampleCounts
    from finmcp.evaluator.reports.pipeline import compare_sample_counts, dumps, print_warnings

    formats = _formats(args.format)
    if args.preds:
        if len(args.preds) != 2:
            raise EvalInputError("compare needs exactly two --preds (A then B)")
        runs = args.run or [None, None]
        if len(runs) != 2:
            raise EvalInputError("with --preds, give --run twice or not at all")
        pa, pb = (_predictions(args, r, p) for r, p in zip(runs, args.preds, strict=True))
    else:
        if len(args.run) != 2:
            raise EvalInputError("compare needs exactly two --run (A then B) with --db")
        pa, pb = (_predictions(args, r, None) for r in args.run)
    inventory = _load_inventory(args.inventory) if args.inventory else None
    refs = _references(args, pa, inventory)
    opts = _options(args, refs, inventory, False)
    result = compare_runs(refs, pa, pb, opts)
    result["samples"] = compare_sample_counts(refs, pa, pb, opts.missing)
    print_warnings(result.get("warnings") or [], "finmcp-eval compare")
    md = render_compare_markdown(result)
    flag = not_comparable(result)
    if flag:  # the deltas are still written, marked so
        print(f"finmcp-eval compare: {flag}: A and B were measured on different things", file=sys.stderr)
    for side in ("a", "b"):
        print(
            f"finmcp-eval compare: {side.upper()} ({visible(result[side])}):"
            f" {SampleCounts(**result['samples'][side]).line()}",
            file=sys.stderr,
        )
    if args.out is None:
        sys.stdout.write(md)
    else:
        write_files(
            Path(args.out), "compare", formats, dumps(result), md, lambda: render_compare_html(result)
        )
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """``finmcp-eval export``: the official FinMCP-Bench file of a run (:mod:`evaluator.reports.finmcp_file`)."""
    import tempfile

    from finmcp.evaluator.agents.history import RecordedOutputs
    from finmcp.evaluator.benchmarks import BENCHMARKS, install_recordings, is_shipped, load_records
    from finmcp.evaluator.inputs.records import read_records
    from finmcp.evaluator.reports.finmcp_file import official_file

    inventory = _load_inventory(args.inventory) if args.inventory else None
    refs = _references(args, None, inventory)
    preds = _predictions(args, args.run, None, observations="finmcp")
    shipped = is_shipped(args.bench)
    raw = load_records(args.bench) if shipped else read_records(args.bench)[0]
    with tempfile.TemporaryDirectory(prefix="finmcp-export-") as tmp:
        recordings = args.recordings
        if recordings is None and shipped:
            recordings = str(Path(tmp) / "recordings.sqlite")
            install_recordings(recordings, args.bench).close()
        names = {r.inventory for r in refs.samples if r.inventory}
        inv = inventory or (_try_inventory(names.pop()) if len(names) == 1 else None)
        if shipped and inv is None:
            inv = _try_inventory(BENCHMARKS[args.bench]["inventory"])
        outputs = RecordedOutputs(recordings, inv) if recordings else None
        try:
            records, warnings = official_file(refs, preds, raw, outputs)
        finally:
            if outputs is not None:
                outputs.close()
    # C1, bidi and separator characters as JSON escapes: the same values, safe to print
    text = visible_json(json.dumps(records, ensure_ascii=False, indent=4)) + "\n"
    if args.out:
        Path(args.out).write_text(text, "utf-8")
    else:
        sys.stdout.write(text)
    for warning in [*preds.warnings, *warnings]:
        print(f"finmcp-eval export: warning: {warning}", file=sys.stderr)
    with_calls = sum(1 for r in records if r["messages_pred"])
    print(
        f"finmcp-eval export: {len(records)} samples ({with_calls} with calls, {len(records) - with_calls} "
        f"without: messages_pred []) of run {args.run!r}" + (f" to {args.out}" if args.out else ""),
        file=sys.stderr,
    )
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from finmcp.evaluator.harness.cli import demo_options
    from finmcp.evaluator.harness.demo import run_demo

    return run_demo(demo_options(args))


def cmd_run(args: argparse.Namespace) -> int:
    from finmcp.evaluator.harness.cli import run, run_options

    return run(run_options(args))


def cmd_tasks(args: argparse.Namespace) -> int:
    from finmcp.evaluator.tasks.cli import cmd_tasks as tasks

    return tasks(args)


def cmd_answers(args: argparse.Namespace) -> int:
    from finmcp.evaluator.tasks.cli import cmd_answers as answers

    return answers(args)


def cmd_synth(args: argparse.Namespace) -> int:
    from finmcp.evaluator.synth.cli import run

    return run(args)


def cmd_model(args: argparse.Namespace) -> int:
    from finmcp.evaluator.scripted.serve import model_options, run

    return run(model_options(args))


def cmd_view(args: argparse.Namespace) -> int:
    from finmcp.evaluator.viewer.serve import run, view_options

    return run(view_options(args))


@quiet_on_broken_pipe
def main(argv: list[str] | None = None) -> int:
    """Entry point of ``finmcp-eval``; returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed its message
        return int(exc.code or 0) if exc.code in (0, None) else 2
    handlers = {
        "score": cmd_score,
        "compare": cmd_compare,
        "export": cmd_export,
        "run": cmd_run,
        "tasks": cmd_tasks,
        "answers": cmd_answers,
        "demo": cmd_demo,
        "synth": cmd_synth,
        "view": cmd_view,
        "model": cmd_model,
    }
    try:
        return handlers[args.command](args)
    except EvalInputError as exc:
        print(f"finmcp-eval {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        if isinstance(exc, BrokenPipeError):
            raise
        print(f"finmcp-eval {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
