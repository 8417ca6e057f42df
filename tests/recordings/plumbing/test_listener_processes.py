"""The one listener policy, through the real finmcp-server and finmcp-proxy on loopback: same verdicts."""

from __future__ import annotations

import json

import httpx2
import pytest

from finmcp.proxy.testing import ProxyProcess
from finmcp.recordings.plumbing.protocol import LATEST_STATELESS_VERSION
from finmcp.server.testing import ServerProcess

TOKEN = "listener-tok-4d2c9e1a"
MAX_BODY = 4000


@pytest.fixture(scope="module")
def server():
    args = ["--latency", "none", "--token", TOKEN, "--max-body", str(MAX_BODY)]
    with ServerProcess(args) as proc:
        yield proc


@pytest.fixture(scope="module")
def proxy(server, tmp_path_factory):
    db = tmp_path_factory.mktemp("listener") / "runs.sqlite"
    args = ["--upstream", server.url, "--db", str(db), "--token", TOKEN, "--max-body", str(MAX_BODY)]
    with ProxyProcess([*args, "--upstream-header", f"Authorization: Bearer {TOKEN}"]) as proc:
        yield proc


def call(name: str = "GetCurrentTime") -> tuple[bytes, dict[str, str]]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": LATEST_STATELESS_VERSION,
        "io.modelcontextprotocol/clientInfo": {"name": "listener-test", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": {}, "_meta": meta},
    }
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": LATEST_STATELESS_VERSION,
        "Mcp-Method": "tools/call",
        "Mcp-Name": name,
    }
    return json.dumps(body).encode(), headers


BEARER = {"Authorization": f"Bearer {TOKEN}"}
CASES = [  # (case, method, path, extra headers, body size or None for a tools/call, expected status)
    ("good", "POST", "/mcp", BEARER, None, 200),
    ("foreign host", "POST", "/mcp", {**BEARER, "Host": "evil.example"}, None, 421),
    ("look-alike host", "POST", "/mcp", {**BEARER, "Host": "127.0.0.1.evil.example"}, None, 421),
    ("other v6 host", "POST", "/mcp", {**BEARER, "Host": "[::2]:1"}, None, 421),
    ("loopback host, any case and port", "POST", "/mcp", {**BEARER, "Host": "LOCALHOST:1234"}, None, 200),
    ("foreign origin", "POST", "/mcp", {**BEARER, "Origin": "http://evil.example"}, None, 403),
    ("null origin", "POST", "/mcp", {**BEARER, "Origin": "null"}, None, 403),
    ("ftp origin", "POST", "/mcp", {**BEARER, "Origin": "ftp://127.0.0.1"}, None, 403),
    ("loopback origin", "POST", "/mcp", {**BEARER, "Origin": "http://localhost:3000"}, None, 200),
    ("foreign host before token", "POST", "/mcp", {"Host": "evil.example"}, None, 421),
    ("no token", "POST", "/mcp", {}, None, 401),
    ("wrong token", "POST", "/mcp", {"Authorization": f"Bearer {TOKEN}x"}, None, 401),
    ("token prefix", "POST", "/mcp", {"Authorization": f"Bearer {TOKEN[:-1]}"}, None, 401),
    ("wrong scheme", "POST", "/mcp", {"Authorization": f"Basic {TOKEN}"}, None, 401),
    ("bare token", "POST", "/mcp", {"Authorization": TOKEN}, None, 401),
    ("token in the query", "POST", f"/mcp?token={TOKEN}", {}, None, 401),
    ("unknown path", "GET", "/nowhere", {}, None, 401),
    ("delete without token", "DELETE", "/mcp", {}, None, 401),
    ("health is public", "GET", "/healthz", {}, None, 200),
    ("health still checks Host", "GET", "/healthz", {"Host": "evil.example"}, None, 421),
    ("body over the limit", "POST", "/mcp", BEARER, MAX_BODY + 1, 413),
]


@pytest.mark.parametrize(
    ("case", "method", "path", "extra", "size", "expected"), CASES, ids=[c[0] for c in CASES]
)
def test_server_and_proxy_give_the_same_verdicts(server, proxy, case, method, path, extra, size, expected):
    body, headers = call()
    if size is not None:
        body = body + b" " * (size - len(body))
    statuses = {}
    with httpx2.Client(timeout=10, trust_env=False) as http:
        for name, proc in (("server", server), ("proxy", proxy)):
            content = body if method == "POST" else None
            response = http.request(method, proc.base + path, content=content, headers={**headers, **extra})
            statuses[name] = response.status_code
            assert TOKEN not in response.text
    assert statuses == {"server": expected, "proxy": expected}, case


def test_each_side_keeps_its_own_refusal_text(server, proxy):
    body, headers = call()
    with httpx2.Client(timeout=10, trust_env=False) as http:
        refused = http.post(server.url, content=body, headers=headers)
        assert refused.json() == {"error": "missing or wrong bearer token"}
        assert refused.headers["www-authenticate"] == 'Bearer realm="finmcp"'
        refused = http.post(proxy.url, content=body, headers=headers)
        assert refused.json()["error"]["message"] == "finmcp-proxy: missing or wrong proxy token"
        assert refused.json()["id"] == 1
        # the proxy's own token header works on the proxy only
        token_header = {**headers, "X-Finmcp-Proxy-Token": TOKEN}
        assert http.post(proxy.url, content=body, headers=token_header).status_code == 200
        assert http.post(server.url, content=body, headers=token_header).status_code == 401


def test_the_proxy_never_forwards_a_healthz_request_without_its_token(server, proxy):
    """Before the shared policy, POST /healthz passed the proxy's token check and went upstream
    (with the proxy's upstream credentials), where the server answered 200 with its own health."""
    with httpx2.Client(timeout=10, trust_env=False) as http:
        assert http.post(server.base + "/healthz", content=b"{}").status_code == 200  # what upstream says
        for method in ("POST", "PUT", "DELETE"):
            response = http.request(method, proxy.base + "/healthz", content=b"{}")
            assert response.status_code == 405, method
            assert response.json()["error"]["message"] == "finmcp-proxy: /healthz answers GET only"
        health = http.get(proxy.base + "/healthz").json()
    assert health["role"] == "finmcp-proxy" and health["write_failures"] == 0
