"""Shared pytest fixtures: the ../shared reference folder and checked child processes."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from finmcp.proxy.testing import ProxyProcess
from finmcp.server.testing import ServerProcess
from tests.support.postgres import PostgresCluster, in_ci, require_or_skip, start_cluster
from tests.support.processes import Children

REPO = Path(__file__).resolve().parent.parent


def _find_shared() -> Path | None:
    env = os.environ.get("FINMCP_SHARED")
    candidates = [Path(env)] if env else []
    candidates += [REPO.parent / "shared", REPO.parent.parent / "shared"]
    for path in candidates:
        if (path / "finmcp").is_dir() and (path / "fintoolbench").is_dir():
            return path
    return None


SHARED = _find_shared()


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The ../shared reference folder; skips the test when it is absent (fails under CI, which has it)."""
    if SHARED is None:
        require_or_skip("../shared (FinMCP/FinToolBench reference files) is absent; set FINMCP_SHARED to run")
    return SHARED


@pytest.fixture
def children() -> Iterator[Children]:
    """Processes started for one test; at teardown each is stopped and checked.

    The test fails when a child died on its own, logged an ERROR or a traceback, exited after SIGTERM
    with another code than today's (server -15, proxy 0), or (a proxy) reports write failures.
    """
    with Children() as started:
        yield started


@pytest.fixture(scope="module")
def module_children() -> Iterator[Children]:
    """:func:`children` for module-scoped fixtures (checked when the module's last test is done)."""
    with Children() as started:
        yield started


@pytest.fixture
def server_process(children: Children) -> Callable[..., ServerProcess]:
    """Factory: ``server_process(args, allow=(), killed=False, check=True, **ServerProcess options)``."""
    return children.server


@pytest.fixture
def proxy_process(children: Children) -> Callable[..., ProxyProcess]:
    """Factory: ``proxy_process(args, allow=(), killed=False, check=True, **ProxyProcess options)``."""
    return children.proxy


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresCluster]:
    """One throwaway PostgreSQL server for the session (skips, or fails under FINMCP_CI=1, without it)."""
    cluster = start_cluster()
    try:
        yield cluster
    finally:
        cluster.destroy()


@pytest.fixture
def postgres_url(postgres_cluster: PostgresCluster) -> str:
    """A fresh, empty database on the session's PostgreSQL server, as a ``postgresql://`` URL."""
    return postgres_cluster.create_database()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Under ``FINMCP_CI=1`` a skipped test fails: CI provides every service and ../shared, so a skip
    there is a missing install step (xfails are untouched)."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if in_ci() and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped under FINMCP_CI=1 (CI must run it): {reason}"
