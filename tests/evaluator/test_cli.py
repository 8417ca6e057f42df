"""finmcp-eval score / compare / demo end to end, reports, and error handling (exit 2, no traceback)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from finmcp.evaluator.cli import main
from finmcp.evaluator.inputs.references import load_references


def rows_from_refs(refs, run, drop_every=0, trial=0):
    """Trace rows replaying every reference call (optionally dropping every n-th call)."""
    rows, k = [], 0
    for ref in refs.samples:
        for t, turn in enumerate(ref.turns):
            for g, group in enumerate(turn.calls):
                for call in group:
                    k += 1
                    if drop_every and k % drop_every == 0:
                        continue
                    rows.append(
                        {
                            "run": run,
                            "sample": ref.id,
                            "turn": t,
                            "group": g,
                            "tool": call.tool,
                            "arguments": call.arguments,
                            "trial": trial,
                        }
                    )
    return rows


@pytest.fixture
def demo_refs(shared_dir) -> Path:
    return shared_dir / "finmcp" / "demo_infer.json"


def test_score_db_writes_three_reports(tmp_path, demo_refs, trace_db, capsys):
    refs = load_references(demo_refs)
    db = trace_db(rows_from_refs(refs, "perfect"))
    out = tmp_path / "out"
    code = main(
        [
            "score",
            "--bench",
            str(demo_refs),
            "--db",
            str(db),
            "--run",
            "perfect",
            "--report-dir",
            str(out),
            "--bootstrap",
            "200",
            "--seed",
            "3",
        ]
    )
    assert code == 0
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["official"]["overall"]["macro_F1"] == 1.0 and report["official"]["overall"]["N"] == 6
    assert (
        len(report["samples"]) == 6
        and report["samples"][0]["ref_groups"] == report["samples"][0]["pred_groups"]
    )
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "| **overall** | 6 |" in md and "macro_Precision" in md
    html = (out / "report.html").read_text(encoding="utf-8")
    assert html.count("<svg") >= 3 and "<polygon" in html  # radar, bars, CI chart
    assert (
        "<script" not in html and not re.search(r"""(src|href)=["']https?:""", html) and "@import" not in html
    )
    assert "账户与服务管理" in html and "GetStrategyAssetClassAnalysis" in html
    assert '"overall"' in capsys.readouterr().out


def test_score_prints_markdown_without_out(demo_refs, trace_db, capsys):
    refs = load_references(demo_refs)
    db = trace_db(rows_from_refs(refs, "r", drop_every=3))
    assert main(["score", "--bench", str(demo_refs), "--db", str(db), "--run", "r", "--bootstrap", "0"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# finmcp-eval report (finmcp)") and "Official FinMCP-Bench evaluation" in out


def test_score_repeated_trials_reports_pass_k(tmp_path, demo_refs, trace_db):
    refs = load_references(demo_refs)
    db = trace_db(rows_from_refs(refs, "r", trial=0) + rows_from_refs(refs, "r", drop_every=4, trial=1))
    out = tmp_path / "o"
    score_r = ["score", "--bench", str(demo_refs), "--db", str(db), "--run", "r"]
    score_r += ["--report-dir", str(out), "--bootstrap", "0"]
    assert main([*score_r, "--format", "json"]) == 0
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    trials = report["trials"]
    assert trials["trials"] == 2 and trials["pass_hat_k"]["pass^1"] > trials["pass_hat_k"]["pass^2"]
    assert trials["official_by_trial"]["0"]["macro_F1"] == 1.0 > trials["official_by_trial"]["1"]["macro_F1"]
    assert not (out / "report.html").exists()
    assert main([*score_r, "--format", "html"]) == 0
    assert "pass^2" in (out / "report.html").read_text(encoding="utf-8")


def test_score_official_prediction_file_alone(tmp_path, demo_refs):
    data = json.loads(demo_refs.read_text(encoding="utf-8"))
    for s in data:
        s["messages_pred"] = s["messages"]
    data.append({"error": True, "error_message": "x", "messages_pred": []})
    path = tmp_path / "demo_eval.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    out = tmp_path / "o"
    assert (
        main(
            ["score", "--preds", str(path), "--report-dir", str(out), "--format", "json", "--bootstrap", "0"]
        )
        == 0
    )
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["official"]["overall"]["N"] == 6 and len(report["coverage"]["dropped"]) == 1


def test_compare_two_runs_from_db_and_from_files(tmp_path, demo_refs, trace_db):
    refs = load_references(demo_refs)
    db = trace_db(rows_from_refs(refs, "A") + rows_from_refs(refs, "B", drop_every=2))
    out = tmp_path / "cmp"
    assert (
        main(
            [
                "compare",
                "--bench",
                str(demo_refs),
                "--db",
                str(db),
                "--run",
                "A",
                "--run",
                "B",
                "--report-dir",
                str(out),
                "--bootstrap",
                "300",
            ]
        )
        == 0
    )
    result = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    f1 = result["paired_bootstrap"]["official.macro_F1"]
    assert result["paired_samples"] == 6 and f1["diff"] < 0 and f1["hi"] <= 0
    assert result["mcnemar"]["paper.EMR"]["a_only"] >= 1 and result["mcnemar"]["paper.EMR"]["b_only"] == 0
    assert "Paired bootstrap" in (out / "compare.md").read_text(encoding="utf-8")
    # the same comparison from exported JSONL files
    paths = []
    for run in ("A", "B"):
        lines = []
        for ref in refs.samples:
            turns = [
                {
                    "turn": t,
                    "calls": [[{"tool": c.tool, "arguments": c.arguments} for c in g] for g in turn.calls],
                }
                for t, turn in enumerate(ref.turns)
            ]
            if run == "B":
                turns = turns[:1]
            lines.append(
                json.dumps(
                    {"run_id": run, "sample_id": ref.id, "trial": 0, "turns": turns}, ensure_ascii=False
                )
            )
        path = tmp_path / f"{run}.jsonl"
        path.write_text("\n".join(lines), encoding="utf-8")
        paths.append(str(path))
    out2 = tmp_path / "cmp2"
    assert (
        main(
            [
                "compare",
                "--bench",
                str(demo_refs),
                "--preds",
                paths[0],
                "--preds",
                paths[1],
                "--report-dir",
                str(out2),
                "--format",
                "json",
                "--bootstrap",
                "100",
            ]
        )
        == 0
    )
    result = json.loads((out2 / "compare.json").read_text(encoding="utf-8"))
    assert result["paired_bootstrap"]["official.macro_Recall"]["diff"] < 0  # B lost the later turns


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["score", "--bench", "nope.json", "--preds", "nope.jsonl"], "file not found"),
        (["score", "--bench", "{refs}"], "give predictions with --db DB --run R or with --preds FILE"),
        (["score", "--bench", "{refs}", "--db", "{db}"], "--db needs --run"),
        (["score", "--bench", "{refs}", "--db", "{db}", "--run", "zz"], "run 'zz' not found"),
        (["score", "--bench", "{refs}", "--db", "{db}", "--run", "A", "--format", "pdf"], "unknown format"),
        (
            ["score", "--bench", "{refs}", "--db", "{db}", "--run", "A", "--judge", "llm"],
            "--judge llm needs --llm-url URL and --llm-model NAME",
        ),
        (["compare", "--bench", "{refs}", "--db", "{db}", "--run", "A"], "exactly two --run"),
        (
            ["score", "--bench", "{refs}", "--db", "{db}", "--run", "A", "--inventory", "nosuch"],
            "--inventory nosuch",
        ),
    ],
)
def test_cli_errors_exit_2_with_a_clear_message(argv, message, demo_refs, trace_db, capsys):
    refs = load_references(demo_refs)
    db = trace_db(rows_from_refs(refs, "A"))
    argv = [a.format(refs=demo_refs, db=db) for a in argv]
    if "--judge" in argv:  # the judge is only built for FinToolBench runs: use its questions
        argv[argv.index("--bench") + 1] = str(
            demo_refs.parent.parent / "fintoolbench" / "questions_sample.jsonl"
        )
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def _one_call_run(tmp_path, trace_db, tool: str) -> tuple[str, str]:
    """A one-sample reference file whose only call is ``tool``, and a trace DB with run A."""
    refs = tmp_path / "refs.json"
    sample = {
        "id": "x1",
        "type": "single_tool",
        "scenario": "s",
        "turns": [{"user": "q", "calls": [[{"tool": tool}]]}],
    }
    refs.write_text(json.dumps([sample]))
    return str(refs), str(trace_db([{"run": "A", "sample": "x1", "tool": "T"}]))


def test_cli_bad_reference_names_sample_and_field(tmp_path, trace_db, capsys):
    refs, db = _one_call_run(tmp_path, trace_db, "")
    assert main(["score", "--bench", refs, "--db", db, "--run", "A"]) == 2
    assert "sample 'x1': field 'turns[0].calls[0][0].tool'" in capsys.readouterr().err


def test_cli_inventory_rejects_unknown_reference_tools(tmp_path, trace_db, capsys):
    refs, db = _one_call_run(tmp_path, trace_db, "MadeUpTool")
    assert main(["score", "--bench", refs, "--db", db, "--run", "A", "--inventory", "finmcp65"]) == 2
    assert "unknown tool 'MadeUpTool' (not in inventory 'finmcp65')" in capsys.readouterr().err


def test_argparse_errors_exit_2(capsys):
    assert main(["score", "--bootstrap", "many"]) == 2
    assert main([]) == 2
    assert main(["--help"]) == 0
    capsys.readouterr()


@pytest.mark.slow
def test_demo_runs_end_to_end_on_a_slice(capsys, tmp_path):
    code = main(["demo", "--limit", "30", "--out-dir", str(tmp_path), "--bootstrap", "0"])
    out = capsys.readouterr().out
    assert code == 0
    oracle = next(line for line in out.splitlines() if line.lstrip("| ").startswith("oracle"))
    assert oracle.count("1.000") >= 4, oracle  # TF1, TR, TP, EMR
    assert oracle.startswith("| oracle | 30 of 30 | 0 | "), oracle  # scored, missing
    assert "scored 30 of 30 samples; none missing" in out  # each agent's report line
    assert (tmp_path / "leaderboard.md").is_file()
    assert (tmp_path / "oracle" / "report.html").is_file()


def test_score_fintoolbench_run_renders_all_formats(tmp_path, shared_dir):
    questions = shared_dir / "fintoolbench" / "questions_sample.jsonl"
    refs = load_references(questions)
    lines = [
        {
            "id": ref.id,
            "question": ref.question,
            "execution_result": ref.ground_truth,
            "ground_truth": ref.ground_truth,
            "error": None,
            "tool_calls": [
                {"step": 1, "tool_name": c.tool, "parameters": {}, "output": "rows"}
                for c in ref.turns[0].calls[0]
            ],
        }
        for ref in refs.samples
    ]
    preds = tmp_path / "result_full.jsonl"
    preds.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines), encoding="utf-8")
    out = tmp_path / "o"
    argv = [
        "score",
        "--bench",
        str(questions),
        "--preds",
        str(preds),
        "--report-dir",
        str(out),
        "--bootstrap",
        "100",
        "--tool-manifest",
        str(shared_dir / "fintoolbench" / "tools.jsonl"),
    ]
    assert main(argv) == 0
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    cap = report["fintoolbench"]["fintoolbench"]["metrics"]["cap"]
    assert cap["tir"] == cap["tesr"] == cap["cer"] == 1.0 and report["fintoolbench"]["tool_metadata"] == 760
    assert report["tool_selection"]["overall"]["macro_F1"] == 1.0
    assert "## FinToolBench" in (out / "report.md").read_text(encoding="utf-8")
    assert "FinToolBench (judge: rules)" in (out / "report.html").read_text(encoding="utf-8")


def test_score_survives_when_every_prediction_is_an_error(tmp_path, demo_refs):
    data = json.loads(demo_refs.read_text(encoding="utf-8"))
    preds = [{"id": s["id"], "error": True, "messages_pred": []} for s in data]
    path = tmp_path / "all_errors.json"
    path.write_text(json.dumps(preds), encoding="utf-8")
    out = tmp_path / "o"
    assert (
        main(
            [
                "score",
                "--bench",
                str(demo_refs),
                "--preds",
                str(path),
                "--report-dir",
                str(out),
                "--bootstrap",
                "50",
            ]
        )
        == 0
    )
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["official"]["overall"]["N"] == 0 and len(report["coverage"]["dropped"]) == 6
    assert (out / "report.html").read_text(encoding="utf-8").endswith("</html>")


def test_score_reads_the_shipped_benchmark_by_name_and_gzipped_files(tmp_path):
    from finmcp.evaluator.benchmarks import data_path, open_references

    by_name = open_references("finmcp-sim")
    by_file = load_references(data_path("finmcp-sim", "references"))
    assert len(by_name.samples) == len(by_file.samples) == 613
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_bytes(b"not gzip")
    import pytest

    from finmcp.evaluator.errors import EvalInputError

    with pytest.raises(EvalInputError, match="not a valid gzip file"):
        load_references(bad)
