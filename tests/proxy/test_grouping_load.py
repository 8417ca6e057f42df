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
from tests.support.postgres import require_or_skip

SCOPE = ("run", "s", 0, 0)
MS = 1_000_000
CLIENTS, STEPS = 8, 25
WHOLE_AT_LEAST = {"legacy": 0.75, "2026-07-28": None}
"""Share of steps whose concurrent calls must end in one group (a floor, not the issue's 99 %).
Measured on 2 cores shared with other work: handshake era 43-184/200 before the ``connection`` rule,
181-193 with it; 2026-07-28 8/200 in every run before, 15-120 with it (15 in a CI rehearsal with the
rest of the suite running beside it; 21 with the pool sign alone, the unread-bytes sign dropped): too
spread for a floor, so that era asserts only that the rule acted. What is left is no evidence on the wire: the client read an answer of the step before it sent
the step's next call, as a client awaiting each answer does (docs/proxy.md, "Parallel groups")."""


@dataclass(eq=False)
class FakeChannel:
    """A client connection as the group rules see it."""

    order: int
    requests: int = 0
    idle: bool = True  # open, and the client sent nothing on it since

    def mark(self) -> int:
        return self.requests

    def quiet(self, mark: int) -> bool:
        return self.idle and mark == self.requests


def _answered(groups: GroupAssigner, *placements) -> None:
    for placed in placements:
        groups.finished(placed, 1 * MS)
        groups.delivered(placed, 1 * MS)


def test_bytes_left_unread_on_an_older_connection_are_no_evidence():
    """A client that read its answer may leave a stream's last framing unread (the harness after an SSE
    answer): a call then sent on an older connection is a sequence, not a join (it merged two
    dependent calls of a sharded run while the receive queue counted)."""
    groups = GroupAssigner(gap_ms=30)
    first, second = FakeChannel(1), FakeChannel(3)
    a = groups.place(SCOPE, "k", 0, channel=first)
    b = groups.place(SCOPE, "k", 0, channel=second)
    _answered(groups, a, b)
    first.requests += 1  # the client read a's answer and sent c on that connection
    c = groups.place(SCOPE, "k", 5 * MS, arrived_ns=5 * MS, channel=first)
    assert (c.group, c.source) == (a.group + 1, "sequence")


def test_a_call_on_a_newer_connection_while_the_answered_one_lies_quiet_joins_the_group():
    groups = GroupAssigner(gap_ms=30)
    first, second = FakeChannel(1), FakeChannel(2)
    a = groups.place(SCOPE, "k", 0, channel=first)
    _answered(groups, a)
    # an HTTP/1.1 pool sends on an idle connection it has: the first was still busy in the client
    b = groups.place(SCOPE, "k", 100 * MS, arrived_ns=100 * MS, channel=second)
    assert (b.group, b.source) == (a.group, "connection")


def test_a_pool_that_reuses_its_latest_connection_after_a_parallel_step_is_no_evidence():
    groups = GroupAssigner(gap_ms=30)
    first, second = FakeChannel(1), FakeChannel(2)
    a = groups.place(SCOPE, "k", 0, channel=first)
    b = groups.place(SCOPE, "k", 0, channel=second)
    _answered(groups, a, b)
    # both answers read; a LIFO pool (aiohttp, Node's agent) sends the next call on the latest freed one
    c = groups.place(SCOPE, "k", 5 * MS, arrived_ns=5 * MS, channel=second)
    assert (c.group, c.source) == (a.group + 1, "sequence")


def test_a_connection_shared_by_two_clients_is_no_evidence():
    groups = GroupAssigner(gap_ms=30)
    mine, shared = FakeChannel(1), FakeChannel(2)
    other = groups.place(("run", "t", 0, 0), "other", 0, channel=shared)
    _answered(groups, other)
    a = groups.place(SCOPE, "k", 0, channel=mine)
    _answered(groups, a)
    # one pool for many clients (the harness): the next call took a connection another client freed
    b = groups.place(SCOPE, "k", 5 * MS, arrived_ns=5 * MS, channel=shared)
    assert (b.group, b.source) == (a.group + 1, "sequence")


@pytest.mark.parametrize(
    ("carried_since", "late_ms", "why"),
    [
        (False, 2, "the client read the answer, and the call came on an older connection"),
        (True, 2, "the connection carried another request since"),
        (False, 1500, "past the window"),
    ],
)
def test_no_connection_evidence(carried_since, late_ms, why):
    groups = GroupAssigner(gap_ms=30)
    answering = FakeChannel(1)
    a = groups.place(SCOPE, "k", 0, channel=answering)
    _answered(groups, a)
    answering.requests += carried_since
    b = groups.place(SCOPE, "k", late_ms * MS, arrived_ns=late_ms * MS, channel=FakeChannel(0))
    assert (b.group, b.source) == (a.group + 1, "sequence"), why


def test_a_call_on_the_connection_that_brought_the_answer_is_a_sequence():
    groups = GroupAssigner(gap_ms=30)
    only = FakeChannel(1)
    a = groups.place(SCOPE, "k", 0, channel=only)
    _answered(groups, a)
    b = groups.place(SCOPE, "k", 2 * MS, arrived_ns=2 * MS, channel=only)
    assert (b.group, b.source) == (a.group + 1, "sequence")


def test_a_closed_connection_holds_no_evidence():
    groups = GroupAssigner(gap_ms=30)
    first = FakeChannel(1)
    a = groups.place(SCOPE, "k", 0, channel=first)
    _answered(groups, a)
    del first, a  # the connection is gone: only a weak reference was kept
    b = groups.place(SCOPE, "k", 2 * MS, arrived_ns=2 * MS, channel=FakeChannel(2))
    assert b.source == "sequence"


def test_socket_is_quiet_peeks_without_consuming():
    import asyncio

    async def check() -> list[bool]:
        seen: list[bool] = []
        accepted: list[asyncio.Transport] = []
        got: list[bytes] = []

        class Keep(asyncio.Protocol):
            def connection_made(self, transport):
                accepted.append(transport)
                transport.pause_reading()  # the proxy reads nothing while it decides

            def data_received(self, data):
                got.append(data)

        server = await asyncio.get_running_loop().create_server(Keep, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)) as client:
            while not accepted:
                await asyncio.sleep(0.01)
            seen.append(socket_is_quiet(accepted[0]))
            client.sendall(b"x")
            await asyncio.sleep(0.05)
            seen.append(socket_is_quiet(accepted[0]))
            accepted[0].resume_reading()
            await asyncio.sleep(0.05)
            seen.append(socket_is_quiet(accepted[0]))
            client.shutdown(socket.SHUT_WR)
            await asyncio.sleep(0.05)
            seen.append(socket_is_quiet(accepted[0]))  # the end was read: the transport closed
        server.close()
        assert got == [b"x"]  # the peek consumed nothing
        return seen

    assert asyncio.run(check()) == [True, False, True, False]


@pytest.mark.slow
@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
def test_groups_hold_on_one_core_with_eight_clients(era, tmp_path):
    taskset = shutil.which("taskset")
    if taskset is None:
        require_or_skip("taskset (util-linux) is missing: cannot pin server, proxy and clients to one core")
    out = tmp_path / "result.json"
    command = [taskset, "-c", "0", sys.executable, "-m", "tests.support.group_load", "--era", era]
    command += ["--clients", str(CLIENTS), "--steps", str(STEPS), "--out", str(out)]
    subprocess.run(command, check=True, timeout=900)
    result = json.loads(out.read_text())
    print(f"{era}: {result}")  # the numbers docs/proxy.md quotes; shown with -s
    assert result["steps"] == CLIENTS * STEPS
    assert result["sequential_merged"] == 0, result
    floor = WHOLE_AT_LEAST[era]
    if floor is not None:
        assert result["parallel_whole"] >= floor * result["steps"], result
    else:  # the rule placed calls (none before it); in the handshake era the gap rule may do it all
        assert result["sources"].get("connection", 0) > 0, result
