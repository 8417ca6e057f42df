"""finmcp-server's --tls-cert/--tls-key: bad files are start-up errors before anything loads.

Serving over TLS (both transports, with a token, through the proxy and direct) runs in
tests/proxy/test_tls.py, which shares the TLS servers.
"""

from __future__ import annotations

import pytest

from finmcp.server.cli import main
from tests.support.tls import mint


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tls-key", "/nonexistent/k.pem"], "--tls-cert and --tls-key go together"),
        (
            ["--tls-cert", "/nonexistent/c.pem", "--tls-key", "/nonexistent/k.pem"],
            "--tls-cert /nonexistent/c.pem: no such file",
        ),
        (["--tls-cert", "CERT", "--tls-key", "KEY", "--transport", "stdio"], "need an HTTP transport"),
    ],
)
def test_bad_tls_options_are_start_up_errors(tmp_path, capsys, args, message):
    certs = mint(tmp_path)
    args = [{"CERT": str(certs.cert), "KEY": str(certs.key)}.get(a, a) for a in args]
    assert main(["--port", "0", *args]) == 2
    assert message in capsys.readouterr().err


def test_a_key_that_does_not_match_is_refused(tmp_path, capsys):
    one, other = mint(tmp_path / "a"), mint(tmp_path / "b")
    assert main(["--port", "0", "--tls-cert", str(one.cert), "--tls-key", str(other.key)]) == 2
    assert "cannot load the certificate and key" in capsys.readouterr().err
