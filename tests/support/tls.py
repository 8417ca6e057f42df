"""Throwaway TLS material for tests (trustme): a CA, a certificate for loopback, client contexts.

Nothing is checked in: every test run mints its own CA and certificates into a temporary folder.
"""

from __future__ import annotations

import datetime
import socket
import ssl
import threading
from dataclasses import dataclass
from pathlib import Path

import httpx2
import trustme


@dataclass(frozen=True)
class Certs:
    """PEM files of one CA and one leaf certificate it issued (``cert``, ``key``)."""

    ca: Path
    cert: Path
    key: Path

    def client_context(self) -> ssl.SSLContext:
        """A client context trusting only this CA."""
        return ssl.create_default_context(cafile=str(self.ca))

    def http_client(self, **kwargs: object) -> httpx2.AsyncClient:
        """An SDK-compatible HTTP client trusting this CA."""
        return httpx2.AsyncClient(verify=self.client_context(), **kwargs)  # type: ignore[arg-type]

    def cert_args(self) -> list[str]:
        """``--tls-cert FILE --tls-key FILE``."""
        return ["--tls-cert", str(self.cert), "--tls-key", str(self.key)]


def mint(
    folder: Path, *hosts: str, expired: bool = False, ca: trustme.CA | None = None, name: str = "leaf"
) -> Certs:
    """A CA (new unless given) and a certificate for ``hosts`` (default 127.0.0.1 and localhost)."""
    folder.mkdir(parents=True, exist_ok=True)
    ca = ca or trustme.CA()
    kwargs = {}
    if expired:
        now = datetime.datetime.now(datetime.UTC)
        kwargs = {
            "not_before": now - datetime.timedelta(days=30),
            "not_after": now - datetime.timedelta(days=1),
        }
    leaf = ca.issue_cert(*(hosts or ("127.0.0.1", "localhost")), **kwargs)  # type: ignore[arg-type]
    paths = Certs(folder / f"{name}-ca.pem", folder / f"{name}-cert.pem", folder / f"{name}-key.pem")
    ca.cert_pem.write_to_path(str(paths.ca))
    leaf.cert_chain_pems[0].write_to_path(str(paths.cert))
    for extra in leaf.cert_chain_pems[1:]:
        extra.write_to_path(str(paths.cert), append=True)
    leaf.private_key_pem.write_to_path(str(paths.key))
    return paths


class HandshakeOnlyServer:
    """A loopback TLS listener that completes (or fails) handshakes and closes: certificate-failure tests.

    ``tls=False``: a plain TCP listener that records the first bytes each connection sends (a TLS
    ClientHello starts with ``0x16 0x03``), to show a client never fell back to plain HTTP.
    """

    def __init__(self, certs: Certs | None) -> None:
        self.context = None
        if certs is not None:
            self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            self.context.load_cert_chain(str(certs.cert), str(certs.key))
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.first_bytes: list[bytes] = []
        self.handshakes = 0
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                try:
                    if self.context is None:
                        self.first_bytes.append(conn.recv(5))
                        conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
                        continue
                    with self.context.wrap_socket(conn, server_side=True):
                        self.handshakes += 1
                except (OSError, ssl.SSLError):
                    continue

    def close(self) -> None:
        self.sock.close()
