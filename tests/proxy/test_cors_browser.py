"""A web page on another loopback origin calls finmcp-proxy and finmcp-server from headless Chromium.

The page (served on its own port, so every call is cross-origin) makes a stateless 2026-era
``tools/call`` and a handshake-era ``initialize`` + ``tools/call`` with ``fetch``, reading the
session id from the exposed ``Mcp-Session-Id`` header, and shows the results; both listeners run with
``--cors-origin`` set to the page's origin (the server too, so the proxy must not pass its CORS
headers on twice). The test reads the results in the DOM and finds the proxy's calls in its trace.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.support.browser import chromium_context
from tests.support.rpc import MODERN, modern_meta, modern_post, tool_call
from tests.support.traces import wait_calls

pytestmark = pytest.mark.slow

TOOL, ARGUMENTS = "GetFundDiagnosis", {"fundNameOrCode": "沪深300"}

PAGE = """<!doctype html><meta charset="utf-8"><title>finmcp from a page</title>
<pre id="proxy"></pre><pre id="server"></pre>
<script>
const TOOL = %(tool)s, ARGS = %(args)s, META = %(meta)s, MODERN = %(modern)s;
async function rpc(url, message, headers) {
  const response = await fetch(url, {method: "POST", body: JSON.stringify(message), headers: {
    "Content-Type": "application/json", "Accept": "application/json, text/event-stream", ...headers}});
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


@pytest.fixture
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


def test_a_page_on_another_origin_calls_the_proxy_and_the_server(children, tmp_path, page_origin):
    server = children.server(["--cors-origin", page_origin])
    db = tmp_path / "runs.sqlite"
    proxy = children.proxy(["--upstream", server.url, "--db", str(db), "--cors-origin", page_origin])
    proxied = proxy.tagged("browser", "page", 0)
    expected = modern_post(server.url, tool_call(TOOL, ARGUMENTS)).json()["result"]["structuredContent"]
    with chromium_context() as browser:
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(f"{page_origin}/?proxy={proxied}&server={server.url}")
        page.wait_for_selector("#server[data-done]", timeout=20_000)
        shown = {name: page.text_content(f"#{name}") or "" for name in ("proxy", "server")}
    assert not errors, errors
    for name, text in shown.items():
        assert not text.startswith("error"), f"{name}: {text}"
        result = json.loads(text)
        assert result == {"stateless": expected, "session": True, "handshake": expected}, name
    calls = wait_calls(db, "browser", 2)
    assert [(c["tool"], c["status"]) for c in calls] == [(TOOL, "ok")] * 2
