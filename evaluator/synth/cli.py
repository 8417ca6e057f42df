"""``finmcp-eval synth``: graph, chains, queries, trajectories, dialogues, build, stats, import, export."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from finmcp.evaluator.errors import EvalInputError
from finmcp.recordings.plumbing.flags import add_bench, add_llm_endpoint, add_recordings
from finmcp.tool_specs.jsonlines import JsonLineError, json_lines

SYNTH_MODEL = "gpt-4o-mini"


def add_parser(sub: Any) -> None:
    """Register ``synth`` and its subcommands on the ``finmcp-eval`` subparsers."""
    synth = sub.add_parser("synth", help="dataset synthesis and the shipped finmcp-sim benchmark")
    cmds = synth.add_subparsers(dest="synth_command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")

    g = cmds.add_parser("graph", help="mine the tool dependency graph from multi-tool traces and validate it")
    add_bench(
        g,
        action="append",
        default=[],
        help="benchmark or references file with multi-tool traces; repeatable (default: finmcp-sim)",
    )
    g.add_argument("--inventory", default="finmcp65")
    add_llm_endpoint(g, purpose="asking about edges the typed graph rejects", model_default=SYNTH_MODEL)
    g.add_argument("--output", help="write the validated graph as JSON")
    c = cmds.add_parser("chains", help="sample tool chains per sub-scenario")
    common(c)
    c.add_argument("--per-sub", type=int, default=5)
    c.add_argument("--output", required=True, help="chains JSONL")
    q = cmds.add_parser("queries", help="a user query per chain (templates, or an LLM with --llm-url)")
    common(q)
    q.add_argument("--chains", required=True)
    q.add_argument("--output", required=True)
    add_llm_endpoint(q, purpose="writing queries (templates without it)", model_default=SYNTH_MODEL)
    q.add_argument("--examples", help="reference file whose single-tool queries are in-context examples")
    t = cmds.add_parser("trajectories", help="execute queries with the scripted planner; keep valid ones")
    common(t)
    t.add_argument("--queries", required=True)
    t.add_argument("--output", required=True, help="references JSONL")
    add_recordings(t, help="recordings file to bake the outputs into")
    t.add_argument("--url", help="MCP endpoint (finmcp-server /mcp or finmcp-proxy); default: in process")
    t.add_argument(
        "--tag-template", help="tagged URL, e.g. http://127.0.0.1:8766/r/{run}/s/{sample}/t/{turn}/mcp"
    )
    t.add_argument("--run", default="synth", help="run id for tagged URLs")
    d = cmds.add_parser("dialogues", help="multi-turn samples by role play")
    common(d)
    d.add_argument("--per-sub", type=int, default=2)
    d.add_argument("--output", required=True)
    add_recordings(d, help="recordings file to bake the outputs into")
    d.add_argument("--url")
    d.add_argument("--tag-template")
    d.add_argument("--run", default="synth")
    b = cmds.add_parser("build", help="rebuild the finmcp-sim benchmark files")
    common(b)
    b.add_argument("--out-dir", required=True, help="output directory")
    b.add_argument("--check", action="store_true", help="compare the result with the shipped files")
    s = cmds.add_parser("stats", help="Table-1 figures and distributions")
    add_bench(s, help="benchmark or references file (default: finmcp-sim)")
    s.add_argument("--json", action="store_true")
    i = cmds.add_parser("import", help="official FinMCP-Bench or FinToolBench files -> reference sets")
    i.add_argument("--finmcp", nargs="*", default=[], help="official FinMCP-Bench JSON files")
    i.add_argument("--fintoolbench", help="FinToolBench questions JSONL")
    i.add_argument("--output", required=True, help="references JSONL")
    add_recordings(i, help="recordings file for the imported tool outputs (FinMCP files)")
    i.add_argument("--inventory", default="qieman79")
    e = cmds.add_parser("export", help="write the shipped benchmark as plain JSONL and a recordings DB")
    add_bench(e, default="finmcp-sim", help="shipped benchmark (default finmcp-sim)")
    e.add_argument("--output", required=True, help="references JSONL")
    add_recordings(e, help="recordings file to create")


def _read_jsonl(path: str) -> list[dict[str, Any]]:
    if not Path(path).is_file():
        raise EvalInputError(f"file not found: {path}")
    try:
        return [value for _, value in json_lines(Path(path).read_text("utf-8").splitlines())]
    except JsonLineError as exc:
        raise EvalInputError(f"{path}:{exc.number}: not valid JSON: {exc.error}") from None


def _write_jsonl(path: str, records: list[dict[str, Any]]) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), "utf-8")


def _builder(args: argparse.Namespace) -> Any:
    from finmcp.evaluator.synth.build import Builder
    from finmcp.evaluator.synth.executor import McpExecutor

    executor = None
    if getattr(args, "url", None) or getattr(args, "tag_template", None):
        executor = McpExecutor(args.url or "", args.run, args.tag_template)
    return Builder(args.seed, executor=executor)


def _bake(path: str | None, builder: Any, accepted: list[Any]) -> None:
    if not path:
        return
    from finmcp.recordings.store import RecordingStore

    with RecordingStore.open(path) as store, store.transaction():
        for item in accepted:
            for tool, arguments, result in item.calls:
                plain = {k: result.get(k) for k in ("content", "structuredContent", "isError")}
                spec = builder.inventory.get(tool)
                store.put_response(
                    builder.inventory.name,
                    tool,
                    arguments,
                    plain,
                    "simulated",
                    input_schema=spec.input_schema,
                )


def run(args: argparse.Namespace) -> int:
    """Dispatch one ``synth`` subcommand."""
    cmd = args.synth_command
    progress = not getattr(args, "no_progress", False)
    if cmd == "graph":
        return _graph(args)
    if cmd == "chains":
        from finmcp.evaluator.synth.stages import sample_chains

        chains = sample_chains(_builder(args), args.per_sub)
        _write_jsonl(args.output, chains)
        print(f"wrote {len(chains)} chains to {args.output}")
        return 0
    if cmd == "queries":
        from finmcp.evaluator.synth.stages import write_queries

        builder = _builder(args)
        writer = None
        if args.llm_url:
            from finmcp.evaluator.llm import Endpoint
            from finmcp.evaluator.synth.llm import LlmQueryWriter, PromptReplies

            examples = _examples(args.examples)
            writer = LlmQueryWriter(
                PromptReplies.connect(Endpoint.from_args(args, "synth queries --llm-url")),
                builder.inventory,
                examples,
            )
        queries = write_queries(builder, _read_jsonl(args.chains), writer)
        _write_jsonl(args.output, queries)
        print(f"wrote {len(queries)} queries to {args.output}")
        return 0
    if cmd == "trajectories":
        from finmcp.evaluator.synth.stages import run_trajectories

        builder = _builder(args)
        kept, dropped = run_trajectories(builder, _read_jsonl(args.queries), progress)
        _write_jsonl(args.output, [a.record for a in kept])
        _bake(args.recordings, builder, kept)
        print(f"kept {len(kept)} trajectories, dropped {len(dropped)}; wrote {args.output}")
        for item in dropped[:20]:
            print(f"  dropped {item['id']}: {item['reason']}", file=sys.stderr)
        return 0
    if cmd == "dialogues":
        from finmcp.evaluator.synth.stages import make_dialogues

        builder = _builder(args)
        accepted = make_dialogues(builder, args.per_sub, progress)
        _write_jsonl(args.output, [a.record for a in accepted])
        _bake(args.recordings, builder, accepted)
        print(f"wrote {len(accepted)} dialogues to {args.output}")
        return 0
    if cmd == "build":
        return _build(args, progress)
    if cmd == "stats":
        return _stats(args)
    if cmd == "import":
        return _import(args)
    return _export(args)


def _examples(path: str | None) -> list[str]:
    if not path:
        from finmcp.evaluator.benchmarks import load_benchmark

        refs = load_benchmark()
    else:
        from finmcp.evaluator.benchmarks import open_references

        refs = open_references(path).samples
    return [r.turns[0].user for r in refs if r.type == "single_tool"][:8]


def _graph(args: argparse.Namespace) -> int:
    from finmcp.evaluator.synth.toolgraph import mine_candidates, validate_candidates
    from finmcp.tool_specs.graph import DependencyGraph
    from finmcp.tool_specs.inventory import load_inventory

    inventory = load_inventory(args.inventory)
    if args.bench:
        from finmcp.evaluator.benchmarks import open_references

        refs = [r for path in args.bench for r in open_references(path).samples]
    else:
        from finmcp.evaluator.benchmarks import load_benchmark

        refs = load_benchmark()
    candidates = mine_candidates(refs)
    judge = None
    if args.llm_url:
        from finmcp.evaluator.llm import Endpoint
        from finmcp.evaluator.synth.llm import LlmEdgeJudge, PromptReplies

        judge = LlmEdgeJudge(
            PromptReplies.connect(Endpoint.from_args(args, "synth graph --llm-url")), inventory
        )
    typed = DependencyGraph.from_inventory(inventory)
    graph = validate_candidates(candidates, typed, judge)
    traces = sum(1 for r in refs if r.type == "multi_tool")
    print(f"multi-tool traces: {traces}; candidate edges: {len(candidates)}")
    counts = graph.counts()
    print(f"validated graph: {counts['nodes']} nodes, {counts['edges']} edges, density {counts['density']}")
    t = typed.counts()
    print(f"typed data-flow graph: {t['nodes']} nodes, {t['edges']} edges, density {t['density']}")
    if args.output:
        Path(args.output).write_text(json.dumps(graph.to_json(), ensure_ascii=False, indent=1), "utf-8")
        print(f"wrote {args.output}")
    return 0


def _build(args: argparse.Namespace, progress: bool) -> int:
    from finmcp.evaluator.synth.build import MANIFEST_FILE, RECORDINGS_FILE, REFERENCES_FILE, build

    manifest = build(args.seed, args.out_dir, progress=progress)
    public = {k: v for k, v in manifest.items() if not k.startswith("_")}
    print(json.dumps(public, ensure_ascii=False, indent=1))
    if args.check:
        from finmcp.evaluator.benchmarks import data_path

        same = all(
            (Path(args.out_dir) / name).read_bytes() == data_path("finmcp-sim", kind).read_bytes()
            for name, kind in (
                (REFERENCES_FILE, "references"),
                (RECORDINGS_FILE, "recordings"),
                (MANIFEST_FILE, "manifest"),
            )
        )
        print("identical to the shipped files" if same else "DIFFERS from the shipped files")
        return 0 if same else 1
    return 0


def _stats(args: argparse.Namespace) -> int:
    from finmcp.evaluator.synth.stats import render, table1
    from finmcp.tool_specs.inventory import load_inventory

    if args.bench:
        from finmcp.evaluator.benchmarks import open_references

        refs = open_references(args.bench).samples
    else:
        from finmcp.evaluator.benchmarks import load_benchmark

        refs = load_benchmark()
    names = {r.inventory for r in refs if r.inventory}
    inventory = load_inventory(names.pop()) if len(names) == 1 else None
    stats = table1(refs, inventory)
    print(json.dumps(stats, ensure_ascii=False, indent=1) if args.json else render(stats), end="")
    return 0


def _import(args: argparse.Namespace) -> int:
    from finmcp.evaluator.synth.importers import import_fintoolbench, import_official

    if bool(args.finmcp) == bool(args.fintoolbench):
        raise EvalInputError("give either --finmcp FILE... or --fintoolbench FILE")
    if args.finmcp:
        summary = import_official(args.finmcp, args.output, args.recordings, args.inventory)
        for line in summary["recordings"]:
            print(line)
    else:
        summary = import_fintoolbench(args.fintoolbench, args.output)
    for warning in summary["warnings"]:
        print(f"warning: {warning}", file=sys.stderr)
    print(f"wrote {summary['references']} references to {args.output}")
    return 0


def _export(args: argparse.Namespace) -> int:
    from finmcp.evaluator.benchmarks import install_recordings, load_records

    records = load_records(args.bench)
    _write_jsonl(args.output, records)
    print(f"wrote {len(records)} references to {args.output}")
    if args.recordings:
        with install_recordings(args.recordings, args.benchmark) as store:
            print(f"wrote {store.count()} recordings to {args.recordings}")
    return 0
