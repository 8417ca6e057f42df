"""TLS to upstreams (both sides, both HTTP transports) and on the proxy's own listener.

Real processes on loopback; certificates minted per run with trustme (tests/support/tls.py).
"""

from __future__ import annotations

import json
import re
import ssl
import subprocess
import sys

import anyio
import httpx2
import pytest
from mcp.client import Client
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from finmcp.proxy.testing import stdio_args
from tests.support.processes import Children, health
from tests.support.raw_upstream import RawUpstream
from tests.support.rpc import modern_headers, modern_message, tool_call
from tests.support.sdk import first_text
from tests.support.tls import Certs, HandshakeOnlyServer, mint

TOKEN = "tls-upstream-token-1234567890"


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> Certs:
    return mint(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def tls_servers(certs, module_children):
    """finmcp-server over TLS with a bearer token: Streamable HTTP and legacy SSE."""
    common = ["--token", TOKEN, "--latency", "none", *certs.cert_args()]
    http = module_children.server(common, ca_file=str(certs.ca))
    sse = module_children.server([*common, "--transport", "sse"], ca_file=str(certs.ca))
    return http, sse


def _bearer(certs: Certs | None = None) -> httpx2.AsyncClient:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    return certs.http_client(headers=headers) if certs else httpx2.AsyncClient(headers=headers)


@pytest.mark.slow
def test_https_upstream_keeps_alive_and_forwards_the_clients_authorization(certs, tls_servers, tmp_path):
    http_server, _ = tls_servers
    assert http_server.url.startswith("https://127.0.0.1:")
    db = tmp_path / "runs.sqlite"
    with Children() as children:
        proxy = children.proxy(
            ["--upstream", http_server.url, "--db", str(db), "--upstream-ca", str(certs.ca)]
        )

        async def main() -> list[str]:
            async with _bearer() as http:
                transport = streamable_http_client(proxy.tagged("tls", "s1", 0), http_client=http)
                async with Client(transport, mode="auto") as client:
                    return [first_text(await client.call_tool("GetCurrentTime", {})) for _ in range(6)]

        texts = anyio.run(main)
        assert len(texts) == 6 and all(texts)
        stats = health(proxy)["upstream_connections"]
        assert stats["reused"] >= 5, stats  # keep-alive over TLS: the pooled TLS connections are reused
        assert stats["opened"] <= 3, stats


def test_sdk_clients_reach_the_tls_servers_directly_and_the_token_still_counts(certs, tls_servers):
    http_server, sse_server = tls_servers

    async def main() -> tuple[str, str]:
        async with (
            _bearer(certs) as http,
            Client(streamable_http_client(http_server.url, http_client=http)) as session,
        ):
            one = first_text(await session.call_tool("GetCurrentTime", {}))

        def factory(headers=None, timeout=None, auth=None):  # noqa: ARG001 - the SDK's factory signature
            return certs.http_client(headers=headers, timeout=timeout)

        sse = sse_client(
            sse_server.endpoint("/sse"),
            headers={"Authorization": f"Bearer {TOKEN}"},
            httpx_client_factory=factory,
        )
        async with Client(sse) as session:
            two = first_text(await session.call_tool("GetCurrentTime", {}))
        return one, two

    assert all(anyio.run(main))
    assert httpx2.post(http_server.url, json={}, verify=certs.client_context()).status_code == 401


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["http", "sse"])
def test_stdio_side_reaches_tls_upstreams(certs, tls_servers, tmp_path, transport):
    server = tls_servers[0] if transport == "http" else tls_servers[1]
    upstream = (
        ["--upstream", server.url] if transport == "http" else ["--upstream-sse", server.endpoint("/sse")]
    )
    args = stdio_args(upstream, tmp_path / "runs.sqlite", "--upstream-ca", str(certs.ca))
    args += ["--upstream-header", "Authorization: Bearer $TLS_TEST_TOKEN", "--run", "stdio-tls"]
    params = StdioServerParameters(command=sys.executable, args=args, env={"TLS_TEST_TOKEN": TOKEN})

    async def main() -> str:
        async with Client(params, mode="legacy") as client:
            return first_text(await client.call_tool("GetCurrentTime", {}))

    assert "20" in anyio.run(main)


def _proxy_error(upstream_url: str, tmp_path, *extra: str) -> tuple[list[httpx2.Response], str]:
    """Two requests through a proxy whose upstream fails TLS: the responses and the proxy's stderr."""
    with Children() as children:
        proxy = children.proxy(
            ["--upstream", upstream_url, "--db", str(tmp_path / "runs.sqlite"), *extra],
            allow=[r"TLS to upstream"],
        )
        body = {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}
        headers = {"accept": "application/json, text/event-stream"}
        responses = [httpx2.post(proxy.url, json=body, headers=headers, timeout=10) for _ in range(2)]
        stderr = children.stop(proxy)
    return responses, stderr


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("unknown-ca", r"unknown CA"),
        ("expired", r"certificate has expired"),
        ("mismatch", r"hostname mismatch: the certificate is not valid for '127\.0\.0\.1'"),
    ],
)
def test_certificate_failures_name_the_host_and_reason_and_are_logged_once(tmp_path, case, reason):
    folder = tmp_path / "certs"
    if case == "expired":
        served = mint(folder, expired=True)
    elif case == "mismatch":
        served = mint(folder, "other.example")
    else:
        served = mint(folder)
    listener = HandshakeOnlyServer(served)
    try:
        ca = [] if case == "unknown-ca" else ["--upstream-ca", str(served.ca)]
        responses, stderr = _proxy_error(f"https://127.0.0.1:{listener.port}/mcp", tmp_path, *ca)
    finally:
        listener.close()
    for response in responses:
        assert response.status_code == 502
        text = response.text
        assert f"TLS to upstream 127.0.0.1:{listener.port} failed" in text
        assert re.search(reason, text), text
    logged = [line for line in stderr.splitlines() if "TLS to upstream" in line]
    assert len(logged) == 1, stderr  # one log line for the same failure, however many requests hit it


def test_an_https_upstream_never_falls_back_to_plain_http(tmp_path):
    plain = HandshakeOnlyServer(None)
    try:
        responses, _ = _proxy_error(f"https://127.0.0.1:{plain.port}/mcp", tmp_path)
    finally:
        plain.close()
    assert all(r.status_code == 502 for r in responses)
    assert "does not speak TLS" in responses[0].text or "TLS to upstream" in responses[0].text
    assert plain.first_bytes and all(
        first[:2] == b"\x16\x03" for first in plain.first_bytes
    )  # ClientHellos only


def test_proxy_listener_serves_tls(certs, tls_servers, tmp_path):
    http_server, _ = tls_servers
    db = tmp_path / "runs.sqlite"
    args = [
        "--upstream",
        http_server.url,
        "--db",
        str(db),
        "--upstream-ca",
        str(certs.ca),
        *certs.cert_args(),
    ]
    with Children() as children:
        proxy = children.proxy(args, ca_file=str(certs.ca))
        assert proxy.url.startswith("https://")
        assert health(proxy)["status"] == "ok"

        async def main() -> str:
            async with _bearer(certs) as http:
                transport = streamable_http_client(proxy.tagged("tls-listen", "s1", 0), http_client=http)
                async with Client(transport, mode="auto") as client:
                    return first_text(await client.call_tool("GetCurrentTime", {}))

        assert anyio.run(main)
        with pytest.raises(httpx2.HTTPError):  # plain HTTP to the TLS port gets no answer
            httpx2.get(proxy.base.replace("https:", "http:") + "/healthz", timeout=3)
        with pytest.raises(httpx2.ConnectError):  # an untrusted client refuses the certificate
            httpx2.get(proxy.base + "/healthz", timeout=3)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--upstream-header", "X-Api-Key: $FINMCP_TLS_TEST_UNSET"], r"\$FINMCP_TLS_TEST_UNSET is not set"),
        (["--upstream-ca", "/nonexistent/ca.pem"], r"--upstream-ca /nonexistent/ca.pem: no such file"),
        (["--tls-cert", "/nonexistent/c.pem"], r"--tls-cert and --tls-key go together"),
        (
            ["--tls-cert", "/nonexistent/c.pem", "--tls-key", "/x.pem"],
            r"--tls-cert /nonexistent/c.pem: no such",
        ),
    ],
)
def test_bad_tls_and_header_options_are_clear_start_up_errors(tmp_path, args, message):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "proxy",
            "--upstream",
            "https://127.0.0.1:9/mcp",
            "--db",
            str(tmp_path / "r.db"),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert re.search(message, done.stderr), done.stderr
    assert "Traceback" not in done.stderr


def test_upstream_header_values_come_from_the_environment(monkeypatch):
    from finmcp.proxy.cli import build_serve_parser

    monkeypatch.setenv("FINMCP_TLS_KEY", "k-123")
    args = build_serve_parser().parse_args(
        [
            "--upstream",
            "http://127.0.0.1:1/mcp",
            "--db",
            "x",
            "--upstream-header",
            "X-Api-Key: ${FINMCP_TLS_KEY}-$$x",
        ]
    )
    assert args.upstream_header == [(b"X-Api-Key", b"k-123-$x")]
    json.dumps(str(args.upstream_header))


def test_no_resend_holds_over_tls(proxy_process, tmp_path):
    """Issue 15's rule on pooled TLS connections: a tools/call the upstream may have run is not sent twice."""
    certs = mint(tmp_path / "certs")
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(str(certs.cert), str(certs.key))
    db = tmp_path / "runs.sqlite"
    with RawUpstream(answers=1, after="drop", tls=server_tls) as upstream:
        proxy = proxy_process(["--upstream", upstream.url, "--db", str(db), "--upstream-ca", str(certs.ca)])
        url = proxy.tagged("once", "s", 0)
        with httpx2.Client(timeout=10) as http:  # one keep-alive client connection
            first = _post(http, url, tool_call("GetCurrentTime", {}, 1))
            second = _post(http, url, tool_call("PlaceOrder", {"fund": "000001"}, 2))
            listed = [_post(http, url, modern_message("tools/list", {}, rid)) for rid in (3, 4)]
        assert first.status_code == 200 and "answer to 1" in first.text
        assert second.status_code == 502 and "not sent again" in second.json()["error"]["message"]
        assert [r.status_code for r in listed] == [200, 200]
        assert upstream.ids() == [1, 2, 3, 4, 4]  # the call once; only the safe request went out again
        assert [s.connection for s in upstream.seen] == [0, 0, 1, 1, 2]  # pooled TLS connections reused
    pool = health(proxy)["upstream_connections"]
    assert (pool["lost_after_write"], pool["resent"], pool["not_resent"]) == (2, 1, 1)


def _post(http: httpx2.Client, url: str, message: dict) -> httpx2.Response:
    return http.post(url, content=json.dumps(message), headers=modern_headers(message["method"]))
