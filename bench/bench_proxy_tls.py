"""finmcp-proxy in front of an HTTPS upstream against a direct TLS client, measured in the same run.

Replayed ``tools/call`` throughput (calls/s) and client-side p50/p99 at 1 and 8 concurrent sessions
(the workload of :mod:`bench.calls`), both protocol eras, to one ``finmcp-server --tls-cert/--tls-key``:

- ``direct-tls``: SDK client → server over HTTPS (the baseline);
- ``finmcp-proxy``: SDK client → proxy (plain HTTP on loopback) → server over HTTPS (pooled
  keep-alive TLS connections);
- ``finmcp-proxy-tls``: SDK client → proxy over HTTPS (``--tls-cert``) → server over HTTPS.

A certificate for 127.0.0.1 is minted for the run with the ``openssl`` command (without it the
benchmark prints a note). ``slowdown`` is direct calls/s over proxied calls/s (1.0 = free); ``added_p50_ms``
the proxied p50 minus the direct p50. Best of ``ROUNDS`` interleaved runs per row.
"""

from __future__ import annotations

import shutil
import ssl
import subprocess
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from bench.calls import CALLS_PER_RUN, CODES, ERAS, TOOL, call_row, drive, recorded_result
from finmcp.proxy.testing import ProxyProcess
from finmcp.recordings import RecordingStore
from finmcp.server.testing import ServerProcess

ROUNDS = 2


def _mint(folder: Path) -> tuple[Path, Path, Path] | None:
    """(CA, certificate, key) PEM files for 127.0.0.1: a self-signed certificate that is its own CA.

    Made with the ``openssl`` command (the bench may not import the tests' ``trustme``); None
    without it.
    """
    openssl = shutil.which("openssl")
    if openssl is None:
        return None
    cert, key = folder / "cert.pem", folder / "key.pem"
    command = [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    command += ["-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=127.0.0.1"]
    command += ["-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return None
    return cert, cert, key


def _client_factory(url: str, mode: str, context: ssl.SSLContext | None) -> Any:
    @asynccontextmanager
    async def make() -> AsyncIterator[Client]:
        async with (
            httpx2.AsyncClient(verify=context or True) as http,
            Client(streamable_http_client(url, http_client=http), mode=mode) as client,
        ):
            yield client

    return make


def _ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    index = {(r["server"], r["era"], r["concurrency"]): r for r in rows}
    out = []
    for (kind, era, concurrency), row in index.items():
        direct = index.get(("direct-tls", era, concurrency))
        if kind == "direct-tls" or direct is None:
            continue
        out.append(
            {
                "bench": "proxy_tls_vs_direct_tls",
                "proxy": kind,
                "era": era,
                "concurrency": concurrency,
                "slowdown": round(direct["calls_per_s"] / row["calls_per_s"], 3),
                "added_p50_ms": round(row["p50_ms"] - direct["p50_ms"], 2),
                "direct_calls_per_s": direct["calls_per_s"],
                "proxied_calls_per_s": row["calls_per_s"],
            }
        )
    return out


def run() -> list[dict[str, Any]]:
    """Rows for the direct TLS client and the proxy (plain and TLS client side), then the ratios."""
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-proxy-tls-") as tmp:
        minted = _mint(Path(tmp))
        if minted is None:
            return [
                {
                    "bench": "proxy_tls",
                    "note": "no openssl command to mint a certificate: not measured",
                }
            ]
        ca, cert, key = minted
        tls_args = ["--tls-cert", str(cert), "--tls-key", str(key)]
        context = ssl.create_default_context(cafile=str(ca))
        rec = Path(tmp) / "recordings.sqlite"
        with RecordingStore.open(rec) as store:
            for code in CODES:
                store.put_response(
                    "qieman79", TOOL, {"fundNameOrCode": code}, recorded_result(code), "imported:bench"
                )
        server_args = ["--miss", "strict", "--recordings", str(rec), "--latency", "none", *tls_args]
        db = Path(tmp) / "runs.sqlite"
        upstream = ["--upstream-ca", str(ca), "--db", str(db)]
        with (
            ServerProcess(server_args, ca_file=str(ca), wait_warm=True) as server,
            ProxyProcess(["--upstream", server.url, *upstream]) as proxy,
            ProxyProcess(["--upstream", server.url, *upstream, *tls_args], ca_file=str(ca)) as tls_proxy,
        ):
            for era, mode in ERAS:
                for concurrency in (1, 8):
                    targets = {
                        "direct-tls": _client_factory(server.url, mode, context),
                        "finmcp-proxy": _client_factory(
                            proxy.tagged("bench-tls", f"http-{mode}"), mode, None
                        ),
                        "finmcp-proxy-tls": _client_factory(
                            tls_proxy.tagged("bench-tls", f"https-{mode}"), mode, context
                        ),
                    }
                    best: dict[str, tuple[float, list[float]]] = {}
                    for _ in range(ROUNDS):
                        for kind, make in targets.items():
                            measured = anyio.run(drive, make, concurrency, 1, CALLS_PER_RUN[concurrency])
                            if kind not in best or measured[0] < best[kind][0]:
                                best[kind] = measured
                    rows += [
                        {"bench": "proxy_tls_calls", **call_row(kind, "http", era, concurrency, *best[kind])}
                        for kind in targets
                    ]
    return rows + _ratios(rows)
