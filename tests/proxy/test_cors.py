"""CORS on finmcp-proxy (``--cors-origin``) in front of a real finmcp-server: raw HTTP and a real page.

The proxy answers preflights itself (never forwarded: the upstream's trace would show them and its
own CORS answer would differ), puts its CORS headers on forwarded responses in place of the
upstream's (one ``Access-Control-Allow-Origin``, or the browser refuses the response), on its own
error answers, and leaves the rest of the upstream's head and every body byte alone.

A web page on another loopback origin calls the proxy and the server from headless Chromium. The page (served on its own port, so every call is cross-origin) makes a stateless 2026-era
``tools/call`` and a handshake-era ``initialize`` + ``tools/call`` with ``fetch``, reading the
session id from the exposed ``Mcp-Session-Id`` header, and shows the results; both listeners run with
``--cors-origin`` set to the page's origin (the server too, so the proxy must not pass its CORS
headers on twice); the proxy also wants a token, which the page sends in ``Authorization``. The test
reads the results in the DOM and finds the proxy's calls in its trace.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx2
import pytest

from tests.server.test_cors import (
    FOREIGN,
    assert_actual_allowed,
    assert_no_cors,
    assert_preflight_allowed,
    preflight,
)
from tests.support.browser import chromium_context
from tests.support.rpc import JSON_HEADERS, MODERN, initialize, modern_meta, modern_post, tool_call
from tests.support.traces import wait_calls, wait_messages

TOOL, ARGUMENTS = "GetFundDiagnosis", {"fundNameOrCode": "沪深300"}
TOKEN = "proxy-cors-tok"

PAGE = """<!doctype html><meta charset="utf-8"><title>finmcp from a page</title>
<pre id="proxy"></pre><pre id="server"></pre>
<script>
const TOOL = %(tool)s, ARGS = %(args)s, META = %(meta)s, MODERN = %(modern)s;
async function rpc(url, message, headers) {
  const token = new URLSearchParams(location.search).get("token");
  const auth = token && url.includes("/r/") ? {"Authorization": "Bearer " + token} : {};
  const response = await fetch(url, {method: "POST", body: JSON.stringify(message), headers: {
    "Content-Type": "application/json", "Accept": "application/json, text/event-stream", ...auth, ...headers}});
  const text = await response.text();
  const data = response.headers.get("content-type").startsWith("text/event-stream")
    ? text.split("\\n").filter(l => l.startsWith("data:")).map(l => l.slice(5)).pop() : text;
  return {response, message: data ? JSON.parse(data) : null};
}
async function run(url) {
  const call = {jsonrpc: "2.0", id: 1, method: "tools/call", params: {name: TOOL, arguments: ARGS, _meta: META}};
  const stateless = await rpc(url, call, {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": TOOL});
  const init = await rpc(url, {jsonrpc: "2.0", id: 1, method: "initialize", params: {
    protocolVersion: "2025-11-25", capabilities: {}, clientInfo: {name: "page", version: "1"}}}, {});
  const sid = init.response.headers.get("mcp-session-id");
  const version = init.message.result.protocolVersion;
  const session = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": version};
  await rpc(url, {jsonrpc: "2.0", method: "notifications/initialized"}, session);
  const handshake = await rpc(url, {jsonrpc: "2.0", id: 2, method: "tools/call", params: {name: TOOL, arguments: ARGS}}, session);
  return {stateless: stateless.message.result.structuredContent, session: !!sid,
          handshake: handshake.message.result.structuredContent};
}
async function main() {
  const params = new URLSearchParams(location.search);
  for (const id of ["proxy", "server"]) {
    const out = document.getElementById(id);
    try { out.textContent = JSON.stringify(await run(params.get(id))); }
    catch (error) { out.textContent = "error: " + error; }
    out.dataset.done = "1";
  }
}
main();
</script>"""


class _Page(BaseHTTPRequestHandler):
    body = b""

    def do_GET(self) -> None:  # noqa: N802 - the http.server interface
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def page_origin() -> Iterator[str]:
    """A static page on its own loopback port (another origin than the server's and the proxy's)."""
    _Page.body = (
        PAGE
        % {
            "tool": json.dumps(TOOL),
            "args": json.dumps(ARGUMENTS, ensure_ascii=False),
            "meta": json.dumps(modern_meta("page")),
            "modern": json.dumps(MODERN),
        }
    ).encode()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(scope="module")
def pair(module_children, tmp_path_factory, page_origin):
    """finmcp-server and a proxy in front of it (with a token), both allowing the page's origin."""
    server = module_children.server(["--cors-origin", page_origin])
    db = tmp_path_factory.mktemp("cors") / "runs.sqlite"
    args = ["--upstream", server.url, "--db", str(db), "--cors-origin", page_origin, "--token", TOKEN]
    return server, module_children.proxy(args), db


def test_preflight_is_answered_by_the_proxy_and_never_forwarded(pair, page_origin):
    server, proxy, db = pair
    response = preflight(proxy.tagged("cors-pre", "s", 0), page_origin)
    assert_preflight_allowed(response, page_origin, ("x-finmcp-proxy-token", "x-finmcp-run", "mcp-method"))
    refused = preflight(proxy.tagged("cors-pre", "s", 0), FOREIGN)
    assert refused.status_code == 403
    assert_no_cors(refused)
    # nothing of either reached the trace (the next request of the run is the first message)
    modern_post(
        proxy.tagged("cors-pre", "s", 0), tool_call("GetCurrentTime"), {"Authorization": f"Bearer {TOKEN}"}
    )
    messages = wait_messages(db, "cors-pre", count=2)
    assert [m["direction"] for m in messages] == ["c2s", "s2c"]


def test_forwarded_responses_carry_the_proxys_cors_headers_once(pair, page_origin):
    server, proxy, db = pair
    auth = {"Authorization": f"Bearer {TOKEN}", "Origin": page_origin}
    call = tool_call(TOOL, ARGUMENTS)
    through = modern_post(proxy.tagged("cors-post", "s", 0), call, auth)
    direct = modern_post(server.url, call, {"Origin": page_origin})
    assert through.status_code == direct.status_code == 200
    assert_actual_allowed(through, page_origin)  # the upstream's own header replaced, not doubled
    assert through.content == direct.content  # the body is the upstream's, byte for byte
    assert [c["status"] for c in wait_calls(db, "cors-post", 1)] == ["ok"]
    with httpx2.Client(timeout=10) as http:  # handshake era: the session id the page must read is exposed
        init = http.post(
            proxy.tagged("cors-post", "s", 0), json=initialize(), headers={**JSON_HEADERS, **auth}
        )
    assert init.status_code == 200 and init.headers["mcp-session-id"]
    assert_actual_allowed(init, page_origin)


def test_the_proxys_own_refusals_carry_cors_headers_for_the_page(pair, page_origin):
    server, proxy, db = pair
    no_token = modern_post(proxy.url, tool_call("GetCurrentTime"), {"Origin": page_origin})
    assert no_token.status_code == 401
    assert_actual_allowed(no_token, page_origin)
    foreign = modern_post(
        proxy.url, tool_call("GetCurrentTime"), {"Origin": FOREIGN, "Authorization": f"Bearer {TOKEN}"}
    )
    assert foreign.status_code == 403
    assert_no_cors(foreign)
    plain = modern_post(proxy.url, tool_call("GetCurrentTime"), {"Authorization": f"Bearer {TOKEN}"})
    assert plain.status_code == 200
    assert plain.headers.get_list("access-control-allow-origin") == []  # no Origin, no CORS


@pytest.mark.slow
def test_a_page_on_another_origin_calls_the_proxy_and_the_server(pair, page_origin):
    server, proxy, db = pair
    proxied = proxy.tagged("browser", "page", 0)
    expected = modern_post(server.url, tool_call(TOOL, ARGUMENTS)).json()["result"]["structuredContent"]
    with chromium_context() as browser:
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(f"{page_origin}/?proxy={proxied}&server={server.url}&token={TOKEN}")
        page.wait_for_selector("#server[data-done]", timeout=20_000)
        shown = {name: page.text_content(f"#{name}") or "" for name in ("proxy", "server")}
    assert not errors, errors
    for name, text in shown.items():
        assert not text.startswith("error"), f"{name}: {text}"
        result = json.loads(text)
        assert result == {"stateless": expected, "session": True, "handshake": expected}, name
    calls = wait_calls(db, "browser", 2)
    assert [(c["tool"], c["status"]) for c in calls] == [(TOOL, "ok")] * 2
