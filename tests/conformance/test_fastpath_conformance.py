"""The official conformance suite's server scenarios with and without the tools/call fast path.

finmcp-server as shipped (``--latency none``, so the fast path serves its calls) and the same server on
the SDK's path only (``bench/server_variants.py --stack sdk-path``) run every server scenario of the
suite at once; each scenario must end the same way on both (the same checks passed, failed and warned,
with the same failure messages) and both servers must count the same calls. The suite calls only its
own fixture tools, which finmcp-server does not serve (the SDK's path answers those as unknown tools),
so this shows the fast path changes nothing the suite checks; ``tests/server/test_fastpath.py``
compares the two paths' answers to finmcp's own tools byte for byte, over raw HTTP and through the
SDK's client, in both eras.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conformance.suite import Outcome, Suite, provisioned
from tests.support.processes import Children

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def suite() -> Suite:
    return provisioned()


def test_every_scenario_ends_the_same_with_and_without_the_fast_path(
    suite: Suite, module_children: Children, tmp_path: Path
) -> None:
    args = ["--latency", "none"]
    fast = module_children.server(args)
    sdk = module_children.server(["--stack", "sdk-path", *args], module="bench.server_variants")
    runs = {
        name: suite.start_server_run(f"{proc.url}", tmp_path / name, f"server scenarios against {name}")
        for name, proc in (("fast", fast), ("sdk", sdk))
    }
    outcomes: dict[str, dict[str, Outcome]] = {name: run.wait() for name, run in runs.items()}
    assert set(outcomes["fast"]) == set(outcomes["sdk"]) == set(suite.scenarios("server"))
    differing = {
        name: (outcomes["fast"][name], outcomes["sdk"][name])
        for name in outcomes["sdk"]
        if outcomes["fast"][name] != outcomes["sdk"][name]
    }
    assert differing == {}
    assert sdk.health()["fast_path_calls"] == {}
    assert fast.health()["calls"] == sdk.health()["calls"]
