"""A secret the upstream reflects into its answer is not stored (issue 30, item 8).

A hostile upstream on loopback echoes the ``--upstream-header`` credentials it gets (the bearer token
bare, a header value that looks like nothing secret) and an ``sk-…`` key into its ``tools/call``
results and into a JSON-RPC error. After calls through a real proxy, none of them is in the trace
store's files (calls, messages, recordings), ``finmcp-proxy show`` or any export.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import httpx2
import pytest

from finmcp.proxy.cli import main as proxy_main
from finmcp.recordings import redact
from finmcp.recordings.redact import REDACTED, redact_text, redact_value
from tests.support.net import serving
from tests.support.rpc import JSON_HEADERS
from tests.support.traces import export_formats, wait_calls

BEARER = "sk-live-4f9a2b7c1d0e8f3a"  # sent as "Authorization: Bearer <it>"
TENANT = "tenant-7731-blue-harbor"  # a plain value of a header whose name says nothing secret
API_KEY = "sk-proj-Zx81Qw77Lm03Rt55"  # an API key the upstream puts under a secret-named key
SECRETS = (BEARER, TENANT, API_KEY)
FORMATS = ("jsonl", "finmcp", "fintoolbench", "otlp", "har", "csv")


class Reflector(BaseHTTPRequestHandler):
    """Answers every ``tools/call`` with what it was sent: a result (odd ids) or an error (even ids)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        message = json.loads(self.rfile.read(int(self.headers["content-length"])))
        auth, tenant = self.headers.get("authorization", ""), self.headers.get("x-tenant", "")
        echo = (
            f"you sent Authorization: {auth}; the token was {auth.removeprefix('Bearer ')}; tenant {tenant}"
        )
        if message["id"] % 2:
            answer = {
                "result": {
                    "content": [{"type": "text", "text": echo}],
                    "structuredContent": {"echo": auth, "apiKey": API_KEY, "tenant": tenant},
                    "isError": False,
                }
            }
        else:
            answer = {"error": {"code": -32000, "message": echo, "data": {"api_key": API_KEY, "t": tenant}}}
        body = json.dumps({"jsonrpc": "2.0", "id": message["id"], **answer}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def reflector() -> Iterator[str]:
    with serving(Reflector) as base:
        yield f"{base}/mcp"


def test_a_reflected_secret_is_in_no_stored_or_shown_form(reflector, children, tmp_path, capsys):
    db = tmp_path / "runs.sqlite"
    proxy = children.proxy(
        [
            "--upstream", reflector, "--db", str(db), "--recordings", str(db),
            "--upstream-header", f"Authorization: Bearer {BEARER}",
            "--upstream-header", f"X-Tenant: {TENANT}",
        ]
    )  # fmt: skip
    with httpx2.Client(timeout=10) as http:
        for rid in (1, 2):
            params = {"name": "Echo", "arguments": {"q": "x"}}
            call = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}
            response = http.post(proxy.tagged("refl", "s1", 0), json=call, headers=JSON_HEADERS)
            assert response.status_code == 200
            assert BEARER in response.text and TENANT in response.text  # forwarded as the upstream sent it
    calls = wait_calls(db, "refl", 2, settled=True)
    assert [c["status"] for c in calls] == ["ok", "rpc_error"]
    assert calls[0]["result"]["structuredContent"] == {
        "echo": f"Bearer {REDACTED}",
        "apiKey": REDACTED,
        "tenant": REDACTED,
    }
    stderr = children.stop(proxy)  # every row committed
    assert all(secret not in stderr for secret in SECRETS)
    shown = []
    for args in (["show", "--run", "refl", "--full"], ["sessions"]):
        assert proxy_main([args[0], "--db", str(db), *args[1:]]) == 0
        shown.append(capsys.readouterr().out)
    assert "REDACTED" in shown[0]
    outputs = [path.read_bytes() for path in export_formats(db, "refl", tmp_path, FORMATS)]
    capsys.readouterr()
    stored = [p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("runs.sqlite")]
    for secret in SECRETS:
        for data in [*stored, *outputs, *(s.encode() for s in shown)]:
            assert secret.encode() not in data


@pytest.fixture
def literals() -> Iterator[None]:
    redact.set_secret_values([f"Bearer {BEARER}", TENANT, "short"])
    yield
    redact.set_secret_values([])


def test_configured_values_are_redacted_from_text_and_values(literals):
    text = json.dumps({"a": f"token {BEARER}!", "b": [TENANT], "c": "short stays"})
    assert BEARER not in redact_text(text) and TENANT not in redact_text(text)
    assert "short stays" in redact_text(text)  # a value under the minimum length is not looked for
    escaped = json.dumps({"a": f"{BEARER}"}).replace("sk-", "\\u0073k-")  # spelled with an escape
    assert BEARER not in json.loads(redact_text(escaped))["a"]
    assert redact_value({"k": [f"x{TENANT}y"], TENANT: 1}) == {"k": [f"x{REDACTED}y"], REDACTED: 1}


def test_without_configured_values_text_is_stored_as_sent():
    text = '{"a":"sk-like but not configured","b":"tenant-7731-blue-harbor"}'
    assert redact_text(text) == text
    assert redact_value({"a": ["Bearer abcdefghij0123456789"]}) == {"a": [f"Bearer {REDACTED}"]}
