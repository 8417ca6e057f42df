"""The tools/call fast path answers byte for byte as the SDK's path does (server.fastpath).

Two real servers on loopback, one on the SDK's path only (``bench/server_variants.py --stack sdk-path``), get the same raw HTTP requests
in both protocol eras (good calls, misses, invalid and unknown-tool calls, non-ASCII arguments, a
progress token, a wrong version header, a listing); every response must be the same bytes but for
the ``date`` header and the session id, and the fast server must have answered calls itself. The
calls the SDK's own client can make are made through it too, in both eras, with the same results.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import anyio
import pytest
from mcp.client import Client

from bench.calls import ERAS, TOOL, recorded_result
from bench.raw_http import RawClient
from finmcp.recordings import RecordingStore
from finmcp.recordings.plumbing.protocol import LATEST_HANDSHAKE_VERSION, LATEST_STATELESS_VERSION
from finmcp.server.app import HttpApp
from finmcp.server.latency import parse_latency
from finmcp.server.service import ToolService
from finmcp.server.testing import SchemaSimulator, ServerProcess
from finmcp.tool_specs.inventory import load_inventory

CALLS: list[tuple[str, dict[str, object], bytes]] = [
    ("tools/call", {"name": TOOL, "arguments": {"fundNameOrCode": "000001"}}, b""),
    ("tools/call", {"name": TOOL, "arguments": {"fundNameOrCode": "000001"}}, b""),
    ("tools/call", {"name": TOOL, "arguments": {"fundNameOrCode": "基金"}}, b""),
    ("tools/call", {"name": TOOL, "arguments": {"fundNameOrCode": 5}}, b""),
    ("tools/call", {"name": TOOL, "arguments": {}}, b""),
    ("tools/call", {"name": TOOL}, b""),
    ("tools/call", {"name": "NoSuchTool", "arguments": {}}, b""),
    ("tools/call", {"name": TOOL, "arguments": {"fundNameOrCode": "000001", "extra": 1}}, b""),
    (
        "tools/call",
        {"name": TOOL, "arguments": {"fundNameOrCode": "000002"}, "_meta": {"progressToken": 7}},
        b"",
    ),
    ("tools/call", {"name": TOOL, "arguments": {"fundNameOrCode": "000002"}}, b"mcp-name: Other\r\n"),
    ("tools/list", {}, b""),
    ("tools/call", {"name": TOOL, "arguments": {"fundNameOrCode": "000002"}}, b""),
]


async def _exchange(url: str, version: str) -> list[bytes]:
    client = await RawClient(url, version).open()
    answers = []
    try:
        for method, params, extra_header in CALLS:
            _, body, extra = client.request_bytes(method, dict(params))
            status, headers, payload = await client.post(body, extra + extra_header)
            head = sorted((k, v) for k, v in headers.items() if k != b"date")
            answers.append(repr((status, head, payload)).encode())
    finally:
        await client.close()
    return [re.sub(rb"[0-9a-f]{32}", b"<session>", a) for a in answers]


async def _client_exchange(url: str, mode: str) -> list[str]:
    """Every call of :data:`CALLS` the SDK's client can make, through it: each result or error as JSON."""
    answers = []
    async with Client(url, mode=mode) as client:
        for method, params, extra_header in CALLS:
            if method != "tools/call" or extra_header or "_meta" in params:
                continue
            try:
                result = await client.call_tool(str(params["name"]), params.get("arguments"))  # type: ignore[arg-type]
                answers.append(result.model_dump_json())
            except Exception as exc:  # the same error from both paths
                answers.append(f"{type(exc).__name__}: {exc}")
    return answers


@pytest.mark.slow
def test_fast_path_answers_exactly_as_the_sdk(tmp_path: Path) -> None:
    db = tmp_path / "recordings.sqlite"
    with RecordingStore.open(db) as store:
        for code in ("000001", "000002"):
            store.put_response(
                "qieman79", TOOL, {"fundNameOrCode": code}, recorded_result(code), "imported:t"
            )
    args = ["--miss", "strict", "--recordings", str(db), "--latency", "none"]
    with (
        ServerProcess(["--stack", "sdk-path", *args], module="bench.server_variants") as sdk,
        ServerProcess(args) as fast,
    ):
        for version in (LATEST_STATELESS_VERSION, LATEST_HANDSHAKE_VERSION):
            expected = asyncio.run(_exchange(sdk.url, version))
            got = asyncio.run(_exchange(fast.url, version))
            for index, (want, have) in enumerate(zip(expected, got, strict=True)):
                assert have == want, f"{version} request {index}: {CALLS[index]}"
        for era, mode in ERAS:  # through the SDK's own client
            from_sdk = asyncio.run(_client_exchange(sdk.url, mode))
            assert asyncio.run(_client_exchange(fast.url, mode)) == from_sdk, era
            assert len(from_sdk) == 9 and sum('"is_error":true' in a for a in from_sdk) == 5, from_sdk
        assert sdk.health()["fast_path_calls"] == {}
        fast_calls = fast.health()["fast_path_calls"]["finmcp65"]
        assert fast_calls >= 14, fast_calls  # most calls of both eras were answered by the fast path
        assert fast.health()["calls"] == sdk.health()["calls"]


@pytest.mark.slow
def test_fast_path_is_off_for_services_that_wait() -> None:
    with ServerProcess(["--miss", "strict", "--latency", "fixed:1"]) as server:
        for version in (LATEST_STATELESS_VERSION, LATEST_HANDSHAKE_VERSION):
            asyncio.run(_exchange(server.url, version))
        assert server.health()["fast_path_calls"] == {}


def test_wire_texts_are_kept_for_replayed_answers_only() -> None:
    """Replayed answers reuse their memoised wire text; simulated ones (new every call) are never kept."""
    store = RecordingStore.open(":memory:")
    store.put_response(
        "qieman79", TOOL, {"fundNameOrCode": "000001"}, recorded_result("000001"), "imported:t"
    )
    inventory = load_inventory("finmcp65")
    service = ToolService(
        inventory,
        store=store,
        latency=parse_latency("none"),
        simulate=SchemaSimulator(inventory).simulate,
    )
    fast = HttpApp({"finmcp65": service}).fast["/mcp"]
    version = LATEST_STATELESS_VERSION

    async def texts(arguments: dict[str, str], times: int) -> list[str]:
        out = []
        for _ in range(times):
            result = await fast.answer(version, TOOL, arguments, None, None)
            out.append(fast._result_text("json", version, result))
        return out

    replayed = anyio.run(texts, {"fundNameOrCode": "000001"}, 3)
    assert len(set(replayed)) == 1 and len(fast._texts) == 1
    for code in range(100):
        simulated = anyio.run(texts, {"fundNameOrCode": f"{code:06d}9"}, 2)
        assert simulated[0] == simulated[1]  # the same text, written again
    assert len(fast._texts) == 1  # 200 simulated answers later, still only the replayed one
    store.close()
