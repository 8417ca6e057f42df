"""CORS on finmcp-server (``--cors-origin``): preflights, response headers, refusals, over real HTTP.

The listener answers a preflight itself (no token asked), a response to a page of an allowed origin
carries ``Access-Control-Allow-Origin`` and exposes the MCP headers, and every other origin keeps the
DNS-rebinding refusal. Off by default: without the flag a preflight gets no CORS headers.
"""

from __future__ import annotations

import argparse

import anyio
import httpx2
import pytest

from finmcp.recordings.plumbing.flags import add_listener_options
from finmcp.server.security import SecurityMiddleware, SecuritySettings
from tests.support.rpc import modern_post, tool_call

PAGE = "http://127.0.0.1:45871"  # a page's origin (nothing needs to listen there)
OTHER = "http://127.0.0.1:45872"
FOREIGN = "http://evil.example"
TOKEN = "cors-s3cret"


def preflight(url: str, origin: str, method: str = "POST") -> httpx2.Response:
    """What a browser sends before a cross-origin POST with JSON and MCP headers."""
    headers = {
        "Origin": origin,
        "Access-Control-Request-Method": method,
        "Access-Control-Request-Headers": "content-type,mcp-protocol-version,mcp-method,mcp-name,authorization",
    }
    with httpx2.Client(timeout=10) as http:
        return http.request("OPTIONS", url, headers=headers)


def assert_preflight_allowed(response: httpx2.Response, origin: str, extra: tuple[str, ...] = ()) -> None:
    assert response.status_code == 204, response.text
    assert response.headers["access-control-allow-origin"] == origin
    assert set(response.headers["access-control-allow-methods"].split(", ")) == {
        "GET",
        "POST",
        "DELETE",
        "OPTIONS",
    }
    allowed = set(response.headers["access-control-allow-headers"].split(", "))
    wanted = {
        "content-type",
        "authorization",
        "mcp-session-id",
        "mcp-protocol-version",
        "last-event-id",
        *extra,
    }
    assert wanted <= allowed, allowed
    assert int(response.headers["access-control-max-age"]) > 0
    assert response.headers["vary"] == "Origin"
    assert "access-control-allow-credentials" not in response.headers


def assert_no_cors(response: httpx2.Response) -> None:
    assert not [k for k in response.headers if k.lower().startswith("access-control-")], response.headers


def assert_actual_allowed(response: httpx2.Response, origin: str) -> None:
    assert response.headers.get_list("access-control-allow-origin") == [origin]
    exposed = {h.strip().lower() for h in response.headers["access-control-expose-headers"].split(",")}
    assert exposed == {"mcp-session-id", "mcp-protocol-version"}


@pytest.fixture(scope="module")
def server(module_children):
    return module_children.server(["--cors-origin", PAGE, "--cors-origin", OTHER + "/", "--token", TOKEN])


def test_preflight_from_an_allowed_origin_is_answered_without_the_token(server):
    assert_preflight_allowed(preflight(server.url, PAGE), PAGE)
    assert_preflight_allowed(preflight(server.url, OTHER, "DELETE"), OTHER)


def test_preflight_from_another_origin_is_refused_without_cors_headers(server):
    for origin in (FOREIGN, "http://127.0.0.1:45873"):  # a loopback origin not listed is not a CORS origin
        response = preflight(server.url, origin)
        assert response.status_code == 403
        assert_no_cors(response)


def test_actual_response_carries_cors_headers_for_an_allowed_origin_only(server):
    call = tool_call("GetFundDiagnosis", {"fundNameOrCode": "沪深300"})
    auth = {"Authorization": f"Bearer {TOKEN}"}
    allowed = modern_post(server.url, call, {"Origin": PAGE, **auth})
    assert allowed.status_code == 200, allowed.text
    assert_actual_allowed(allowed, PAGE)
    assert allowed.headers["vary"] == "Origin"
    # the refusals a page must be able to read carry them too (here: no token)
    refused = modern_post(server.url, call, {"Origin": PAGE})
    assert refused.status_code == 401
    assert_actual_allowed(refused, PAGE)
    # a foreign origin stays refused by the DNS-rebinding check; a command-line client gets no CORS
    foreign = modern_post(server.url, call, {"Origin": FOREIGN, **auth})
    assert foreign.status_code == 403 and "Origin not allowed" in foreign.text
    assert_no_cors(foreign)
    plain = modern_post(server.url, call, auth)
    assert plain.status_code == 200
    assert_no_cors(plain)


# ---------------------------------------------------------------- the middleware in process (fast)


async def _app_with_its_own_cors(scope, receive, send):
    headers = [(b"content-type", b"text/plain"), (b"access-control-allow-origin", b"*")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": b"ok"})


def _asgi(
    policy: SecuritySettings, method: str, headers: dict[str, str]
) -> tuple[int, list[tuple[bytes, bytes]]]:
    sent: list[dict] = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    raw = [(b"host", b"127.0.0.1:8765"), *((k.lower().encode(), v.encode()) for k, v in headers.items())]
    scope = {"type": "http", "method": method, "path": "/mcp", "headers": raw}
    anyio.run(SecurityMiddleware(_app_with_its_own_cors, policy), scope, receive, send)
    return sent[0]["status"], sent[0]["headers"]


def test_a_foreign_cors_origin_passes_the_origin_check_and_replaces_the_apps_cors_headers():
    page = "https://app.example"
    policy = SecuritySettings.build("127.0.0.1", cors_origins=[page])
    status, headers = _asgi(policy, "POST", {"Origin": page})
    assert status == 200
    assert [v for k, v in headers if k == b"access-control-allow-origin"] == [page.encode()]
    assert _asgi(policy, "POST", {"Origin": FOREIGN})[0] == 403
    assert _asgi(policy, "OPTIONS", {"Origin": page, "Access-Control-Request-Method": "POST"})[0] == 204
    assert (
        _asgi(
            policy,
            "OPTIONS",
            {"Origin": page, "Access-Control-Request-Method": "POST", "Host": "evil.example"},
        )[0]
        == 421
    )


def test_cors_is_off_by_default():
    policy = SecuritySettings.build("127.0.0.1")
    preflight = {"Origin": PAGE, "Access-Control-Request-Method": "POST"}
    status, headers = _asgi(policy, "OPTIONS", preflight)  # passed on to the app like any request
    assert status == 200 and headers == [
        (b"content-type", b"text/plain"),
        (b"access-control-allow-origin", b"*"),
    ]
    status, headers = _asgi(policy, "POST", {"Origin": PAGE})
    assert headers == [(b"content-type", b"text/plain"), (b"access-control-allow-origin", b"*")]


@pytest.mark.parametrize(
    "value", ["app.example", "http://app.example/path", "ftp://x", "http://u@x", "http://"]
)
def test_a_malformed_cors_origin_is_a_clear_error(value, capsys):
    parser = argparse.ArgumentParser(prog="finmcp-server")
    add_listener_options(parser, default_port=1, token_help="t", cors=True)
    with pytest.raises(SystemExit) as exc:
        parser.parse_args(["--cors-origin", value])
    assert exc.value.code == 2
    assert "expected scheme://host[:port]" in capsys.readouterr().err
    assert parser.parse_args(["--cors-origin", "HTTP://LocalHost:5173/"]).cors_origin == [
        "http://localhost:5173"
    ]


def test_cors_without_a_listener_is_a_clear_error(capsys):
    from finmcp.proxy.cli import main as proxy_main
    from finmcp.server.cli import main as server_main

    assert server_main(["--transport", "stdio", "--cors-origin", PAGE]) == 2
    assert "--cors-origin needs an HTTP transport" in capsys.readouterr().err
    assert (
        proxy_main(["--transport", "stdio", "--db", "x", "--cors-origin", PAGE, "--upstream-cmd", "--", "x"])
        == 2
    )
    assert "--cors-origin needs --transport http" in capsys.readouterr().err
