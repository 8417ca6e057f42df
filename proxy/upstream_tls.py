"""TLS to upstreams: the client context (system trust store or ``--upstream-ca``) and readable failures.

An ``https://`` upstream is always reached over TLS, with the certificate checked against the
system trust store (:func:`ssl.create_default_context`) or, with ``--upstream-ca FILE``, against
that file's CAs instead; the host name is sent as SNI and checked against the certificate. There is
no fallback to plain HTTP: a failed handshake is an error naming the host and the reason, which the
client receives (HTTP 502 / a JSON-RPC error) and the proxy logs once per upstream and reason.
"""

from __future__ import annotations

import logging
import ssl
from functools import lru_cache
from pathlib import Path

log = logging.getLogger("finmcp.proxy.upstream")

# OpenSSL verify codes (X509_V_ERR_*) worth a plain-words reason
_EXPIRED = {10: "certificate has expired", 9: "certificate is not yet valid"}
_UNKNOWN_CA = {2, 18, 19, 20, 21}
_HOSTNAME_MISMATCH = {62, 64}


class UpstreamCAError(ValueError):
    """``--upstream-ca`` names no readable file of PEM certificates."""


@lru_cache(maxsize=1)
def system_context() -> ssl.SSLContext:
    """The default client context: the system trust store, host name checks, TLS 1.2 or later."""
    context = ssl.create_default_context()
    context.set_alpn_protocols(["http/1.1"])
    return context


def client_context(ca_file: str | Path | None = None) -> ssl.SSLContext:
    """A client context trusting ``ca_file``'s CAs (PEM), or the system trust store when None.

    With HTTP/1.1 offered by ALPN (the proxy speaks only HTTP/1.1 upstream).
    """
    if ca_file is None:
        return system_context()
    path = Path(ca_file)
    if not path.is_file():
        raise UpstreamCAError(f"--upstream-ca {ca_file}: no such file")
    context = ssl.create_default_context()
    try:
        context.load_verify_locations(cafile=str(path))
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise UpstreamCAError(f"--upstream-ca {ca_file}: not a PEM certificate file ({exc})") from None
    context.set_alpn_protocols(["http/1.1"])
    return context


def describe_tls_failure(exc: BaseException, host: str, port: int) -> str:
    """One line naming the upstream host and why TLS failed (expired, unknown CA, hostname mismatch...)."""
    where = f"{host}:{port}"
    if isinstance(exc, ssl.SSLCertVerificationError):
        code = exc.verify_code
        detail = exc.verify_message or str(exc)
        if code in _EXPIRED:
            reason = _EXPIRED[code]
        elif code in _UNKNOWN_CA:
            reason = "certificate signed by an unknown CA (not in the trust store; see --upstream-ca)"
        elif code in _HOSTNAME_MISMATCH:
            reason = f"hostname mismatch: the certificate is not valid for {host!r}"
        else:
            reason = "certificate rejected"
        return f"TLS to upstream {where} failed: {reason} ({detail})"
    if isinstance(exc, ssl.SSLError):
        detail = exc.reason or str(exc)
        if detail == "WRONG_VERSION_NUMBER":
            return (
                f"TLS to upstream {where} failed: the server does not speak TLS on this port"
                " (is it plain http://?)"
            )
        return f"TLS to upstream {where} failed: {detail}"
    return f"TLS to upstream {where} failed: {exc!r}"


class OnceLog:
    """Logs each distinct message once (a failing upstream fails every request alike)."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def error(self, message: str) -> None:
        if message not in self.seen:
            if len(self.seen) < 64:
                self.seen.add(message)
            log.error("%s", message)
