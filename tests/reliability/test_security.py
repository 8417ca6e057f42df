"""Security: loopback by default, Host/Origin (DNS rebinding), bearer tokens, redaction, no secret leaks.

Complements tests/server/test_http.py and tests/proxy/test_http.py (which check the basic 401/421/403
answers) with: the defaults themselves, look-alike hosts and origins, token variants, the token never
reaching either process's log (debug level), and secrets absent from every stored byte (database and
WAL files) and from all three exports.
"""

from __future__ import annotations

import json
import signal
import subprocess

import httpx2
import pytest

from finmcp.recordings import SqliteTraceStore
from tests.support.processes import SERVER_SIGTERM_EXIT, stderr_problems
from tests.support.rpc import modern_call
from tests.support.scripts import run_script, script
from tests.support.traces import checkpoint, stored_bytes, wait_messages

SERVER_TOKEN = "srv-tok-7f3a9c2e51d84b60"
PROXY_TOKEN = "prx-tok-0c1d2e3f4a5b6c7d"
SECRET = "sk-live-5a4b3c2d1e0f9a8b"
COOKIE = "sess-cookie-99aa88bb77cc"


def modern(name: str, arguments: dict, rid: int = 1) -> tuple[bytes, dict[str, str]]:
    return modern_call(name, arguments, rid, client="sec")


# ---------------------------------------------------------------- defaults


def test_both_programs_bind_loopback_by_default():
    from finmcp.proxy.cli import build_serve_parser
    from finmcp.server.cli import build_parser

    assert build_parser().parse_args([]).host == "127.0.0.1"
    proxy_args = build_serve_parser().parse_args(["--upstream", "http://127.0.0.1:1/mcp", "--db", "x"])
    assert proxy_args.host == "127.0.0.1"
    # and a real server started without --host announces 127.0.0.1
    process = subprocess.Popen(
        [script("finmcp-server"), "--port", "0", "--latency", "none", "--miss", "strict"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines: list[str] = []
        while not lines or "ready:" not in lines[-1]:  # the ready line, or the end of stderr
            line = process.stderr.readline()
            if not line:
                break
            lines.append(line)
        assert "finmcp-server ready: http://127.0.0.1:" in lines[-1], "".join(lines)
        process.send_signal(signal.SIGTERM)
        rest = process.stderr.read()
        assert process.wait(15) == SERVER_SIGTERM_EXIT
        assert stderr_problems("".join(lines) + rest) == []
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(5)


# ---------------------------------------------------------------- Host / Origin / token


SERVER_ARGS = ["--latency", "none", "--token", SERVER_TOKEN, "--log-level", "debug"]


def proxy_args(server, db) -> list[str]:
    return [
        "--upstream",
        server.url,
        "--db",
        str(db),
        "--token",
        PROXY_TOKEN,
        "--upstream-header",
        f"Authorization: Bearer {SERVER_TOKEN}",
        "--log-level",
        "DEBUG",
    ]


@pytest.fixture(scope="module")
def server(module_children):
    return module_children.server(SERVER_ARGS)


@pytest.fixture(scope="module")
def proxy(server, module_children, tmp_path_factory):
    db = tmp_path_factory.mktemp("sec") / "runs.sqlite"
    proc = module_children.proxy(proxy_args(server, db))
    proc.db = db
    return proc


FOREIGN_HOSTS = [
    "evil.example",
    "127.0.0.1.evil.example",
    "localhost.evil.example",
    "evil.example:80",
    "[::2]:1",
]
FOREIGN_ORIGINS = [
    "http://evil.example",
    "http://127.0.0.1.evil.example",
    "null",
    "file://",
    "ftp://127.0.0.1",
]


@pytest.mark.parametrize("target", ["server", "proxy"])
def test_foreign_hosts_and_origins_are_refused(server, proxy, target):
    url, auth = (server.url, SERVER_TOKEN) if target == "server" else (proxy.url, PROXY_TOKEN)
    body, headers = modern("GetCurrentTime", {})
    headers["Authorization"] = f"Bearer {auth}"
    with httpx2.Client(timeout=10) as http:
        for host in FOREIGN_HOSTS:
            assert http.post(url, content=body, headers={**headers, "Host": host}).status_code == 421, host
        for origin in FOREIGN_ORIGINS:
            assert http.post(url, content=body, headers={**headers, "Origin": origin}).status_code == 403, (
                origin
            )
        for host in ("localhost", "127.0.0.1", "LOCALHOST:1234"):
            assert http.post(url, content=body, headers={**headers, "Host": host}).status_code == 200, host
        local = {**headers, "Origin": "http://localhost:3000"}
        assert http.post(url, content=body, headers=local).status_code == 200


@pytest.mark.parametrize("target", ["server", "proxy"])
def test_token_is_enforced_on_every_path_but_healthz(server, proxy, target):
    base, url, token = (
        (server.base, server.url, SERVER_TOKEN)
        if target == "server"
        else (proxy.base, proxy.url, PROXY_TOKEN)
    )
    body, headers = modern("GetCurrentTime", {})
    wrong = [
        {},
        {"Authorization": token},
        {"Authorization": f"Basic {token}"},
        {"Authorization": f"Bearer {token}x"},
        {"Authorization": f"Bearer {token[:-1]}"},
        {"Authorization": "Bearer"},
    ]
    with httpx2.Client(timeout=10) as http:
        for extra in wrong:
            response = http.post(url, content=body, headers={**headers, **extra})
            assert response.status_code == 401, extra
            assert token not in response.text
        assert http.post(f"{url}?token={token}", content=body, headers=headers).status_code == 401
        assert http.get(base + "/nowhere").status_code == 401  # unknown paths too
        assert http.delete(url).status_code == 401
        assert http.get(base + "/healthz").status_code == 200
        ok = http.post(url, content=body, headers={**headers, "Authorization": f"Bearer {token}"})
        assert ok.status_code == 200 and ok.json()["result"]["isError"] is False


def test_tokens_never_reach_either_log(children, tmp_path):
    server = children.server(SERVER_ARGS)
    proxy = children.proxy(proxy_args(server, tmp_path / "runs.sqlite"))
    body, headers = modern("GetCurrentTime", {})
    with httpx2.Client(timeout=10) as http:
        http.post(proxy.url, content=body, headers={**headers, "Authorization": f"Bearer {PROXY_TOKEN}"})
        http.post(proxy.url, content=body, headers={**headers, "X-Finmcp-Proxy-Token": PROXY_TOKEN})
        http.post(proxy.url, content=body, headers={**headers, "Authorization": "Bearer wrong-token-123456"})
        http.post(server.url, content=body, headers={**headers, "Authorization": "Bearer wrong-token-123456"})
    logs = children.stop(proxy) + children.stop(server)  # all they ever wrote, shutdown included
    assert "DEBUG" in logs  # the processes really logged at debug level
    for token in (SERVER_TOKEN, PROXY_TOKEN):
        assert token not in logs


# ---------------------------------------------------------------- redaction


def test_secrets_never_stored_or_exported(proxy, tmp_path):
    """apiKey/token/password arguments, cookies, query keys and both tokens: nowhere in the files."""
    arguments = {
        "keyword": "bond",
        "apiKey": SECRET,
        "token": SECRET,
        "password": SECRET,
        "nested": [{"api_key": SECRET, "Cookie": COOKIE}],
    }
    body, headers = modern("SearchFunds", arguments, rid=5)
    headers |= {"Authorization": f"Bearer {PROXY_TOKEN}", "Cookie": f"sid={COOKIE}", "X-Api-Key": SECRET}
    url = proxy.tagged("secrets", "s1", 0) + f"?api_key={SECRET}&token={SECRET}&plain=1"
    response = httpx2.post(url, content=body, headers=headers, timeout=10)
    assert response.status_code == 200
    token_header = {**headers, "X-Finmcp-Proxy-Token": PROXY_TOKEN}
    del token_header["Authorization"]
    assert httpx2.post(url, content=body, headers=token_header, timeout=10).status_code == 200
    wait_messages(
        proxy.db, "secrets", lambda m: m["direction"] == "s2c", count=2
    )  # written behind the traffic
    with SqliteTraceStore.open(proxy.db) as store:
        calls = store.calls("secrets")
        rows = store.messages(run_id="secrets")
    checkpoint(proxy.db)
    assert len(calls) == 2 and calls[0]["arguments"]["apiKey"] == "[REDACTED]"
    assert calls[0]["arguments"]["keyword"] == "bond"  # only secrets are touched
    assert calls[0]["arguments"]["nested"] == [{"api_key": "[REDACTED]", "Cookie": "[REDACTED]"}]
    stored = json.dumps(rows, ensure_ascii=False)
    assert "plain=1" in stored and "[REDACTED]" in stored
    raw = stored_bytes(proxy.db)
    for secret in (SECRET, COOKIE, PROXY_TOKEN, SERVER_TOKEN):
        assert secret.encode() not in raw, secret
    for fmt in ("jsonl", "finmcp", "fintoolbench"):
        out = tmp_path / f"export.{fmt}"
        done = run_script(
            "finmcp-proxy",
            "export",
            "--db",
            str(proxy.db),
            "--run",
            "secrets",
            "--format",
            fmt,
            "--output",
            str(out),
        )
        assert done.returncode == 0, done.stderr
        text = out.read_text(encoding="utf-8")
        assert "bond" in text and SECRET not in text and COOKIE not in text


def test_upstream_url_credentials_are_not_stored(server, children, tmp_path):
    db = tmp_path / "runs.sqlite"
    upstream = server.url + f"?api_key={SECRET}"
    args = [
        "--upstream",
        upstream,
        "--db",
        str(db),
        "--upstream-header",
        f"Authorization: Bearer {SERVER_TOKEN}",
    ]
    proxy = children.proxy(args)
    body, headers = modern("GetCurrentTime", {})
    assert (
        httpx2.post(proxy.tagged("up", "s", 0), content=body, headers=headers, timeout=10).status_code == 200
    )
    children.stop(proxy)  # SIGTERM: the proxy commits every queued row before it exits
    with SqliteTraceStore.open(db) as store:
        (session,) = store.sessions("up")
    checkpoint(db)
    assert session["upstream"].endswith("?api_key=[REDACTED]")
    assert SECRET.encode() not in stored_bytes(db)


def test_upstream_url_credentials_are_not_logged(server, children, tmp_path):
    upstream = server.url + f"?api_key={SECRET}"
    proxy = children.proxy(["--upstream", upstream, "--db", str(tmp_path / "r.sqlite")])
    body, headers = modern("GetCurrentTime", {})
    # no server token (the proxy adds none here): the upstream refuses the call, the proxy passes it on
    assert (
        httpx2.post(proxy.tagged("up", "s", 0), content=body, headers=headers, timeout=10).status_code == 401
    )
    text = children.stop(proxy)  # all it ever wrote, shutdown included
    assert "api_key=[REDACTED]" in text and SECRET not in text
