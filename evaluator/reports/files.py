"""Writing a report's files (``report.json|md|html`` or ``compare.*``) and the line printed after."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path

from finmcp.evaluator.reports.html import render_html
from finmcp.evaluator.reports.markdown import render_markdown
from finmcp.evaluator.reports.model import Report, SampleCounts, headline

FORMATS = ("json", "md", "html")
"""Every format of a report (``--format``'s default)."""


def write_files(
    folder: Path, stem: str, formats: Iterable[str], json_text: str, md: str, html: Callable[[], str] | None
) -> None:
    """``{stem}.json``, ``{stem}.md`` and ``{stem}.html`` (those of ``formats``) under ``folder``;
    prints what it wrote."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    if "json" in formats:
        (folder / f"{stem}.json").write_text(json_text, "utf-8")
        written.append(f"{stem}.json")
    if "md" in formats:
        (folder / f"{stem}.md").write_text(md, "utf-8")
        written.append(f"{stem}.md")
    if "html" in formats and html is not None:
        (folder / f"{stem}.html").write_text(html(), "utf-8")
        written.append(f"{stem}.html")
    print(f"wrote {', '.join(str(folder / w) for w in written)}")


def write_report(
    report: Report, folder: Path, formats: Iterable[str] = FORMATS, md: str | None = None
) -> None:
    """A report's files under ``folder``, then its :func:`~evaluator.reports.model.headline` as one
    JSON line (what ``score --report-dir``, ``run --report-dir`` and ``demo`` print), after the sentence
    saying how many samples were scored and missing."""
    text = md if md is not None else render_markdown(report)
    write_files(folder, "report", formats, report.to_json(), text, lambda: render_html(report))
    print(SampleCounts.of_report(report).line())
    print(json.dumps(headline(report), ensure_ascii=False))
