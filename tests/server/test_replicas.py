"""Stateless replicas: 3 finmcp-server processes answered round-robin give byte-identical results to one
server for every call of the 613 finmcp-sim samples, with fault injection on (its draws are keyed by
the request, never by how many calls a process has seen)."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx2
import pytest

from finmcp.evaluator.benchmarks import install_recordings, load_benchmark
from finmcp.server.seeded import ATTEMPT_META_KEY
from finmcp.server.testing import ServerProcess
from tests.support.rpc import modern_headers, tool_call

FAULTS = "*:error=0.04,malformed=0.04,empty=0.04,rpc_error=0.04"


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory):
    recordings = tmp_path_factory.mktemp("replicas") / "finmcp-sim.recordings.sqlite"
    install_recordings(recordings).close()
    args = ["--inventory", "finmcp65", "--recordings", str(recordings), "--seed", "7", "--latency", "none",
            "--faults", FAULTS, "--json-response"]  # fmt: skip
    procs = [ServerProcess(args, timeout=90) for _ in range(4)]
    try:
        with ThreadPoolExecutor(4) as pool:  # start them side by side
            list(pool.map(lambda p: p.start(), procs))
        yield [f"{p.base}/mcp" for p in procs]
    finally:
        for proc in procs:
            proc.stop()


def _requests() -> list[dict]:
    refs = load_benchmark("finmcp-sim")
    assert len(refs) == 613
    calls = [c for r in refs for t in r.turns for g in t.calls for c in g]
    return [tool_call(c.tool, c.arguments, rid=i) for i, c in enumerate(calls)]


async def _both(requests: list[dict], servers: list[str], pick) -> tuple[list[bytes], list[bytes]]:
    return tuple(  # type: ignore[return-value]
        await asyncio.gather(_send(servers[:3], requests, pick), _send(servers[3:], requests, lambda i: 0))
    )


async def _send(urls: list[str], requests: list[dict], pick, parallel: int = 8) -> list[bytes]:
    limits = httpx2.Limits(max_connections=parallel * 2, max_keepalive_connections=parallel * 2)
    async with httpx2.AsyncClient(timeout=60, limits=limits, trust_env=False) as http:
        gate = asyncio.Semaphore(parallel)

        async def one(i: int, message: dict) -> bytes:
            params = message["params"]
            async with gate:
                response = await http.post(
                    urls[pick(i)],
                    content=json.dumps(message),
                    headers=modern_headers("tools/call", params["name"]),
                )
            assert response.status_code == 200, response.text[:300]
            return response.content

        return list(await asyncio.gather(*(one(i, m) for i, m in enumerate(requests))))


def _outcome(body: bytes) -> str:
    message = json.loads(body)
    if "error" in message:
        return "rpc_error"
    meta = message["result"].get("_meta") or {}
    return str(meta.get("io.finmcp/fault") or meta.get("io.finmcp/source"))


@pytest.mark.slow
def test_round_robin_replicas_answer_like_one_server(servers: list[str]) -> None:
    requests = _requests()
    assert len(requests) == 2186 and len({json.dumps(m["params"]) for m in requests}) < len(
        requests
    )  # repeats
    spread, alone = asyncio.run(_both(requests, servers, lambda i: i % 3))
    assert spread == alone
    outcomes = Counter(_outcome(b) for b in alone)
    assert outcomes["replay"] > 1500, outcomes
    assert all(outcomes[k] > 20 for k in ("error", "malformed", "empty", "rpc_error")), outcomes


def test_attempt_number_draws_anew_on_any_replica(servers: list[str]) -> None:
    message = tool_call("GetCurrentTime", {}, rid=1)

    def attempt(k: int) -> dict:
        m = json.loads(json.dumps(message))
        m["params"]["_meta"][ATTEMPT_META_KEY] = k
        return m

    requests = [attempt(k) for k in range(40)]
    spread, alone = asyncio.run(_both(requests, servers, lambda i: (i * 7) % 3))
    assert spread == alone
    outcomes = [_outcome(b) for b in alone]
    assert len(set(outcomes)) > 1  # retries with a new attempt number draw anew
    again = asyncio.run(_send(servers[3:], [attempt(0)] * 5, lambda i: 0))
    assert len(set(again)) == 1 and again[0] == alone[0]  # the same request, the same answer


def test_a_bad_attempt_number_counts_as_zero(servers: list[str], tmp_path: Path) -> None:
    base = tool_call("GetCurrentTime", {}, rid=1)
    bodies = []
    for value in (0, -1, "3", True, 1.5, None):
        m = json.loads(json.dumps(base))
        m["params"]["_meta"][ATTEMPT_META_KEY] = value
        bodies.append(m)
    answers = asyncio.run(_send(servers[3:], bodies, lambda i: 0))
    assert len(set(answers)) == 1


@pytest.mark.slow
def test_handshake_sessions_count_their_own_calls(servers: list[str]) -> None:
    """Handshake era: draws count repeats per session, so two sessions (on any replica) see the same
    sequence; a session is pinned to one replica, which is why that era needs affinity."""
    from mcp.client import Client

    async def sequence(url: str) -> list[str]:
        async with Client(url, mode="legacy") as client:
            seen = []
            for _ in range(16):
                try:
                    result = await client.call_tool("GetCurrentTime", {})
                except Exception:  # the injected JSON-RPC error
                    seen.append("rpc_error")
                    continue
                seen.append(str((result.meta or {}).get("io.finmcp/fault") or "ok"))
            return seen

    async def three() -> list[list[str]]:
        return [await sequence(servers[0]), await sequence(servers[0]), await sequence(servers[1])]

    first, again, other = asyncio.run(three())
    assert first == again == other
    assert len(set(first)) > 1  # repeats within a session draw anew
