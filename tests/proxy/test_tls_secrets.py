"""No secret byte in anything the proxy keeps or shows: a real run, every stored and exported form.

A host that cannot send headers reaches a keyed TLS upstream through ``--upstream-header`` values
taken from the environment; the client also sends a key spelled with a JSON escape
(``"\\u0061piKey"``). Afterwards none of the secrets is in the trace store, the recordings, the proxy's
log (at debug level), ``/healthz`` or any export format.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest

from finmcp.recordings import RecordingStore
from tests.support.processes import Children, health
from tests.support.rpc import modern_headers, tool_call
from tests.support.tls import mint
from tests.support.traces import export_formats, wait_calls

UPSTREAM_TOKEN = "upstream-bearer-7f3a9c21d4e5"
API_KEY = "qieman-api-key-99b1c2d3"
PROXY_TOKEN = "proxy-token-5e6f7a8b9c0d"
ESCAPED = "escaped-arg-secret-31a2b3c4"
SECRETS = (UPSTREAM_TOKEN, API_KEY, PROXY_TOKEN, ESCAPED)
FORMATS = ("jsonl", "finmcp", "fintoolbench", "otlp", "otlp-proto", "har", "csv", "parquet")


def _escaped_call(rid: int) -> bytes:
    body = json.dumps(
        tool_call("SearchFunds", {"keyword": "红利", "PLACEHOLDER": ESCAPED}, rid, client="host")
    )
    return body.replace('"PLACEHOLDER"', '"\\u0061piKey"').encode()


@pytest.mark.slow
def test_no_secret_lands_in_any_stored_or_exported_file(tmp_path, capsys):
    certs = mint(tmp_path / "certs")
    db, rec = tmp_path / "runs.sqlite", tmp_path / "rec.sqlite"
    env = {"UPSTREAM_TOKEN": UPSTREAM_TOKEN, "QIEMAN_API_KEY": API_KEY}
    with Children() as children:
        server = children.server(
            ["--token", UPSTREAM_TOKEN, "--latency", "none", *certs.cert_args()], ca_file=str(certs.ca)
        )
        proxy = children.proxy(
            [
                "--upstream", server.url, "--upstream-ca", str(certs.ca),
                "--upstream-header", "Authorization: Bearer ${UPSTREAM_TOKEN}",
                "--upstream-header", "X-Api-Key: $QIEMAN_API_KEY",
                "--token", PROXY_TOKEN, "--db", str(db), "--recordings", str(rec), "--log-level", "debug",
            ],
            env=env,
        )  # fmt: skip
        headers = {**modern_headers("tools/call", "SearchFunds"), "X-Finmcp-Proxy-Token": PROXY_TOKEN}
        with httpx2.Client(timeout=20) as http:
            for rid in (1, 2):
                response = http.post(
                    proxy.tagged("sec", "s1", 0), content=_escaped_call(rid), headers=headers
                )
                assert response.status_code == 200, response.text
                assert "result" in response.text  # the upstream took the proxy's credentials
        calls = wait_calls(db, "sec", 2, settled=True)
        assert [c["status"] for c in calls] == ["ok", "ok"]
        shown = json.dumps(health(proxy))
        stderr = children.stop(proxy)
    for secret in SECRETS:
        assert secret not in shown
        assert secret not in stderr
    stored = [p for p in tmp_path.iterdir() if p.name.startswith(("runs.sqlite", "rec.sqlite"))]
    assert any(p.name == "rec.sqlite" for p in stored)
    outputs = export_formats(db, "sec", tmp_path, FORMATS)
    capsys.readouterr()
    for path in [*stored, *outputs]:
        data = Path(path).read_bytes()
        for secret in SECRETS:
            assert secret.encode() not in data, f"{secret} in {path.name}"
    with RecordingStore.open(db) as store:
        body = store.db.conn.execute(
            "SELECT body FROM messages WHERE method = 'tools/call' LIMIT 1"
        ).fetchone()[0]
    assert json.loads(body)["params"]["arguments"] == {"keyword": "红利", "apiKey": "[REDACTED]"}
