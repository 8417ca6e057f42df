"""The listener policy (Host, Origin, token, body size) and socket binding, in process."""

from __future__ import annotations

import errno
import socket
from dataclasses import dataclass

import pytest

from finmcp.recordings.plumbing.listener import (
    ListenerPolicy,
    ListenError,
    allowed_hosts,
    bind_listener,
    bind_socket,
    host_name,
    listen_error,
    socket_url,
)

OK_HOST = (b"host", b"127.0.0.1:8765")


@dataclass(frozen=True, eq=False)
class ProxySide(ListenerPolicy):
    """A side configured by field defaults, as finmcp-proxy's policy is."""

    token_headers: tuple[bytes, ...] = (b"x-finmcp-proxy-token",)
    token_reason: str = "missing or wrong proxy token"


def test_host_names():
    assert host_name("LOCALHOST:80") == "localhost"
    assert host_name("[::1]:8080") == "::1"
    assert host_name("::1") == "::1"
    assert host_name(" example.org ") == "example.org"


def test_allowed_hosts_add_the_bound_host_but_never_a_wildcard():
    assert allowed_hosts("127.0.0.1") == {"127.0.0.1", "localhost", "::1"}
    assert "mybox" in allowed_hosts("0.0.0.0", ["MyBox"]) and "0.0.0.0" not in allowed_hosts("0.0.0.0")
    assert "fe80::2" in allowed_hosts("[fe80::2]") and "10.0.0.5" in allowed_hosts("10.0.0.5")


def test_hosts_and_origins():
    policy = ListenerPolicy.build("127.0.0.1", allow_hosts=["mybox"], allow_origins=["https://ui.example/"])
    assert policy.check([OK_HOST], "/mcp") is None
    assert policy.check([(b"host", b"mybox:1")], "/mcp") is None
    for host in (b"evil.example", b"127.0.0.1.evil.example", b"localhost.evil.example:80", b"[::2]:1"):
        assert policy.check([(b"host", host)], "/mcp") == (
            421,
            "Host header not allowed (DNS rebinding protection)",
        )
    assert policy.check([], "/mcp")[0] == 421
    for origin in (
        b"http://evil.example",
        b"null",
        b"file://",
        b"ftp://127.0.0.1",
        b"http://127.0.0.1.evil.example",
    ):
        assert policy.check([OK_HOST, (b"origin", origin)], "/mcp") == (403, "Origin not allowed")
    for origin in (b"http://localhost:3000", b"https://[::1]", b"https://ui.example", b"HTTPS://UI.EXAMPLE/"):
        assert policy.check([OK_HOST, (b"origin", origin)], "/mcp") is None, origin


def test_the_last_of_repeated_headers_counts():
    policy = ListenerPolicy.build("127.0.0.1")
    assert policy.check([(b"host", b"localhost"), (b"host", b"evil.example")], "/mcp")[0] == 421
    assert policy.check({b"host": b"localhost"}, "/mcp") is None  # a mapping works too


def test_token_by_bearer_or_the_sides_token_headers():
    server = ListenerPolicy.build("127.0.0.1", "tok")
    proxy = ProxySide.build("127.0.0.1", "tok")
    bearer = (b"authorization", b"Bearer tok")
    header = (b"x-finmcp-proxy-token", b"tok")
    assert server.check([OK_HOST, bearer], "/mcp") is None and proxy.check([OK_HOST, bearer], "/mcp") is None
    assert server.check([OK_HOST, header], "/mcp") == (401, "missing or wrong bearer token")
    assert proxy.check([OK_HOST, header], "/mcp") is None
    for wrong in (b"tok", b"Basic tok", b"Bearer tokx", b"Bearer to", b"bearer tok", b"Bearer"):
        assert proxy.check([OK_HOST, (b"authorization", wrong)], "/mcp") == (
            401,
            "missing or wrong proxy token",
        )
    assert proxy.check([OK_HOST, (b"x-finmcp-proxy-token", b"Bearer tok")], "/mcp")[0] == 401
    assert server.check([OK_HOST], "/healthz") is None  # public
    assert server.check([OK_HOST], "/healthz/x")[0] == 401
    assert server.check([(b"host", b"evil.example")], "/healthz")[0] == 421  # Host still checked


def test_body_limit_only_when_the_policy_owns_it():
    limited = ListenerPolicy.build("127.0.0.1", max_body=100)
    assert limited.check([OK_HOST, (b"content-length", b"100")], "/mcp") is None
    assert limited.check([OK_HOST, (b"content-length", b"101")], "/mcp") == (
        413,
        "request body too large (limit 100 bytes)",
    )
    assert limited.check([OK_HOST, (b"content-length", b"x")], "/mcp") == (400, "invalid Content-Length")
    assert ListenerPolicy.build("127.0.0.1").check([OK_HOST, (b"content-length", b"x" * 3)], "/mcp") is None
    with pytest.raises(ValueError, match="positive"):
        ListenerPolicy.build("127.0.0.1", max_body=0)


@pytest.mark.parametrize(("blocking", "inheritable"), [(True, True), (False, False)])
def test_bind_socket(blocking, inheritable):
    sock = bind_socket("127.0.0.1", 0, blocking=blocking, inheritable=inheritable)
    try:
        assert sock.getblocking() is blocking and sock.get_inheritable() is inheritable
        assert sock.proto == socket.IPPROTO_TCP and sock.getsockname()[1] > 0
        with socket.create_connection(sock.getsockname()[:2], timeout=5):
            pass
        with pytest.raises(OSError):
            bind_socket("127.0.0.1", sock.getsockname()[1], blocking=True, inheritable=False)
    finally:
        sock.close()


def test_bind_listener_warns_off_loopback_and_names_an_address_it_cannot_bind(capsys) -> None:
    with bind_listener("prog", "127.0.0.1", 0, exposes="read things", token=None) as quiet:
        assert capsys.readouterr().err == ""
        assert socket_url(quiet, "https") == f"https://127.0.0.1:{quiet.getsockname()[1]}"
        port = quiet.getsockname()[1]
        in_use = (
            rf"^127\.0\.0\.1:{port} is in use; pick another with --port N \(or --port 0 for any free port\)$"
        )
        with pytest.raises(ListenError, match=in_use):
            bind_listener("prog", "127.0.0.1", port, exposes="read things", token=None)
    with bind_listener("prog", "0.0.0.0", 0, exposes="read things", token=None):
        warning = "prog: warning: binding 0.0.0.0, not loopback; other machines can read things (consider --token)\n"
        assert capsys.readouterr().err == warning
    with bind_listener("prog", "0.0.0.0", 0, exposes="read things", token="t"):
        assert capsys.readouterr().err.endswith("other machines can read things\n")


def test_every_bind_failure_is_one_line_naming_the_flag_to_change() -> None:
    """In use and a privileged port name --port; an address not of this machine names --host."""
    with pytest.raises(ListenError) as not_here:  # TEST-NET-1: never an address of this machine
        bind_listener("prog", "192.0.2.1", 0, exposes="read things", token="t")
    assert str(not_here.value).startswith("cannot bind 192.0.2.1:0: ")
    assert str(not_here.value).endswith("; --host must name an address of this machine")
    unknown = listen_error("nowhere", 0, socket.gaierror(socket.EAI_NONAME, "Name or service not known"))
    assert str(unknown) == (
        "cannot bind nowhere:0: Name or service not known; --host must name an address of this machine"
    )
    denied = listen_error("127.0.0.1", 80, PermissionError(errno.EACCES, "Permission denied"))
    assert str(denied) == (
        "cannot bind 127.0.0.1:80: Permission denied (ports below 1024 need privileges); "
        "pick another with --port N (or --port 0 for any free port)"
    )
    in_use = listen_error("::1", 8770, OSError(errno.EADDRINUSE, "Address already in use"))
    assert str(in_use) == "[::1]:8770 is in use; pick another with --port N (or --port 0 for any free port)"
    other = listen_error("127.0.0.1", 1, OSError(errno.EINVAL, "Invalid argument"))
    assert str(other) == "cannot bind 127.0.0.1:1: Invalid argument"
    for error in (not_here.value, unknown, denied, in_use, other):
        assert "\n" not in str(error)
