"""CORS on finmcp-proxy (``--cors-origin``), over real HTTP in front of a real finmcp-server.

The proxy answers preflights itself (never forwarded: the upstream's trace would show them and its
own CORS answer would differ), puts its CORS headers on forwarded responses in place of the
upstream's (one ``Access-Control-Allow-Origin``, or the browser refuses the response), on its own
error answers, and leaves the rest of the upstream's head and every body byte alone.
"""

from __future__ import annotations

import httpx2
import pytest

from tests.server.test_cors import (
    FOREIGN,
    PAGE,
    assert_actual_allowed,
    assert_no_cors,
    assert_preflight_allowed,
    preflight,
)
from tests.support.rpc import JSON_HEADERS, initialize, modern_post, tool_call
from tests.support.traces import wait_calls, wait_messages

TOKEN = "proxy-cors-tok"


@pytest.fixture(scope="module")
def pair(module_children, tmp_path_factory):
    # the upstream allows the page too: its own CORS headers must not reach the page twice
    server = module_children.server(["--cors-origin", PAGE])
    db = tmp_path_factory.mktemp("cors") / "runs.sqlite"
    proxy = module_children.proxy(
        ["--upstream", server.url, "--db", str(db), "--cors-origin", PAGE, "--token", TOKEN]
    )
    return server, proxy, db


def test_preflight_is_answered_by_the_proxy_and_never_forwarded(pair):
    server, proxy, db = pair
    response = preflight(proxy.tagged("cors-pre", "s", 0), PAGE)
    assert_preflight_allowed(response, PAGE, ("x-finmcp-proxy-token", "x-finmcp-run", "mcp-method"))
    refused = preflight(proxy.tagged("cors-pre", "s", 0), FOREIGN)
    assert refused.status_code == 403
    assert_no_cors(refused)
    # nothing of either reached the trace (the next request of the run is the first message)
    modern_post(proxy.tagged("cors-pre", "s", 0), tool_call("GetCurrentTime"), {"Authorization": f"Bearer {TOKEN}"})
    messages = wait_messages(db, "cors-pre", count=2)
    assert [m["direction"] for m in messages] == ["c2s", "s2c"]


def test_forwarded_responses_carry_the_proxys_cors_headers_once(pair):
    server, proxy, db = pair
    auth = {"Authorization": f"Bearer {TOKEN}", "Origin": PAGE}
    call = tool_call("GetFundDiagnosis", {"fundNameOrCode": "沪深300"})
    through = modern_post(proxy.tagged("cors-post", "s", 0), call, auth)
    direct = modern_post(server.url, call, {"Origin": PAGE})
    assert through.status_code == direct.status_code == 200
    assert_actual_allowed(through, PAGE)
    assert through.content == direct.content  # the body is the upstream's, byte for byte
    assert [c["status"] for c in wait_calls(db, "cors-post", 1)] == ["ok"]
    # a handshake-era initialize: the session id the page must read is exposed
    with httpx2.Client(timeout=10) as http:
        init = http.post(proxy.tagged("cors-post", "s", 0), json=initialize(), headers={**JSON_HEADERS, **auth})
    assert init.status_code == 200 and init.headers["mcp-session-id"]
    assert_actual_allowed(init, PAGE)


def test_the_proxys_own_refusals_carry_cors_headers_for_the_page(pair):
    server, proxy, db = pair
    no_token = modern_post(proxy.url, tool_call("GetCurrentTime"), {"Origin": PAGE})
    assert no_token.status_code == 401
    assert_actual_allowed(no_token, PAGE)
    foreign = modern_post(proxy.url, tool_call("GetCurrentTime"), {"Origin": FOREIGN, "Authorization": f"Bearer {TOKEN}"})
    assert foreign.status_code == 403
    assert_no_cors(foreign)
    plain = modern_post(proxy.url, tool_call("GetCurrentTime"), {"Authorization": f"Bearer {TOKEN}"})
    assert plain.status_code == 200
    assert plain.headers.get_list("access-control-allow-origin") == []  # no Origin: the upstream's own CORS
