"""Full transparency: every feature of server-everything gives the same results through the proxy.

:func:`tests.conformance.everything_client.exercise` uses every feature once (sampling and
elicitation answered by the client, roots, progress and log notifications, resources, templates,
subscriptions, prompts, completion, tools) over four paths at once: server-everything over
Streamable HTTP direct and through ``finmcp-proxy --upstream URL``, and over stdio direct and through
``finmcp-proxy --transport stdio --upstream-cmd CMD``. Each proxied transcript equals its direct one,
and each proxy's trace holds every ``tools/call`` as a call row with the client's status and every
other message (both directions, the client's answers to the server's requests too) in ``messages``.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.stdio import StdioServerParameters

from finmcp.proxy.testing import stdio_args
from finmcp.recordings import SqliteTraceStore
from tests.conformance.everything_client import CALLED_TOOLS, ELICITED, SAMPLED, exercise
from tests.conformance.suite import Everything, Suite, provisioned
from tests.support.processes import Children

# the handshake-era features it exercises are deprecated in 2026-07-28; the SDK says so on each use
pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

RUN = "everything"


@dataclass(frozen=True)
class Transcripts:
    """What the client saw on each path, and the trace store of each proxy."""

    seen: dict[str, dict[str, Any]]
    dbs: dict[str, Path]


@pytest.fixture(scope="module")
def transcripts(module_children: Children, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Transcripts]:
    suite: Suite = provisioned()
    tmp = tmp_path_factory.mktemp("everything")
    dbs = {"http": tmp / "http.sqlite", "stdio": tmp / "stdio.sqlite"}
    with Everything(suite) as everything:
        proxy = module_children.proxy(["--upstream", everything.url, "--db", str(dbs["http"]), "--run", RUN])
        stdio_cmd = shlex.join(everything.stdio_command())
        direct_stdio = StdioServerParameters(
            command=everything.stdio_command()[0], args=everything.stdio_command()[1:]
        )
        proxied_stdio = StdioServerParameters(
            command=sys.executable,
            args=stdio_args(["--upstream-cmd", stdio_cmd], dbs["stdio"], "--run", RUN),
        )
        targets: dict[str, str | StdioServerParameters] = {
            "http": everything.url,
            "http-proxied": proxy.url,
            "stdio": direct_stdio,
            "stdio-proxied": proxied_stdio,
        }
        seen: dict[str, dict[str, Any]] = {}

        async def play(name: str, target: str | StdioServerParameters) -> None:
            seen[name] = await exercise(target)

        async def all_paths() -> None:
            async with anyio.create_task_group() as group:
                for name, target in targets.items():
                    group.start_soon(play, name, target)

        anyio.run(all_paths)
        module_children.stop(proxy)  # its trace is complete once it stopped
        yield Transcripts(seen, dbs)


def _differences(direct: dict[str, Any], proxied: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    return {
        key: (direct.get(key), proxied.get(key))
        for key in direct.keys() | proxied.keys()
        if direct.get(key) != proxied.get(key)
    }


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_every_feature_gives_the_same_results_through_the_proxy(transcripts, transport):
    direct = transcripts.seen[transport]
    assert _differences(direct, transcripts.seen[f"{transport}-proxied"]) == {}


@pytest.mark.parametrize("path", ["http", "http-proxied", "stdio", "stdio-proxied"])
def test_the_client_answered_the_servers_requests_and_got_its_notifications(transcripts, path):
    seen = transcripts.seen[path]
    calls = dict(zip(CALLED_TOOLS, seen["calls"], strict=True))
    assert SAMPLED in str(calls["trigger-sampling-request"]) and seen["sampled"]
    assert str(ELICITED["name"]) in str(calls["trigger-elicitation-request"]) and seen["elicited"]
    assert seen["progress"] == [(1, 3), (2, 3), (3, 3)]
    assert seen["logs"] and seen["roots-asked"]
    assert all(not call.get("isError") for call in seen["calls"])
    assert (
        seen["read"]["contents"]
        and seen["prompt-simple"]["messages"]
        and seen["complete"]["completion"]["values"]
    )


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_the_proxy_logged_every_call_and_every_other_message(transcripts, transport):
    with SqliteTraceStore.open(transcripts.dbs[transport]) as store:
        calls = store.calls(RUN)
        conn = store.db.conn
        messages = conn.execute("SELECT direction, kind, method FROM messages").fetchall()
    assert [(c["tool"], c["status"]) for c in calls] == [(tool, "ok") for tool in CALLED_TOOLS]
    sent = {m for d, k, m in messages if d == "c2s" and k == "request"}
    assert sent >= {
        "initialize", "ping", "logging/setLevel", "tools/list", "resources/list", "resources/templates/list",
        "resources/read", "prompts/list", "prompts/get", "completion/complete", "tools/call",
        "resources/subscribe", "resources/unsubscribe",
    }  # fmt: skip
    asked = {m for d, k, m in messages if d == "s2c" and k == "request"}
    assert asked >= {"sampling/createMessage", "elicitation/create", "roots/list"}
    notified = {m for d, k, m in messages if d == "s2c" and k == "notification"}
    assert notified >= {"notifications/progress", "notifications/message"}
    answered_by_client = sum(1 for d, k, _ in messages if d == "c2s" and k == "response")
    assert answered_by_client >= len(asked)
    responses = sum(1 for d, k, _ in messages if d == "s2c" and k in ("response", "error"))
    requests = sum(1 for d, k, _ in messages if d == "c2s" and k == "request")
    assert responses == requests  # every request's answer is in messages, calls' answers too
