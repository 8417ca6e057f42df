"""TLS on finmcp's own listeners: ``--tls-cert FILE --tls-key FILE`` (finmcp-server and finmcp-proxy).

Both files are PEM; the certificate file may hold the chain after the leaf. Without them a listener
speaks plain HTTP, as before. A missing file, a key that does not match the certificate or a file
that is not PEM is a start-up error naming the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # loaded when a context is made, not when a parser adds the flags
    import ssl


class TlsConfigError(ValueError):
    """``--tls-cert`` / ``--tls-key`` are incomplete, missing or unusable."""


def add_tls_options(parser: Any) -> None:
    """``--tls-cert FILE`` and ``--tls-key FILE`` (serve HTTPS instead of HTTP)."""
    parser.add_argument(
        "--tls-cert",
        metavar="FILE",
        help="serve HTTPS with this PEM certificate (chain) file; needs --tls-key",
    )
    parser.add_argument("--tls-key", metavar="FILE", help="the PEM private key of --tls-cert")


def check_tls_files(cert: str | None, key: str | None) -> ssl.SSLContext | None:
    """The server context ``--tls-cert``/``--tls-key`` ask for (None: plain HTTP); :class:`TlsConfigError` if unusable."""
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        raise TlsConfigError("--tls-cert and --tls-key go together (give both, or neither)")
    return server_context(cert, key)


def server_context(cert: str | Path, key: str | Path | None) -> ssl.SSLContext:
    """A TLS server context (TLS 1.2 or later, HTTP/1.1 by ALPN) loaded from PEM files."""
    import ssl

    for flag, path in (("--tls-cert", cert), ("--tls-key", key)):
        if path is not None and not Path(path).is_file():
            raise TlsConfigError(f"{flag} {path}: no such file")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(str(cert), None if key is None else str(key))
    except ssl.SSLError as exc:
        raise TlsConfigError(
            f"--tls-cert {cert} / --tls-key {key}: cannot load the certificate and key ({exc.reason or exc})"
        ) from None
    except OSError as exc:
        raise TlsConfigError(f"--tls-cert {cert} / --tls-key {key}: {exc}") from None
    context.set_alpn_protocols(["http/1.1"])
    return context
