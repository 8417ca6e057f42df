"""Run ids, sample ids and other untrusted text in ``report.md``/``compare.md`` render as text (issue 30, item 3).

``finmcp-eval score`` and ``compare`` run on a trace whose run tag is ``a`<img src=x onerror=alert(1)>```
(a backtick to break out of the run's code span, then HTML) and whose samples and references carry
``<script>``. The Markdown is rendered by a real CommonMark renderer (markdown-it-py, CommonMark
preset with raw HTML enabled, as a previewer renders it, plus GFM tables): the HTML holds no element
but the report's own, no event handler, and each hostile id is shown as its text. What ``score`` and
``compare`` print on the terminal (the Markdown without ``--report-dir``, the stderr lines naming the
runs) holds no raw control character.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import markdown_it
import pytest

from finmcp.evaluator.cli import main
from finmcp.evaluator.reports.markdown_text import md_code, md_text

RUN_A = "a`<img src=x onerror=alert(1)>`\x1b[2J"
RUN_B = "<script>alert(1)</script>``b"
SAMPLE = "<script>alert(2)</script>`x`\x1b]0;pwned\x07"
SCENARIO = "<iframe src=x>|[link](javascript:alert(3))"
REFS = [
    {"id": f"s{i}", "type": "single_tool", "scenario": SCENARIO, "sub_scenario": "B",
     "turns": [{"user": "q", "calls": [[{"tool": "SearchFunds", "arguments": {"keyword": str(i)}}]], "assistant": "a"}]}
    for i in range(3)
]  # fmt: skip
REPORT_TAGS = {
    "h1",
    "h2",
    "p",
    "ul",
    "li",
    "code",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "strong",
    "em",
}
CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


class _Elements(HTMLParser):
    """Every start tag and attribute of an HTML fragment, and its text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attributes: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes += [name for name, _ in attrs]

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def rendered(md: str) -> _Elements:
    """``md`` as a CommonMark previewer shows it (raw HTML allowed, GFM tables), parsed back."""
    html = markdown_it.MarkdownIt("commonmark", {"html": True}).enable("table").render(md)
    elements = _Elements()
    elements.feed(html)
    return elements


def _assert_inert(md: str, *shown: str) -> None:
    page = rendered(md)
    assert set(page.tags) <= REPORT_TAGS, sorted(set(page.tags) - REPORT_TAGS)
    assert not page.attributes, page.attributes  # no onerror, src, href
    text = "".join(page.text)
    for value in shown:
        assert value in text, (value, text)
    assert not CONTROL.search(md), "raw control characters in the Markdown"


def _rows(run: str, samples: list[str]) -> list[dict]:
    return [{"run": run, "sample": s, "tool": "SearchFunds", "arguments": {"keyword": "0"}} for s in samples]


@pytest.fixture
def refs_file(tmp_path: Path) -> Path:
    path = tmp_path / "refs.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in REFS), encoding="utf-8")
    return path


def test_report_md_shows_a_hostile_run_id_and_sample_ids_as_text(refs_file, trace_db, tmp_path, capsys):
    db = trace_db(_rows(RUN_A, ["s0", "s1", SAMPLE]))
    out = tmp_path / "report"
    argv = ["score", "--bench", str(refs_file), "--db", str(db), "--run", RUN_A, "--bootstrap", "0"]
    assert main([*argv, "--report-dir", str(out), "--format", "md"]) == 0
    md = (out / "report.md").read_text("utf-8")
    _assert_inert(md, "a`<img src=x onerror=alert(1)>`\\x1b[2J", "<iframe src=x>|[link](javascript:alert(3))")
    assert "<script>alert(2)</script>`x`\\x1b]0;pwned\\x07" in "".join(rendered(md).text)  # the warning
    printed = capsys.readouterr()
    assert not CONTROL.search(printed.out) and not CONTROL.search(printed.err)
    assert main(argv) == 0  # the Markdown on stdout
    printed = capsys.readouterr()
    _assert_inert(printed.out, "a`<img src=x onerror=alert(1)>`\\x1b[2J")
    assert not CONTROL.search(printed.err)


def test_compare_md_shows_hostile_run_ids_as_text(refs_file, trace_db, tmp_path, capsys):
    db = trace_db(_rows(RUN_A, ["s0", "s1"]) + _rows(RUN_B, ["s0", "s2", SAMPLE]))
    out = tmp_path / "compare"
    argv = ["compare", "--bench", str(refs_file), "--db", str(db), "--run", RUN_A, "--run", RUN_B]
    assert main([*argv, "--bootstrap", "0", "--report-dir", str(out), "--format", "md"]) == 0
    md = (out / "compare.md").read_text("utf-8")
    _assert_inert(md, "a`<img src=x onerror=alert(1)>`\\x1b[2J", "<script>alert(1)</script>``b")
    printed = capsys.readouterr()
    assert not CONTROL.search(printed.out) and not CONTROL.search(printed.err)
    assert "(a`<img src=x onerror=alert(1)>`\\x1b[2J)" in printed.err


@pytest.mark.parametrize(
    "value",
    [
        "plain",
        "`",
        "``a``",
        " ` ",
        "a`b``c",
        "<b>x</b>",
        "\\`",
        "*em* _u_ ~~s~~",
        "[x](y) ![i](j)",
        "&amp; &#60;",
    ],
)
def test_code_spans_and_text_render_as_exactly_the_value(value):
    for form in (md_code(value), md_text(value)):
        page = rendered(f"before {form} after")
        assert page.tags == ["p"] + (["code"] if form.startswith("`") else []), (form, page.tags)
        assert "".join(page.text).rstrip("\n") == f"before {value} after", form


@pytest.mark.parametrize(
    "value", ["- item", "+ item", "> quote", "# title", "1. first", "2) second", "=", "| a |"]
)
def test_text_starts_no_block(value):
    page = rendered(f"| h |\n|---|\n| {md_text(value)} |\n\n- {md_text(value)}\n")
    assert page.tags == ["table", "thead", "tr", "th", "tbody", "tr", "td", "ul", "li"], (value, page.tags)
    assert "".join(page.text).count(value) == 2


def test_a_runs_failures_print_with_controls_visible(tmp_path, capsys):
    """``finmcp-eval run`` lists failed samples with the error an agent or server raised."""
    from types import SimpleNamespace

    from finmcp.evaluator.harness.reporting import print_failures

    errors = {SAMPLE: "upstream said \x1b[2J\r\x1b[Kall fine\u202e"}
    print_failures(SimpleNamespace(errors=errors), tmp_path / "state.jsonl")
    out = capsys.readouterr().out
    assert not CONTROL.search(out)
    assert "failed <script>alert(2)</script>`x`\\x1b]0;pwned\\x07: upstream said \\x1b[2J\\r\\x1b[Kall" in out
