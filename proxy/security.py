"""The proxy listener's policy: the shared listener policy, configured for finmcp-proxy.

:class:`recordings.plumbing.listener.ListenerPolicy` checks Host, Origin and the token; the proxy
also accepts its token as ``X-Finmcp-Proxy-Token: TOKEN`` (never forwarded upstream) and checks the
body size itself while reading a request (chunked bodies too), so by default the policy leaves that out.
A browser page (``--cors-origin``) may also send the proxy token header and the ``X-Finmcp-*`` tags.

Cross-site fetches: browsers send no ``Origin`` on an ``<img>`` or a no-cors ``GET``, but every
browser of the last years sends ``Sec-Fetch-Site``. A request marked ``cross-site`` or ``same-site``
(another port of localhost is the same *site* but not the same origin) without an ``Origin`` is
refused with 403: a page elsewhere never drives the upstream with the proxy's ``--upstream-header``
credentials. With an ``Origin``, the Origin check decides (an allowed origin, a ``--cors-origin``
included, passes). ``same-origin``, ``none`` (typed in the address bar) and no header at all (every
non-browser client) pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from finmcp.proxy.tags import HEADER_KEYS
from finmcp.recordings.plumbing.listener import CORS_REQUEST_HEADERS, ListenerPolicy

TOKEN_HEADER = b"x-finmcp-proxy-token"
CROSS_SITE = frozenset({b"cross-site", b"same-site"})
"""``Sec-Fetch-Site`` values refused without an allowed ``Origin``."""
CROSS_SITE_REJECTED = "cross-site request without an allowed Origin (Sec-Fetch-Site)"


@dataclass(frozen=True, eq=False)
class Policy(ListenerPolicy):
    """What the proxy's HTTP listener accepts: ``Policy.build(host, token, allow_hosts=..., allow_origins=...)``."""

    token_headers: tuple[bytes, ...] = (TOKEN_HEADER,)
    token_reason: str = "missing or wrong proxy token"
    cors_request_headers: tuple[bytes, ...] = (*CORS_REQUEST_HEADERS, TOKEN_HEADER, *HEADER_KEYS)

    def check(
        self, headers: Mapping[bytes, bytes] | Iterable[tuple[bytes, bytes]], path: str
    ) -> tuple[int, str] | None:
        """:meth:`ListenerPolicy.check`, then the cross-site check (module docstring): ``(403, reason)``."""
        if not isinstance(headers, Mapping):
            headers = dict(headers)
        denied = super().check(headers, path)
        if denied is not None:
            return denied
        site = headers.get(b"sec-fetch-site")
        if site is not None and site.strip().lower() in CROSS_SITE and b"origin" not in headers:
            return 403, CROSS_SITE_REJECTED
        return None
