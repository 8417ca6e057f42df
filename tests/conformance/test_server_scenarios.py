"""The official MCP conformance suite's server scenarios, run as a subprocess against real processes.

Four targets, each run once per module and concurrently (``--suite all``, pending scenarios too):
finmcp-server, finmcp-proxy in front of finmcp-server, ``@modelcontextprotocol/server-everything``
(Streamable HTTP) and finmcp-proxy in front of server-everything.

- finmcp-server serves tools only: every scenario that applies to such a server passes, direct and
  through the proxy (:data:`APPLICABLE`); every other scenario the suite lists is in the
  not-applicable table of docs/server.md, with its reason.
- Transparency: every scenario server-everything passes direct passes through the proxy, and the
  proxy logged every ``tools/call`` the suite made in ``calls`` and every message in ``messages``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from finmcp.recordings import RecordingStore
from tests.conformance.suite import Everything, Outcome, Run, Suite, provisioned
from tests.support.processes import Children

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
# Scenarios that apply to a server declaring only the tools capability with its own tools.
APPLICABLE = (
    "server-initialize",
    "ping",
    "tools-list",
    "server-sse-multiple-streams",
    "server-sse-polling",
    "dns-rebinding-protection",
)
NOT_APPLICABLE_HEADING = "Conformance scenarios that do not apply"


@pytest.fixture(scope="module")
def suite() -> Suite:
    return provisioned()


@dataclass(frozen=True)
class Runs:
    """Each target's outcome per scenario, and the trace store of the proxy before server-everything."""

    outcomes: dict[str, dict[str, Outcome]]
    everything_db: Path


@pytest.fixture(scope="module")
def runs(suite: Suite, module_children: Children, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    """Run the suite against the four targets at once: finmcp, finmcp-proxied, everything, everything-proxied."""
    tmp = tmp_path_factory.mktemp("conformance-server")
    with Everything(suite) as everything:
        server = module_children.server(["--latency", "none"])
        proxied = module_children.proxy(["--upstream", server.url, "--db", str(tmp / "finmcp.sqlite")])
        everything_db = tmp / "everything.sqlite"
        everything_proxied = module_children.proxy(["--upstream", everything.url, "--db", str(everything_db)])
        targets = {
            "finmcp": server.url,
            "finmcp-proxied": proxied.url,
            "everything": everything.url,
            "everything-proxied": everything_proxied.url,
        }
        started: dict[str, Run] = {
            name: suite.start_server_run(url, tmp / name, f"server scenarios against {name} ({url})")
            for name, url in targets.items()
        }
        found = {name: run.wait() for name, run in started.items()}
        module_children.stop(everything_proxied)  # its trace is complete once it stopped
        yield Runs(found, everything_db)


@pytest.fixture(scope="module")
def outcomes(runs: Runs) -> dict[str, dict[str, Outcome]]:
    return runs.outcomes


def _failing(outcomes: dict[str, Outcome], names: tuple[str, ...] | list[str]) -> dict[str, tuple[str, ...]]:
    return {name: outcomes[name].failures or ("no checks ran",) for name in names if not outcomes[name].ok}


@pytest.mark.parametrize("target", ["finmcp", "finmcp-proxied"])
def test_every_scenario_that_applies_to_a_tools_only_server_passes(outcomes, target):
    assert set(APPLICABLE) <= set(outcomes[target]), "the suite no longer has one of the scenarios"
    assert _failing(outcomes[target], APPLICABLE) == {}


def test_the_proxy_passes_every_scenario_finmcp_server_passes(outcomes):
    passed_direct = sorted(name for name, outcome in outcomes["finmcp"].items() if outcome.ok)
    assert _failing(outcomes["finmcp-proxied"], passed_direct) == {}


def not_applicable_table(text: str) -> dict[str, str]:
    """``{scenario: reason}`` from the table under the not-applicable heading of docs/server.md."""
    section = text.split(NOT_APPLICABLE_HEADING, 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\|\s*`([^`]+)`\s*\|\s*(.+?)\s*\|\s*$", section, re.MULTILINE)
    return dict(rows)


def test_docs_list_every_other_scenario_with_its_reason(suite, outcomes):
    table = not_applicable_table((REPO / "docs" / "server.md").read_text())
    listed = suite.scenarios("server")
    assert set(listed) == set(outcomes["finmcp"]), "the suite ran other scenarios than it lists"
    assert sorted(set(listed) - set(APPLICABLE)) == sorted(table), "docs/server.md table vs the suite"
    assert all(len(reason) > 20 for reason in table.values())
    assert not set(table) & set(APPLICABLE)


def test_every_scenario_server_everything_passes_direct_passes_through_the_proxy(outcomes):
    passed_direct = sorted(name for name, outcome in outcomes["everything"].items() if outcome.ok)
    assert len(passed_direct) >= 10  # tools, resources, prompts, logging, subscriptions, streams ...
    assert _failing(outcomes["everything-proxied"], passed_direct) == {}


def test_the_proxy_logged_every_call_and_message_of_the_suite(runs):
    with RecordingStore.open(runs.everything_db) as store:
        conn = store.db.conn
        calls_sent = conn.execute(
            "SELECT count(*) FROM messages WHERE direction = 'c2s' AND method = 'tools/call'"
        ).fetchone()[0]
        rows = conn.execute("SELECT tool, status FROM calls").fetchall()
        methods = {m for (m,) in conn.execute("SELECT DISTINCT method FROM messages WHERE direction = 'c2s'")}
        kinds = {k for (k,) in conn.execute("SELECT DISTINCT kind FROM messages WHERE direction = 's2c'")}
    assert calls_sent >= 5 and len(rows) == calls_sent
    assert all(status != "pending" for _, status in rows)
    assert {
        "initialize",
        "resources/list",
        "prompts/list",
        "logging/setLevel",
        "resources/subscribe",
    } <= methods
    assert {"response", "error"} <= kinds
