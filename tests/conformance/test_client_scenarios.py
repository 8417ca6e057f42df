"""The official suite's client scenarios, direct and with finmcp-proxy between the client and the suite.

Each client scenario brings its own test server; the suite runs ``client.py URL`` against it, which
hands the scenario to this module's :class:`tests.conformance.sdk_client.ClientService` (the mcp SDK
client, imported once). Run with ``--proxy-db DB``, a finmcp-proxy goes in front of that server first,
so the same client plays the scenario through the proxy. Every scenario that passes direct must pass
through the proxy (``sse-retry`` is SEP-1699 resumption: the proxy must not answer for a stream the
server closed on purpose), and the proxy's trace holds the scenario's calls with the status the
client saw. The ``auth/*`` scenarios need an OAuth client, which this client is not (they fail
direct, so they are not run; docs/proxy.md).
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conformance.sdk_client import CLIENT, RUN, SCENARIOS, SERVICE_ENV, ClientService
from tests.conformance.suite import Outcome, Suite, provisioned
from tests.support.traces import read_calls

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class ClientRuns:
    """Outcome per scenario, direct and through the proxy, and each proxied scenario's trace store."""

    direct: dict[str, Outcome]
    proxied: dict[str, Outcome]
    dbs: dict[str, Path]


@pytest.fixture(scope="module")
def suite() -> Suite:
    return provisioned()


@pytest.fixture(scope="module")
def client_scenarios(suite: Suite) -> list[str]:
    return [name for name in suite.scenarios("client") if not name.startswith("auth/")]


# Scenarios whose checks time the client on the wall clock (``sse-retry``: the client must reconnect
# within the server's ``retry`` interval, 500 ms, give or take). They run alone, after the concurrent
# batch, and a failure of their timing checks alone is tried again: on 2 busy cores a reconnect was seen
# 1.26 s late once in CI, which says nothing about the client or the proxy.
TIMED = frozenset({"sse-retry"})
TIMED_TRIES = 3


def timing_only(outcome: Outcome) -> bool:
    """The scenario failed on its timing checks only (``client-sse-retry-timing``, ...)."""
    return not outcome.ok and all(f.split(":", 1)[0].endswith("-timing") for f in outcome.failures)


def play_alone(
    suite: Suite, name: str, command: str, out: Path, label: str, env: dict[str, str], db: Path | None = None
) -> Outcome:
    """Run one timed scenario on its own; a timing-only failure is tried again (``TIMED_TRIES`` in all),
    each try with a fresh proxy trace store ``db`` when one is given."""
    for attempt in range(TIMED_TRIES):
        if db is not None:
            db.unlink(missing_ok=True)
        outcome = suite.start_client_run(name, command, out / str(attempt), label, env).wait()[name]
        if not timing_only(outcome):
            return outcome
    return outcome


@pytest.fixture(scope="module")
def runs(
    suite: Suite, client_scenarios: list[str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ClientRuns]:
    tmp = tmp_path_factory.mktemp("conformance-client")
    service = ClientService()
    client = f"{shlex.quote(sys.executable)} {shlex.quote(str(CLIENT))}"
    env = {**os.environ, SERVICE_ENV: service.address}
    dbs = {name: tmp / f"{name}.sqlite" for name in client_scenarios}

    def proxied_command(name: str) -> str:
        return f"{client} --proxy-db {shlex.quote(str(dbs[name]))}"

    batch = [name for name in client_scenarios if name not in TIMED]
    with service:
        direct_runs = {
            name: suite.start_client_run(name, client, tmp / "direct" / name, f"client scenario {name}", env)
            for name in batch
        }
        proxied_runs = {
            name: suite.start_client_run(
                name,
                proxied_command(name),
                tmp / "proxied" / name,
                f"client scenario {name} through the proxy",
                env,
            )
            for name in batch
        }
        direct = {name: run.wait()[name] for name, run in direct_runs.items()}
        proxied = {name: run.wait()[name] for name, run in proxied_runs.items()}
        for name in sorted(TIMED & set(client_scenarios)):
            direct[name] = play_alone(
                suite, name, client, tmp / "direct" / name, f"client scenario {name}", env
            )
            proxied[name] = play_alone(
                suite,
                name,
                proxied_command(name),
                tmp / "proxied" / name,
                f"{name} through the proxy",
                env,
                dbs[name],
            )
        yield ClientRuns(direct, proxied, dbs)


def test_a_timing_failure_alone_is_told_apart_from_any_other():
    timing = Outcome(3, 2, 1, 0, ("client-sse-retry-timing: Client reconnected very late (1258ms)",))
    wrong = Outcome(3, 1, 2, 0, (timing.failures[0], "client-sse-retry-resume: no Last-Event-ID"))
    assert timing_only(timing) and not timing_only(wrong) and not timing_only(Outcome(3, 3, 0, 0))


def test_the_client_plays_every_non_auth_scenario_of_the_suite(client_scenarios):
    assert {"initialize", "tools_call", "sse-retry"} <= set(client_scenarios)
    assert sorted(SCENARIOS) == sorted(client_scenarios), "a new client scenario needs a handler in client.py"


def test_every_client_scenario_passes_direct(runs):
    assert {name: o.failures for name, o in runs.direct.items() if not o.ok} == {}


def test_every_client_scenario_that_passes_direct_passes_through_the_proxy(runs):
    passed = [name for name, outcome in runs.direct.items() if outcome.ok]
    assert {name: runs.proxied[name].failures for name in passed if not runs.proxied[name].ok} == {}


def test_the_proxy_logged_each_scenarios_calls_with_the_status_the_client_saw(runs):
    calls = {name: read_calls(db, RUN) for name, db in runs.dbs.items()}
    assert [(c["tool"], c["status"]) for c in calls["tools_call"]] == [("add_numbers", "ok")]
    elicited = [(c["tool"], c["status"]) for c in calls["elicitation-sep1034-client-defaults"]]
    assert elicited == [("test_client_elicitation_defaults", "ok")]
    # the answer came on the resumed GET stream, after the POST's stream ended without it
    [resumed] = calls["sse-retry"]
    assert (resumed["tool"], resumed["status"]) == ("test_reconnection", "ok")
    assert resumed["result"]["content"][0]["text"] == "Reconnection test completed successfully"
