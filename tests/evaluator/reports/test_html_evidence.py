"""The HTML report shows the evidence for every sample (calls with arguments, outputs folded and cut
with a count of what was left out, first error, first failed call), and ``compare`` renders a forest
plot with one row per scenario whose whiskers sit at the CI bounds."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from typing import Any

import pytest

from finmcp.evaluator.benchmarks import load_benchmark
from finmcp.evaluator.cli import main
from finmcp.evaluator.inputs.model import Call, Prediction, PredictionSet, Reference, ReferenceSet, Turn
from finmcp.evaluator.inputs.references import load_references
from finmcp.evaluator.metrics.compare import compare_runs
from finmcp.evaluator.metrics.options import EvalOptions
from finmcp.evaluator.reports.compare_html import forest_axis, forest_plot, render_compare_html
from finmcp.evaluator.reports.evidence import OUTPUT_LIMIT
from finmcp.evaluator.reports.html import HTML_OUTPUT_LIMIT, render_html
from finmcp.evaluator.reports.pipeline import evaluate
from tests.evaluator.test_cli import rows_from_refs


class Node:
    def __init__(self, tag: str, attrs: dict[str, str], parent: Node | None) -> None:
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Node] = []
        self.text: list[str] = []
        self.items: list[Node | str] = []  # text and children in document order

    def all_text(self) -> str:
        return "".join(i if isinstance(i, str) else i.all_text() for i in self.items)

    def find(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> list[Node]:
        out = []
        for c in self.children:
            classes = c.attrs.get("class", "").split()
            if (
                (tag is None or c.tag == tag)
                and (cls is None or cls in classes)
                and all(c.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items())
            ):
                out.append(c)
            out += c.find(tag, cls, **attrs)
        return out


VOID = {"meta", "br", "hr", "img", "input", "link"}


class Tree(HTMLParser):
    """A small DOM (stdlib parser) that fails on a closing tag that does not match."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.root = Node("#root", {}, None)
        self.cur = self.root
        self.feed(text)
        self.close()
        assert self.cur is self.root, f"unclosed <{self.cur.tag}>"

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs}, self.cur)
        self.cur.children.append(node)
        self.cur.items.append(node)
        if tag not in VOID:
            self.cur = node

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs}, self.cur)
        self.cur.children.append(node)
        self.cur.items.append(node)

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        assert self.cur.tag == tag, f"</{tag}> closes <{self.cur.tag}>"
        assert self.cur.parent is not None
        self.cur = self.cur.parent

    def handle_data(self, data: str) -> None:
        self.cur.text.append(data)
        self.cur.items.append(data)


def _ref(sid: str, groups: list[list[tuple[str, dict[str, Any]]]], scenario: str) -> Reference:
    calls = [[Call(t, a) for t, a in g] for g in groups]
    return Reference(sid, "multi_tool" if len(groups) > 1 else "single_tool", scenario, [Turn("q", calls)])


BIG = "x" * 5000


def _fixture() -> tuple[ReferenceSet, PredictionSet]:
    refs = [
        _ref("s-missing", [[("GetPrice", {"code": "600519"})], [("GetNews", {"topic": "rates"})]], "Markets"),
        _ref("s-failed", [[("GetFund", {"fund": "000957"})]], "Funds"),
        _ref("s-good", [[("GetFund", {"fund": "1"})]], "Funds"),
    ]
    preds = {
        "s-missing": [Prediction("s-missing", [[[Call("GetPrice", {"code": "600519"}, "ok", "price 1")]]])],
        "s-failed": [
            Prediction(
                "s-failed", [[[Call("GetFund", {"fund": "bad<code>"}, "tool_error", "error: " + BIG)]]]
            )
        ],
        "s-good": [Prediction("s-good", [[[Call("GetFund", {"fund": "1"}, "ok", {"nav": 1.5})]]])],
    }
    return ReferenceSet(refs, "finmcp"), PredictionSet(preds, "memory", "memory", "A")


def _sample(tree: Tree, sid: str) -> Node:
    (node,) = tree.root.find("details", "sample", data_sample=sid)
    return node


def test_sample_with_missing_call_shows_reference_call_and_first_error():
    report = evaluate(*_fixture(), EvalOptions(bootstrap=20))
    tree = Tree(render_html(report))
    node = _sample(tree, "s-missing")
    summary = node.find("summary")[0].all_text()
    assert "s-missing" in summary and "first error: missing at group 2" in summary
    (first,) = node.find("p", "fe")
    assert "turn 0, group 2: missing GetNews (no call made here)" in first.all_text()
    (missing,) = node.find("div", "missing")
    assert "GetNews" in missing.all_text() and '{"topic":"rates"}' in missing.all_text()
    matched = [d for d in node.find("div", "call") if "GetPrice" in d.all_text()]
    assert len(matched) == 2 and all('{"code":"600519"}' in d.all_text() for d in matched)
    (output,) = node.find("pre", "out")
    assert output.all_text() == "price 1"  # the output the agent saw, folded in its own <details>
    assert output.parent is not None and output.parent.tag == "details"
    assert not node.find("div", "failed")


def test_sample_with_failed_call_shows_status_and_cut_output():
    report = evaluate(*_fixture(), EvalOptions(bootstrap=20))
    ev = next(s for s in report.samples if s["id"] == "s-failed")["evidence"]
    assert ev["failed_call"]["status"] == "tool_error" and ev["failed_call"]["output_chars"] == 7 + len(BIG)
    assert len(ev["pred"][0][0][0]["output"]) == OUTPUT_LIMIT  # the JSON keeps a longer cut
    node = _sample(Tree(render_html(report)), "s-failed")
    assert "failed call" in node.find("summary")[0].all_text()
    (fc,) = node.find("p", "fc")
    assert "turn 0, group 1: GetFund → tool_error" in fc.all_text()
    (failed,) = node.find("div", "failed")
    assert 'GetFund {"fund":"bad<code>"}' in failed.all_text()  # escaped on the way, intact when read
    assert "tool_error" in failed.find("span", "st")[0].all_text()
    (pre,) = failed.find("pre", "out")
    (more,) = pre.find("span", "more")
    assert more.all_text() == f"… {7 + len(BIG) - HTML_OUTPUT_LIMIT} more characters"
    assert pre.all_text().startswith("error: xxx") and len("".join(pre.text)) == HTML_OUTPUT_LIMIT
    good = _sample(Tree(render_html(report)), "s-good")
    assert not good.find("p", "fe") and '{"nav":1.5}' in good.find("pre", "out")[0].all_text()


def _finmcp_sim_preds(refs: list[Reference]) -> PredictionSet:
    """Predictions replaying every reference call, except every 7th sample loses its first group."""
    by_sample = {}
    for i, ref in enumerate(refs):
        turns = [[[Call(c.tool, c.arguments, "ok", "out") for c in g] for g in t.calls] for t in ref.turns]
        if i % 7 == 0:
            first = next(t for t in turns if t)
            del first[0]
        by_sample[ref.id] = [Prediction(ref.id, turns)]
    return PredictionSet(by_sample, "memory", "memory", "replay")


@pytest.mark.slow
def test_every_sample_of_a_613_sample_run_is_in_the_page():
    refs = load_benchmark("finmcp-sim")
    assert len(refs) == 613
    report = evaluate(ReferenceSet(refs, "finmcp"), _finmcp_sim_preds(refs), EvalOptions(bootstrap=0))
    html = render_html(report)
    tree = Tree(html)
    ids = [d.attrs["data-sample"] for d in tree.root.find("details", "sample")]
    assert ids == [r.id for r in refs]
    wrong = [d for d in tree.root.find("details", "sample") if d.find("p", "fe")]
    assert len(wrong) == len(range(0, 613, 7))
    assert len(html) < 8_000_000


def _forest_checks(svg: Node, rows: list[dict[str, Any]]) -> None:
    left, width, m = (float(svg.attrs[k]) for k in ("data-left", "data-plot-width", "data-max"))
    assert m == forest_axis(rows)

    def x(v: float) -> float:
        return left + (v + m) / (2 * m) * width

    (zero,) = svg.find("line", "zero")
    assert float(zero.attrs["x1"]) == pytest.approx(x(0.0), abs=0.01)
    drawn = svg.find("g", "row")
    assert [g.attrs["data-label"] for g in drawn] == [r["label"] for r in rows]
    ys = [float(g.attrs["data-y"]) for g in drawn]
    assert ys == sorted(ys) and len(set(ys)) == len(ys)  # one row each, top to bottom
    for g, r in zip(drawn, rows, strict=True):
        (ci,) = g.find("line", "ci")
        assert float(ci.attrs["x1"]) == pytest.approx(x(r["lo"]), abs=0.01)
        assert float(ci.attrs["x2"]) == pytest.approx(x(r["hi"]), abs=0.01)
        assert len(g.find("line", "cap")) == 2
        (point,) = g.find("circle", "point")
        assert float(point.attrs["cx"]) == pytest.approx(x(r["diff"]), abs=0.01)
        assert x(r["lo"]) <= float(point.attrs["cx"]) + 0.01 <= x(r["hi"]) + 0.02


def test_forest_plot_rows_and_whiskers():
    rows = [
        {"label": "A", "N": 10, "diff": -0.2, "lo": -0.35, "hi": -0.05},
        {"label": "B", "N": 5, "diff": 0.1, "lo": -0.12, "hi": 0.3},
        {"label": "C", "N": 3, "diff": 0.0, "lo": 0.0, "hi": 0.0},
    ]
    tree = Tree(forest_plot(rows, "t"))
    (svg,) = tree.root.find("svg", "forest")
    assert forest_axis(rows) == pytest.approx(0.35)
    _forest_checks(svg, rows)


def test_compare_html_has_one_forest_row_per_scenario(tmp_path, shared_dir, trace_db):
    demo_refs = shared_dir / "finmcp" / "demo_infer.json"
    refs = load_references(demo_refs)
    db = trace_db(rows_from_refs(refs, "A") + rows_from_refs(refs, "B", drop_every=3))
    out = tmp_path / "cmp"
    argv = ["compare", "--bench", str(demo_refs), "--db", str(db), "--run", "A", "--run", "B"]
    assert main([*argv, "--report-dir", str(out), "--bootstrap", "200", "--format", "json,html"]) == 0
    result = json.loads((out / "compare.json").read_text("utf-8"))
    tree = Tree((out / "compare.html").read_text("utf-8"))
    scenarios = sorted({r.level1 for r in refs.samples})
    assert sorted(result["by_group"]["level1"]) == scenarios
    (chart,) = tree.root.find("div", "chart", data_group="level1")
    (svg,) = chart.find("svg", "forest")
    rows = [
        {"label": k, **{f: v["official.macro_F1"][f] for f in ("diff", "lo", "hi")}}
        for k, v in result["by_group"]["level1"].items()
    ]
    assert len(rows) == len(scenarios) and any(r["diff"] < 0 for r in rows)
    _forest_checks(svg, rows)
    tables = tree.root.find("table")
    assert "official.macro_F1" in tables[0].all_text() and "paper.EMR" in tables[1].all_text()


def test_compare_by_group_reuses_the_paired_bootstrap(shared_dir, trace_db):
    """The per-scenario numbers equal compare_runs on that scenario's references alone."""
    from finmcp.evaluator.inputs.trace_db import load_predictions_db

    demo_refs = shared_dir / "finmcp" / "demo_infer.json"
    refs = load_references(demo_refs)
    db = trace_db(rows_from_refs(refs, "A") + rows_from_refs(refs, "B", drop_every=3))
    pa, pb = load_predictions_db(db, "A"), load_predictions_db(db, "B")
    whole = compare_runs(refs, pa, pb, EvalOptions(bootstrap=100))
    scenario = sorted(whole["by_group"]["level1"])[0]
    only = ReferenceSet([r for r in refs.samples if r.level1 == scenario], refs.format)
    ids = {r.id for r in only.samples}
    sub_a = PredictionSet({k: v for k, v in pa.by_sample.items() if k in ids}, pa.format, pa.source, "A")
    sub_b = PredictionSet({k: v for k, v in pb.by_sample.items() if k in ids}, pb.format, pb.source, "B")
    alone = compare_runs(only, sub_a, sub_b, EvalOptions(bootstrap=100))
    got = whole["by_group"]["level1"][scenario]["official.macro_F1"]
    want = alone["paired_bootstrap"]["official.macro_F1"]
    assert got["diff"] == pytest.approx(want["diff"]) and got["lo"] == pytest.approx(want["lo"])
    assert render_compare_html(whole).endswith("</html>")
