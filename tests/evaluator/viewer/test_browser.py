"""The viewer in a real browser: headless Chromium driven by Playwright over a real harness run.

What a person sees: the runs and the sample list, one bar per call with the parallel group's bars
overlapping in time, the reference's missing call marked, two runs side by side, and calls logged by
a real proxy appearing on an open page without a reload. With ``FINMCP_VIEWER_SCREENSHOTS=DIR`` the
runs page and a sample page are also saved as PNG there (how docs/images/ was made).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from finmcp.recordings.plumbing.launch import FinmcpProcess
from tests.evaluator.viewer.conftest import DROPPED, SAMPLES, Traced
from tests.support.browser import chromium_context
from tests.support.rpc import modern_post, tool_call

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A Chromium page context (fresh profile), or a skip (a failure under CI) without Chromium/Playwright."""
    with chromium_context(1280, 860) as context:
        yield context


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    yield page
    page.close()
    assert not errors, errors


def _shot(page: Any, name: str) -> None:
    folder = os.environ.get("FINMCP_VIEWER_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / name), full_page=True)


def expect(locator: Any) -> Any:
    """Playwright's retrying assertions (the page's CSP forbids the string predicates of wait_for_function)."""
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(locator)


def test_runs_and_sample_list(page: Any, viewer: FinmcpProcess) -> None:
    page.goto(viewer.endpoint("/"))
    page.wait_for_selector("tr.run-row")
    assert sorted(page.locator("tr.run-row").evaluate_all("rows => rows.map(r => r.dataset.run)")) == [
        "dropped",
        "oracle",
    ]
    _shot(page, "viewer-runs.png")
    page.click("tr.run-row[data-run=oracle] a")
    page.wait_for_selector("tr.sample-row")
    assert page.locator("tr.sample-row").evaluate_all("rows => rows.map(r => r.dataset.sample)") == sorted(
        SAMPLES
    )
    assert page.locator("tr.sample-row[data-sample='sim-multi-0001'] td.score").inner_text() == "1"
    page.fill("input[name=q]", "single")
    page.click("form.filters button")
    expect(page.locator("tr.sample-row")).to_have_count(1)
    assert page.locator("tr.sample-row").get_attribute("data-sample") == "sim-single-0001"
    assert "q=single" in page.url


def _bars(page: Any) -> list[dict[str, Any]]:
    return page.locator(".pane .gantt .bar").evaluate_all(
        "bars => bars.map(b => { const r = b.getBoundingClientRect();"
        " return {group: b.dataset.group, left: r.left, right: r.right, id: b.dataset.callId}; })"
    )


def test_parallel_group_bars_overlap(page: Any, viewer: FinmcpProcess, traced: Traced) -> None:
    import sqlite3

    with sqlite3.connect(traced.db) as con:
        rows = con.execute(
            "SELECT id, call_group, t_req_ns, t_resp_ns FROM calls WHERE run_id = 'oracle'"
            " AND sample_id = 'sim-multi-0150'"
        ).fetchall()
    timing = {str(i): (req, resp) for i, _, req, resp in rows}
    page.goto(viewer.endpoint("/runs/oracle/samples/sim-multi-0150"))
    page.wait_for_selector(".gantt .bar")
    bars = _bars(page)
    assert len(bars) == len(rows)  # one bar per call
    sizes: dict[str, int] = {}
    for _, group, _, _ in rows:
        sizes[str(group)] = sizes.get(str(group), 0) + 1
    big = max(sizes, key=lambda g: sizes[g])
    members = [b for b in bars if b["group"] == big]
    assert len(members) == sizes[big] == 5
    # the bars are the calls' times: two bars overlap on screen exactly when the calls overlapped
    # (pairs whose gap is under 2 px either way are too close to call)
    t0 = min(req for req, _ in timing.values())
    span = max(resp for _, resp in timing.values()) - t0
    px_per_ns = (max(b["right"] for b in bars) - min(b["left"] for b in bars)) / span
    overlapping = 0
    for a in bars:
        for b in bars:
            if a["id"] >= b["id"]:
                continue
            (a0, a1), (b0, b1) = timing[a["id"]], timing[b["id"]]
            gap = max(a0, b0) - min(a1, b1)  # < 0: the calls overlapped
            if abs(gap) * px_per_ns < 2:
                continue
            on_screen = a["left"] < b["right"] and b["left"] < a["right"]
            assert on_screen == (gap < 0), (a, b, gap)
            overlapping += on_screen and a["group"] == b["group"] == big
    assert overlapping >= 1  # the parallel group's calls were in flight together
    # each call's card: tool, status, group rule, folded long output
    card = page.locator("article.call").first
    assert "explicit" in card.inner_text() and "ok" in card.inner_text()
    assert page.locator("article.call details.fold").count() >= 1
    assert page.locator("tr[data-metric=emr] td").inner_text() == "1"
    _shot(page, "viewer-sample.png")


def test_missing_call_is_marked(page: Any, viewer: FinmcpProcess) -> None:
    sample, tool = DROPPED
    page.goto(viewer.endpoint(f"/runs/dropped/samples/{sample}"))
    page.wait_for_selector(".ref-call")
    missing = page.locator(".ref-call.mark-missing")
    assert missing.count() == 1
    assert missing.locator(".tool").inner_text() == tool
    assert missing.locator(".badge.mark-missing").is_visible()
    assert page.locator(".ref-group.first-error .ref-call.mark-missing").count() == 1
    assert page.locator(".diff-summary .mark-missing").inner_text() == "missing 1"
    assert float(page.locator("tr[data-metric=r] td").inner_text()) < 1
    # side by side with the run that made the call
    page.goto(viewer.endpoint(f"/runs/dropped/samples/{sample}?compare=oracle"))
    page.wait_for_selector(".pane[data-run=oracle] .gantt .bar")
    left = page.locator(".pane[data-run=dropped] .gantt .bar").count()
    right = page.locator(".pane[data-run=oracle] .gantt .bar").count()
    assert right == left + 1
    assert page.locator(".pane[data-run=oracle] .ref-call.mark-missing").count() == 0


def test_live_calls_appear_without_reload(page: Any, viewer: FinmcpProcess, traced: Traced) -> None:
    proxy = traced.stack.proxy
    assert proxy is not None
    url = proxy.tagged(run="live", sample="sim-single-0001", turn=0)
    first = modern_post(url, tool_call("SearchFinancialNews", {"keyword": "降息", "page": 1, "pageSize": 3}))
    assert first.status_code == 200
    page.goto(viewer.endpoint("/runs/live/samples/sim-single-0001"))
    page.wait_for_selector(".gantt .bar")
    assert page.locator(".gantt .bar").count() == 1
    marker = page.evaluate("() => { window.__same_page = true; return true; }")
    for i in range(2):
        response = modern_post(url, tool_call("SearchFunds", {"keyword": f"live {i}", "size": 1}, rid=10 + i))
        assert response.status_code == 200
    expect(page.locator(".gantt .bar")).to_have_count(3, timeout=10_000)
    assert marker and page.evaluate("() => window.__same_page === true")  # no reload happened
    assert page.locator("#live.on").is_visible()
    # the reference has no SearchFunds: both new calls are extra, on their bars and their cards
    expect(page.locator(".gantt .bar.mark-extra")).to_have_count(2)
    expect(page.locator("article.call .badge.mark-extra")).to_have_count(2)
