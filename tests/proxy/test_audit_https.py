"""The drift audit against an HTTPS server that wants a bearer token: ``--upstream-ca`` trusts the
private CA and ``--upstream-header 'Authorization: Bearer $VAR'`` reads the key from the environment,
as the proxy's upstreams do. A run is recorded through the proxy, then audited against the server."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from finmcp.proxy.cli import main as proxy_main
from tests.support.processes import Children
from tests.support.tls import mint

TOKEN = "audit-bearer-5e6f7a8b"


@pytest.mark.slow
def test_audit_an_https_server_with_a_key_from_the_environment(tmp_path, monkeypatch, capsys):
    certs = mint(tmp_path / "certs")
    db = tmp_path / "runs.sqlite"
    with Children() as children:
        real = children.server(
            ["--token", TOKEN, "--latency", "none", *certs.cert_args()], ca_file=str(certs.ca)
        )
        proxy = children.proxy(["--upstream", real.url, "--upstream-ca", str(certs.ca), "--db", str(db)])

        async def record() -> Any:
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}) as http:
                transport = streamable_http_client(proxy.tagged("https", "s1", 0), http_client=http)
                async with Client(transport, mode="auto") as client:
                    await client.list_tools()
                    return await client.call_tool("GetCurrentTime", {})

        assert not anyio.run(record).is_error
        children.stop(proxy)
        args = ["audit", "--db", str(db), "--run", "https", "--against", real.url, "--json", "--volatile"]
        monkeypatch.delenv("AUDIT_KEY", raising=False)
        with pytest.raises(SystemExit):  # the key's variable is not set: a usage error
            proxy_main(
                [
                    *args,
                    "--upstream-ca",
                    str(certs.ca),
                    "--upstream-header",
                    "Authorization: Bearer $AUDIT_KEY",
                ]
            )
        monkeypatch.setenv("AUDIT_KEY", TOKEN)
        assert (
            proxy_main([*args, "--upstream-header", "Authorization: Bearer $AUDIT_KEY"]) == 2
        )  # untrusted CA
        capsys.readouterr()
        code = proxy_main(
            [*args, "--upstream-ca", str(certs.ca), "--upstream-header", "Authorization: Bearer $AUDIT_KEY"]
        )
        report = json.loads(capsys.readouterr().out)
        assert report["definitions"]["compared"] and report["definitions"]["findings"] == []
        assert report["counts"] == {"identical": 1}, report
        assert code == 0
