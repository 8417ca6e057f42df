"""Pins of issue 28's defects 4 and 5 in ``finmcp-proxy audit`` (each failed on the audit before the
drift audit): numbers by value, lists by element, volatile fields masked, untagged turns, tools/list
compared, structured paths first, and ``--against-cmd`` launched with the caller's environment.

A real stdio server (tests/support/audit_pin_server.py, its answers set by environment variables) is
recorded through ``finmcp-proxy --transport stdio`` and audited as it was and changed.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from finmcp.proxy.audit import json_diff
from finmcp.proxy.cli import main as proxy_main
from finmcp.proxy.testing import stdio_args
from tests.support.source import REPO
from tests.support.traces import wait_calls

UPSTREAM = [
    sys.executable,
    "-c",
    "import runpy; runpy.run_module('tests.support.audit_pin_server', run_name='__main__')",
]
RECORDED_ENV = {"DRIFT_PROBE": "store-a", "DRIFT_ENTITIES": "alpha,beta,gamma"}


def test_numbers_compare_by_value():
    assert json_diff({"price": 1, "n": [2.0]}, {"price": 1.0, "n": [2]}) == []
    assert json_diff({"flag": True}, {"flag": 1})  # a boolean is not the number 1


def test_one_item_inserted_at_the_front_is_one_change():
    old = [{"name": n, "letters": len(n)} for n in ("alpha", "beta", "gamma", "delta")]
    new = [{"name": "new", "letters": 3}, *old]
    changes = json_diff({"entities": old}, {"entities": new})
    assert [(c["path"], c["change"]) for c in changes] == [("entities[0]", "inserted")]
    moved = json_diff([1, 2, 3], [2, 3, 1])
    assert [c["change"] for c in moved] == ["moved"]


async def _record(params: StdioServerParameters) -> None:
    async with Client(params, mode="legacy") as client:
        await client.list_tools()
        for tool in ("now", "entities", "probe"):
            await client.call_tool(tool, {})


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Any:
    db = tmp_path_factory.mktemp("pins") / "runs.sqlite"
    env = {**__import__("os").environ, **RECORDED_ENV}
    args = stdio_args([], db, "--run", "pins", "--upstream-cmd", "--", *UPSTREAM)
    anyio.run(_record, StdioServerParameters(command=sys.executable, args=args, cwd=str(REPO), env=env))
    assert [c["status"] for c in wait_calls(db, "pins", 3)] == ["ok", "ok", "ok"]
    return db


def _audit(db, monkeypatch, capsys, env: dict[str, str], *extra: str) -> tuple[int, str]:
    monkeypatch.chdir(REPO)
    for name, value in {**RECORDED_ENV, **env}.items():
        monkeypatch.setenv(name, value)
    try:
        code = proxy_main(
            ["audit", "--db", str(db), "--run", "pins", *extra, "--against-cmd", "--", *UPSTREAM]
        )
    except SystemExit as exc:  # an unknown flag on the old audit
        code = int(exc.code or 0)
    return code, capsys.readouterr().out


@pytest.mark.slow
def test_the_callers_environment_reaches_the_audited_server(recorded, monkeypatch, capsys):
    """Defect 5: MEMORY_FILE_PATH=... finmcp-proxy audit --against-cmd audited another store."""
    _code, out = _audit(recorded, monkeypatch, capsys, {}, "--json")  # flags the old audit had
    report = json.loads(out)
    probe = next(c for c in report["calls"] if c["tool"] == "probe")
    assert probe["verdict"] == "identical", probe  # the server saw DRIFT_PROBE=store-a as when recorded


@pytest.mark.slow
def test_volatile_fields_are_masked_by_named_normalisers(recorded, monkeypatch, capsys):
    code, out = _audit(recorded, monkeypatch, capsys, {}, "--volatile")
    assert code == 0, out
    assert "3 identical" in out
    code, out = _audit(recorded, monkeypatch, capsys, {})
    assert code == 1 and "content[0].text.now [value]" in out  # the text block holding JSON is parsed


@pytest.mark.slow
def test_untagged_turns_print_no_tNone(recorded, monkeypatch, capsys):
    _code, out = _audit(recorded, monkeypatch, capsys, {}, "--volatile")
    assert "tNone" not in out and " t- " in out


@pytest.mark.slow
def test_tools_list_changes_are_compared(recorded, monkeypatch, capsys):
    code, out = _audit(
        recorded, monkeypatch, capsys, {"DRIFT_DESCRIPTION": "changed"}, "--volatile", "--fail-on", "cosmetic"
    )
    assert code == 1, out
    assert "probe: description-changed at description" in out


@pytest.mark.slow
def test_an_inserted_entity_is_one_line_and_structured_paths_come_first(recorded, monkeypatch, capsys):
    env = {"DRIFT_ENTITIES": "new,alpha,beta,gamma"}
    code, out = _audit(recorded, monkeypatch, capsys, env, "--volatile")
    assert code == 1, out
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if "entities" in line and line.startswith("different"))
    diff_lines = [line for line in lines[at + 1 :] if line.startswith("            ")]
    assert diff_lines[0].strip().startswith("structuredContent.entities[0] [inserted]"), out
    assert sum(1 for line in diff_lines if line.strip().startswith("structuredContent")) == 1, out
