"""Group inference under load: an SDK client's concurrent calls stay one group, sequential ones never merge.

The slow test runs :mod:`tests.support.group_load` under ``taskset -c 0``: the finmcp-server, the
proxy and 8 SDK clients share one core, so the proxy often answers a client's first concurrent call
before that client got the CPU to send the next. The fast tests pin the ``connection`` rule itself
(:mod:`proxy.grouping`) and the peek it rests on.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass

import pytest

from finmcp.proxy.grouping import GroupAssigner
from finmcp.proxy.http_wire import socket_is_quiet

SCOPE = ("run", "s", 0, 0)
MS = 1_000_000
CLIENTS, STEPS = 8, 25
WHOLE_AT_LEAST = 0.99


@dataclass
class FakeChannel:
    """A client connection as the group rules see it."""

    order: int
    idle: bool = True

    def quiet(self) -> bool:
        return self.idle


def test_a_call_on_a_newer_connection_while_an_answered_one_lies_quiet_joins_the_group():
    groups = GroupAssigner(gap_ms=30)
    first, second = FakeChannel(1), FakeChannel(2)
    a = groups.place(SCOPE, "k", 0, channel=first)
    groups.finished(a, 1 * MS)
    groups.delivered(a, 1 * MS)
    # sent after the answer left, 100 ms later (past the gap): today's rules opened a new group
    b = groups.place(SCOPE, "k", 100 * MS, arrived_ns=100 * MS, channel=second)
    assert (b.group, b.source) == (a.group, "connection")


def test_a_call_on_the_connection_that_brought_the_answer_is_a_sequence():
    groups = GroupAssigner(gap_ms=30)
    only = FakeChannel(1)
    a = groups.place(SCOPE, "k", 0, channel=only)
    groups.finished(a, 1 * MS)
    groups.delivered(a, 1 * MS)
    only.idle = False  # the client reused it: it had read the answer
    b = groups.place(SCOPE, "k", 2 * MS, arrived_ns=2 * MS, channel=only)
    assert (b.group, b.source) == (a.group + 1, "sequence")


@pytest.mark.parametrize(
    ("answered_on", "quiet", "late_ms", "why"),
    [
        (1, False, 2, "the older connection was closed or reused: the client had read its answer"),
        (3, True, 2, "the answer came on a newer connection: the pool would pick the older one anyway"),
        (1, True, 1500, "past the window"),
    ],
)
def test_no_connection_evidence(answered_on, quiet, late_ms, why):
    groups = GroupAssigner(gap_ms=30)
    answering = FakeChannel(answered_on, quiet)
    a = groups.place(SCOPE, "k", 0, channel=answering)
    groups.finished(a, 1 * MS)
    groups.delivered(a, 1 * MS)
    b = groups.place(SCOPE, "k", late_ms * MS, arrived_ns=late_ms * MS, channel=FakeChannel(2))
    assert (b.group, b.source) == (a.group + 1, "sequence"), why


def test_a_closed_connection_holds_no_evidence():
    groups = GroupAssigner(gap_ms=30)
    first = FakeChannel(1)
    a = groups.place(SCOPE, "k", 0, channel=first)
    groups.finished(a, 1 * MS)
    groups.delivered(a, 1 * MS)
    del first, a  # the connection is gone: only a weak reference was kept
    b = groups.place(SCOPE, "k", 2 * MS, arrived_ns=2 * MS, channel=FakeChannel(2))
    assert b.source == "sequence"


def test_socket_is_quiet_peeks_without_consuming():
    import asyncio

    async def check() -> list[bool]:
        seen: list[bool] = []
        server_side: list[asyncio.Transport] = []
        got: list[bytes] = []

        class Keep(asyncio.Protocol):
            def connection_made(self, transport):  # type: ignore[no-untyped-def]
                server_side.append(transport)
                transport.pause_reading()  # the proxy reads nothing while it decides

            def data_received(self, data):  # type: ignore[no-untyped-def]
                got.append(data)

        server = await asyncio.get_running_loop().create_server(Keep, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)) as client:
            while not server_side:
                await asyncio.sleep(0.01)
            seen.append(socket_is_quiet(server_side[0]))
            client.sendall(b"x")
            await asyncio.sleep(0.05)
            seen.append(socket_is_quiet(server_side[0]))
            server_side[0].resume_reading()
            await asyncio.sleep(0.05)
            client.shutdown(socket.SHUT_WR)
            await asyncio.sleep(0.05)
            seen.append(socket_is_quiet(server_side[0]))
        server.close()
        assert got == [b"x"]  # the peek consumed nothing
        return seen

    assert asyncio.run(check()) == [True, False, False]


@pytest.mark.slow
@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
def test_groups_hold_on_one_core_with_eight_clients(era, tmp_path):
    taskset = shutil.which("taskset")
    if taskset is None:
        pytest.skip("taskset (util-linux) is missing: cannot pin server, proxy and clients to one core")
    out = tmp_path / "result.json"
    command = [taskset, "-c", "0", sys.executable, "-m", "tests.support.group_load", "--era", era]
    command += ["--clients", str(CLIENTS), "--steps", str(STEPS), "--out", str(out)]
    subprocess.run(command, check=True, timeout=900)
    result = json.loads(out.read_text())
    print(f"{era}: {result}")  # the numbers docs/proxy.md quotes; shown with -s
    assert result["steps"] == CLIENTS * STEPS
    assert result["sequential_merged"] == 0, result
    assert result["parallel_whole"] >= WHOLE_AT_LEAST * result["steps"], result
