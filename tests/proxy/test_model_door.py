"""The model door: ``finmcp-proxy --llm-upstream`` forwards model traffic and logs one row per exchange.

Real processes on loopback: the proxy, and a fake OpenAI/Anthropic upstream
(:mod:`tests.support.fake_llm`); clients are plain HTTP (``http.client``, to read streams piece by
piece) and, where its environment is provisioned, the ``openai`` SDK itself.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from finmcp.recordings.model_exchanges import exchanges, final_answers, usage_by_sample
from finmcp.recordings.trace_store import open_trace_store
from tests.clients import provision
from tests.support.fake_llm import TEXT, FakeLLM
from tests.support.polling import wait_for
from tests.support.postgres import require_or_skip
from tests.support.tls import mint

DOOR_WARNINGS = ("model door",)
KEY = "sk-proxy-key-0123456789abcdef"


def _post(
    base: str, path: str, body: dict[str, Any], headers: dict[str, str] | None = None
) -> tuple[int, bytes]:
    parts = urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    conn.request("POST", path, json.dumps(body), {"content-type": "application/json", **(headers or {})})
    response = conn.getresponse()
    try:
        data = response.read()
    except http.client.IncompleteRead as exc:  # a cut stream: what arrived
        data = exc.partial
    conn.close()
    return response.status, data


def _rows(db: Path, run: str | None, count: int) -> list[dict[str, Any]]:
    def probe() -> list[dict[str, Any]]:
        with open_trace_store(db, readonly=True) as store:
            rows = exchanges(store, run)
        return rows if len(rows) >= count and all(r["status"] != "open" for r in rows) else []

    return wait_for(probe, what=f"{count} closed model exchanges of run {run}")


@pytest.fixture
def llm():
    with FakeLLM(chunks=4, delay=0.4) as fake:
        yield fake


def _door(proxy_process, llm, db: Path, *extra: str, allow: tuple[str, ...] = ()):
    return proxy_process(
        ["--upstream", "http://127.0.0.1:9/mcp", "--db", str(db), "--llm-upstream", llm.url, *extra],
        allow=allow,
        env={"FAKE_KEY": KEY},
    )


def test_three_apis_streamed_and_whole_are_forwarded_and_logged(proxy_process, llm, tmp_path):
    db = tmp_path / "t.sqlite"
    proxy = _door(proxy_process, llm, db, "--llm-header", "Authorization: Bearer $FAKE_KEY")
    agent_key = {"authorization": "Bearer sk-agent-own-key-abcdefghijk"}
    cases: list[tuple[str, dict[str, Any]]] = [
        (
            "/r/R/s/S1/t/0/v1/chat/completions",
            {"model": "fake", "stream": True, "stream_options": {"include_usage": True}},
        ),
        ("/r/R/s/S1/t/1/v1/chat/completions", {"model": "fake-tool", "messages": []}),
        ("/r/R/s/S2/k/1/t/0/v1/responses", {"model": "fake", "stream": True}),
        ("/r/R/s/S3/t/0/v1/messages", {"model": "fake", "stream": True}),
        ("/r/R/s/S3/t/1/v1/messages", {"model": "fake-tool"}),
    ]
    for path, body in cases:
        status, data = _post(proxy.base, path, body, agent_key)
        assert status == 200, data
    rows = _rows(db, "R", 5)
    assert [(r["sample_id"], r["trial"], r["turn"], r["api"], r["stream"]) for r in rows] == [
        ("S1", 0, 0, "chat", True),
        ("S1", 0, 1, "chat", False),
        ("S2", 1, 0, "responses", True),
        ("S3", 0, 0, "messages", True),
        ("S3", 0, 1, "messages", False),
    ]
    for row in rows:
        assert row["status"] == "ok" and row["http_status"] == 200
        assert (row["input_tokens"], row["output_tokens"], row["cached_tokens"]) == (11, 7, 3)
        assert row["usage_note"] is None and row["ttft_ms"] > 0 and row["duration_ms"] >= row["ttft_ms"]
        assert "sk-agent-own-key" not in (row["request_headers"] or "") and KEY not in json.dumps(row)
    assert rows[0]["final_text"] == TEXT and rows[0]["finish_reason"] == "stop"
    assert rows[0]["answer"] and json.loads(rows[0]["answer"])["choices"][0]["message"]["content"] == TEXT
    assert rows[1]["final_text"] is None and rows[1]["finish_reason"] == "tool_calls"
    assert rows[1]["tool_calls"] == [{"id": "call_1", "name": "get_quote", "arguments": '{"symbol": "AAPL"}'}]
    assert rows[2]["final_text"] == TEXT and rows[2]["finish_reason"] == "completed"
    assert rows[3]["final_text"] == TEXT and rows[3]["finish_reason"] == "end_turn"
    assert rows[4]["tool_calls"] == [{"id": "toolu_1", "name": "get_quote", "arguments": {"symbol": "AAPL"}}]
    with open_trace_store(db, readonly=True) as store:
        assert final_answers(store, "R") == {("S1", 0, 0): TEXT, ("S2", 1, 0): TEXT, ("S3", 0, 0): TEXT}
        usage = usage_by_sample(store, "R")
    assert (usage["S1"].exchanges, usage["S1"].input_tokens, usage["S1"].output_tokens) == (2, 22, 14)


def test_tags_go_upstream_as_headers_and_the_key_is_replaced(proxy_process, llm, tmp_path):
    db = tmp_path / "t.sqlite"
    proxy = _door(proxy_process, llm, db, "--llm-header", "Authorization: Bearer $FAKE_KEY")
    _post(
        proxy.base,
        "/r/R/s/S1/k/2/t/3/v1/chat/completions",
        {"model": "fake"},
        {"authorization": "Bearer agent"},
    )
    seen = json.loads(_post(llm.url, "/seen", {})[1])["headers"]
    assert {"x-finmcp-run: R", "x-finmcp-sample: S1", "x-finmcp-trial: 2", "x-finmcp-turn: 3"} <= set(seen)
    assert [h for h in seen if h.startswith("authorization")] == [f"authorization: Bearer {KEY}"]
    assert not any(h.startswith("accept-encoding") for h in seen)
    row = _rows(db, "R", 1)[0]
    assert "[REDACTED]" in row["request_headers"] and "agent" not in row["request_headers"].replace(
        "user-agent", ""
    )


def test_usage_absent_is_null_with_a_reason_never_a_guess(proxy_process, llm, tmp_path):
    db = tmp_path / "t.sqlite"
    proxy = _door(proxy_process, llm, db)
    _post(proxy.base, "/r/R/s/A/t/0/v1/chat/completions", {"model": "fake-nousage", "stream": True})
    _post(proxy.base, "/r/R/s/B/t/0/v1/messages", {"model": "fake-nousage"})
    _post(
        proxy.base, "/r/R/s/C/t/0/v1/chat/completions", {"model": "fake", "stream": True}
    )  # no include_usage
    rows = _rows(db, "R", 3)
    for row in rows:
        assert (row["input_tokens"], row["output_tokens"], row["cached_tokens"]) == (None, None, None)
        assert row["usage_note"] and row["final_text"] == TEXT
    assert "include_usage" in rows[0]["usage_note"] and "no usage" in rows[1]["usage_note"]
    with open_trace_store(db, readonly=True) as store:
        usage = usage_by_sample(store, "R")
    assert usage["A"].unreported == 1 and usage["A"].input_tokens == 0


def test_first_piece_of_a_stream_reaches_the_agent_before_the_upstream_finishes(proxy_process, llm, tmp_path):
    """No buffering: the slow stream's pieces leave the upstream 0.4 s apart (6 pieces, >2 s in all)."""
    db = tmp_path / "t.sqlite"
    proxy = _door(proxy_process, llm, db)
    parts = urlsplit(proxy.base)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    start = time.monotonic()
    conn.request(
        "POST", "/r/R/s/S/t/0/v1/chat/completions", json.dumps({"model": "fake-slow", "stream": True})
    )
    response = conn.getresponse()
    first = response.read1()
    first_at = time.monotonic() - start
    rest = response.read()
    total = time.monotonic() - start
    assert b"data: " in first and total > 2.0
    assert first_at < total / 2, (first_at, total)  # the first piece came long before the end
    assert TEXT.split()[0].encode() in first + rest
    row = _rows(db, "R", 1)[0]
    assert row["status"] == "ok" and row["ttft_ms"] < row["duration_ms"] / 2


def test_bad_upstream_answers_are_passed_through_and_logged(proxy_process, llm, tmp_path):
    db = tmp_path / "t.sqlite"
    proxy = _door(proxy_process, llm, db, allow=DOOR_WARNINGS)
    status, body = _post(proxy.base, "/r/R/s/S/t/0/v1/chat/completions", {"model": "fake-429"})
    assert status == 429 and json.loads(body)["error"]["message"] == "fake 429"
    status, body = _post(proxy.base, "/r/R/s/S/t/1/v1/chat/completions", {"model": "fake-500"})
    assert status == 500
    status, body = _post(proxy.base, "/r/R/s/S/t/2/v1/chat/completions", {"model": "fake-malformed"})
    assert status == 200 and body.startswith(b'{"id": "x"')
    status, body = _post(
        proxy.base, "/r/R/s/S/t/3/v1/chat/completions", {"model": "fake-cut", "stream": True}
    )
    assert status == 200 and b"data: " in body and b"[DONE]" not in body  # the agent got what arrived
    status, body = _post(proxy.base, "/v1/models", {})  # untagged, another path: a plain exchange
    assert status == 200 and json.loads(body)["object"] == "list"
    parts = urlsplit(proxy.base)
    for method, path in (("DELETE", "/r/R/v1/chat/completions"), ("GET", "/r/R/s/S/v1/messages")):
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
        conn.request(method, path)
        refused = conn.getresponse()
        assert (
            refused.status == 405
            and "model door forwards POST" in json.loads(refused.read())["error"]["message"]
        )
        conn.close()
    rows = _rows(db, "R", 4)
    assert [(r["status"], r["http_status"]) for r in rows] == [
        ("http_error", 429),
        ("http_error", 500),
        ("ok", 200),
        ("cut", 200),
    ]
    assert rows[0]["error"] == "fake 429" and rows[0]["final_text"] is None
    assert rows[2]["answer"].startswith('{"id": "x"') and "malformed model answer" in rows[2]["error"]
    assert "mid-body" in rows[3]["error"] and "The " in rows[3]["answer"] and rows[3]["final_text"] is None
    untagged = _rows(db, None, 1)
    assert [(r["api"], r["sample_id"], r["trial"], r["path"]) for r in untagged] == [
        ("other", None, None, "/v1/models")
    ]


def test_https_model_upstream_is_trusted_with_upstream_ca_only(proxy_process, tmp_path):
    certs = mint(tmp_path / "certs")
    db = tmp_path / "t.sqlite"
    with FakeLLM(tls=(str(certs.cert), str(certs.key))) as fake:
        assert fake.url.startswith("https://127.0.0.1:")
        trusted = proxy_process(
            [
                "--upstream",
                "http://127.0.0.1:9/mcp",
                "--db",
                str(db),
                "--llm-upstream",
                fake.url,
                "--upstream-ca",
                str(certs.ca),
            ]
        )
        status, _ = _post(trusted.base, "/r/T/s/S/t/0/v1/messages", {"model": "fake", "stream": True})
        assert status == 200
        untrusted = proxy_process(
            [
                "--upstream",
                "http://127.0.0.1:9/mcp",
                "--db",
                str(tmp_path / "u.sqlite"),
                "--llm-upstream",
                fake.url,
            ],
            allow=("model door", "TLS", "certificate"),
        )
        status, body = _post(untrusted.base, "/r/T/s/S/t/0/v1/messages", {"model": "fake"})
        assert status == 502 and "certificate" in json.loads(body)["error"]["message"]
    row = _rows(db, "T", 1)[0]
    assert row["status"] == "ok" and row["final_text"] == TEXT


def test_upstream_down_is_a_502_json_error_and_a_row(proxy_process, tmp_path):
    db = tmp_path / "t.sqlite"
    proxy = proxy_process(
        ["--upstream", "http://127.0.0.1:9/mcp", "--db", str(db), "--llm-upstream", "http://127.0.0.1:9"],
        allow=DOOR_WARNINGS,
    )
    status, body = _post(proxy.base, "/r/R/s/S/t/0/v1/chat/completions", {"model": "fake", "stream": True})
    assert status == 502
    message = json.loads(body)["error"]["message"]
    assert message.startswith("finmcp-proxy: ") and "unreachable" in message
    row = _rows(db, "R", 1)[0]
    assert row["status"] == "upstream_error" and row["http_status"] is None and "unreachable" in row["error"]
    assert row["model"] == "fake" and row["usage_note"] == "no answer from the upstream"


def test_without_llm_upstream_the_door_says_which_flag_opens_it(proxy_process, tmp_path):
    """404 (never forwarded, as any path that is not MCP), the message naming the flag."""
    proxy = proxy_process(["--upstream", "http://127.0.0.1:9/mcp", "--db", str(tmp_path / "t.sqlite")])
    status, body = _post(proxy.base, "/r/R/s/S/t/0/v1/chat/completions", {"model": "fake"})
    assert status == 404 and "--llm-upstream" in json.loads(body)["error"]["message"]


def test_sigkill_mid_stream_keeps_the_exchange_the_agent_received(proxy_process, tmp_path):
    db = tmp_path / "t.sqlite"
    with FakeLLM(chunks=40, delay=0.05) as fake:
        proxy = proxy_process(
            ["--upstream", "http://127.0.0.1:9/mcp", "--db", str(db), "--llm-upstream", fake.url], killed=True
        )
        parts = urlsplit(proxy.base)
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
        body = {"model": "fake-slow", "stream": True, "messages": [{"role": "user", "content": "q"}]}
        conn.request("POST", "/r/K/s/S/t/0/v1/chat/completions", json.dumps(body))
        response = conn.getresponse()
        received = response.read1()
        time.sleep(0.6)  # more pieces arrive; the row is given the answer so far every 0.25 s
        os.kill(proxy.process.pid, signal.SIGKILL)
        proxy.process.wait(5)
        with pytest.raises((http.client.IncompleteRead, ConnectionError)):
            while response.read1():
                pass
    with sqlite3.connect(db) as conn_db:
        rows = conn_db.execute(
            "SELECT status, request, answer, model FROM model_exchanges WHERE run_id = 'K'"
        ).fetchall()
    assert len(rows) == 1
    status, request, answer, model = rows[0]
    assert status == "open" and model == "fake-slow" and json.loads(request) == body
    first_event = received.split(b"\n\n")[0].decode()
    assert answer.startswith(first_event) and answer.count("data: ") >= 2


def test_openai_sdk_streams_through_the_door(proxy_process, llm, tmp_path):
    """The ``openai`` SDK (from the openai-agents client environment): chat and responses, streamed."""
    if not provision.ready("openai-agents"):
        require_or_skip(
            "client 'openai-agents' (the openai SDK) is not provisioned; run python3 tests/clients/provision.py"
        )
    db = tmp_path / "t.sqlite"
    proxy = _door(proxy_process, llm, db)
    script = Path(__file__).resolve().parents[1] / "clients" / "drivers" / "openai_model_door.py"
    out = subprocess.run(
        [str(provision.python_of("openai-agents")), str(script), proxy.base + "/r/SDK/s/S/t/0/v1"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got == {"chat": TEXT, "responses": TEXT, "error": "rate limited"}
    rows = _rows(db, "SDK", 3)
    assert [(r["api"], r["status"], r["final_text"]) for r in rows] == [
        ("chat", "ok", TEXT),
        ("responses", "ok", TEXT),
        ("chat", "http_error", None),
    ]


def test_an_agent_that_leaves_mid_stream_leaves_a_cancelled_row(proxy_process, llm, tmp_path):
    db = tmp_path / "t.sqlite"
    proxy = _door(proxy_process, llm, db)
    parts = urlsplit(proxy.base)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    conn.request(
        "POST", "/r/C/s/S/t/0/v1/chat/completions", json.dumps({"model": "fake-slow", "stream": True})
    )
    response = conn.getresponse()
    assert b"data: " in response.read1()
    conn.close()  # before the upstream's next piece (0.4 s apart)
    row = _rows(db, "C", 1)[0]
    assert row["status"] == "cancelled" and "closed its connection" in row["error"]
    # what arrived, assembled: the first event (the assistant's role, no text yet)
    assert json.loads(row["answer"])["choices"][0]["finish_reason"] is None and row["final_text"] is None
