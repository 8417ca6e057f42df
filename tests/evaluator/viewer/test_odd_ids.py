"""A run or sample id with ``/`` (or ``%``, ``?``, ``#``, a space, CJK) opens on every viewer route (issue 30, item 11).

The page builds its URLs with ``encodeURIComponent`` (``/`` → ``%2F``); the server decodes ``%2F``
before routing unless it routes on the path as sent. Checked against the real ``finmcp-eval view``
process over loopback: every page and API route, with the ids as the page's links spell them.
"""

from __future__ import annotations

import json
import sqlite3
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from finmcp.recordings.plumbing.launch import FinmcpProcess
from finmcp.recordings.store import RecordingStore

RUNS = {  # run id -> its one sample id
    "team/a/run 1": "sample/7",
    "100%?#x": "s 1?a=b#c",
    "基金/周报": "s/calls",  # a sample id ending like the live-increment route
}


@pytest.fixture(scope="module")
def view(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FinmcpProcess]:
    path: Path = tmp_path_factory.mktemp("odd-ids") / "runs.sqlite"
    RecordingStore.open(path).close()
    with sqlite3.connect(path) as con:
        for seq, (run, sample) in enumerate(RUNS.items()):
            con.execute("INSERT INTO runs (run_id, created, meta) VALUES (?, '2026-01-01', '{}')", (run,))
            con.execute(
                "INSERT INTO calls (run_id, sample_id, turn, seq, tool, arguments, result, status, t_req_ns,"
                " t_resp_ns, wall_time, latency_ms, call_group, group_source, trial)"
                " VALUES (?,?,0,?,'SearchFunds','{}',?,'ok',?,?,'2026-01-01T00:00:00Z',0.5,0,'sequence',0)",
                (run, sample, seq, json.dumps({"content": [], "isError": False}), seq * 10, seq * 10 + 5),
            )
    args = ["view", "--db", str(path), "--host", "127.0.0.1", "--port", "0"]
    with FinmcpProcess("finmcp-eval", args, timeout=60, module="finmcp.evaluator.cli") as process:
        yield process


def enc(text: str) -> str:
    """What ``encodeURIComponent`` makes of an id."""
    return quote(text, safe="-_.!~*'()")


def _get(url: str) -> tuple[int, bytes]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _json(view: FinmcpProcess, path: str) -> Any:
    status, body = _get(view.endpoint(path))
    assert status == 200, (path, status, body[:200])
    return json.loads(body)


@pytest.mark.parametrize(("run", "sample"), list(RUNS.items()))
def test_every_route_opens_a_run_with_odd_ids(view: FinmcpProcess, run: str, sample: str) -> None:
    r, s = enc(run), enc(sample)
    assert run in [x["run_id"] for x in _json(view, "/api/runs")["runs"]]
    for page in (f"/runs/{r}", f"/runs/{r}/samples/{s}", f"/runs/{r}/samples/{s}?trial=0"):
        status, body = _get(view.endpoint(page))
        assert status == 200 and b"<html" in body.lower(), page
    samples = _json(view, f"/api/runs/{r}/samples?limit=10")
    assert samples["run_id"] == run and [x["sample_id"] for x in samples["samples"]] == [sample]
    detail = _json(view, f"/api/runs/{r}/samples/{s}")
    assert (detail["run_id"], detail["sample_id"]) == (run, sample)
    assert [c["tool"] for c in detail["calls"]] == ["SearchFunds"]
    increment = _json(view, f"/api/runs/{r}/samples/{s}/calls?since=0")
    assert [c["tool"] for c in increment["calls"]] == ["SearchFunds"]


def test_an_unknown_run_is_still_a_404(view: FinmcpProcess) -> None:
    status, body = _get(view.endpoint(f"/api/runs/{enc('team/a')}/samples"))
    assert status == 404 and "team/a" in json.loads(body)["error"]


@pytest.mark.slow
def test_a_browser_follows_the_pages_links_to_a_run_with_odd_ids(view: FinmcpProcess) -> None:
    """Headless Chromium: the runs page's link, the sample list's link, the sample page's calls."""
    from tests.support.browser import chromium_context

    with chromium_context(1280, 860) as context:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        for run, sample in RUNS.items():
            page.goto(view.endpoint("/"))
            page.wait_for_selector("tr.run-row")
            page.locator("tr.run-row", has_text=run).locator("a").click()
            page.wait_for_selector("tr.sample-row")
            rows = page.locator("tr.sample-row").evaluate_all("rows => rows.map(r => r.dataset.sample)")
            assert rows == [sample]
            page.locator("tr.sample-row a").click()
            page.wait_for_selector(".pane .gantt .bar")
            assert page.locator(".pane .gantt .bar").count() == 1
            assert page.url == view.endpoint(f"/runs/{enc(run)}/samples/{enc(sample)}")
        page.close()
        assert not errors, errors
