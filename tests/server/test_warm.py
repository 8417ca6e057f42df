"""The server's warm-up: ``/healthz`` says ``warm``, a second stderr line says when; launchers wait."""

from __future__ import annotations

import json
import re
import threading
from typing import Any

import anyio
from starlette.types import Message, Scope

from finmcp.server.app import HttpApp
from finmcp.server.latency import parse_latency
from finmcp.server.service import ToolService
from finmcp.server.testing import SchemaSimulator, ServerProcess
from finmcp.server.warmup import Warmup
from finmcp.tool_specs.inventory import load_inventory

WARM_LINE = re.compile(r"^finmcp-server warm: (http://127\.0\.0\.1:\d+) \((.+)\)$", re.M)


def _healthz(app: HttpApp) -> dict[str, Any]:
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    scope: Scope = {"type": "http", "method": "GET", "path": "/healthz", "headers": []}
    anyio.run(app, scope, receive, send)
    assert sent[0]["status"] == 200
    return json.loads(b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body"))


def test_healthz_says_cold_until_the_warm_up_has_finished_then_warm() -> None:
    inventory = load_inventory("finmcp65")
    service = ToolService(
        inventory, latency=parse_latency("none"), simulate=SchemaSimulator(inventory).simulate
    )
    release = threading.Event()
    warmup = Warmup().start(lambda: None if release.wait(30) else None)
    app = HttpApp({"finmcp65": service}, warmup=warmup)
    cold = _healthz(app)
    assert cold["status"] == "ok" and cold["warm"] is False and "warm_s" not in cold
    assert cold["inventories"] == {"finmcp65": 65} and "calls" in cold  # the fields of before stay
    release.set()
    assert warmup.wait(30)
    warm = _healthz(app)
    assert warm["warm"] is True and warm["warm_s"] >= 0 and "warm_error" not in warm
    assert _healthz(HttpApp({"finmcp65": service}))["warm"] is True  # nothing to warm: warm at once


def test_a_warm_up_that_fails_still_finishes_and_says_why() -> None:
    def broken() -> None:
        raise RuntimeError("no index today")

    warmup = Warmup().start(broken)
    assert warmup.wait(30)
    assert warmup.health()["warm"] is True and "no index today" in warmup.health()["warm_error"]
    assert Warmup.finished().health() == {"warm": True, "warm_s": 0.0} and not Warmup.finished().needed


def test_the_simulating_server_prints_a_warm_line_after_its_ready_line_and_healthz_agrees() -> None:
    with ServerProcess(["--latency", "none"]) as server:
        first = server.health()
        assert first["status"] == "ok" and isinstance(first["warm"], bool)
        assert ("warm_s" in first) is first["warm"]
        warm = server.wait_until_warm()
        assert warm.base == server.base and re.fullmatch(r"warm-up \d+\.\d s", warm.detail)
        after = server.health()
        assert after["warm"] is True and after["warm_s"] > 0
    text = server.stderr_text()
    assert text.index("finmcp-server ready:") < text.index("finmcp-server warm:")
    assert WARM_LINE.search(text)


def test_wait_warm_returns_warm_and_a_server_with_nothing_to_warm_is_warm_at_once() -> None:
    with ServerProcess(["--miss", "strict", "--latency", "none"], wait_warm=True) as strict:
        assert strict.warm is not None and strict.warm.detail == "nothing to warm"
        health = strict.health()
        assert health["warm"] is True and health["warm_s"] == 0.0
