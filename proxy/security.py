"""The proxy listener's policy: the shared listener policy, configured for finmcp-proxy.

:class:`recordings.plumbing.listener.ListenerPolicy` checks Host, Origin and the token; the proxy
also accepts its token as ``X-Finmcp-Proxy-Token: TOKEN`` (never forwarded upstream) and checks the
body size itself while reading a request (chunked bodies too), so by default the policy leaves that out.
A browser page (``--cors-origin``) may also send the proxy token header and the ``X-Finmcp-*`` tags.
"""

from __future__ import annotations

from dataclasses import dataclass

from finmcp.proxy.tags import HEADER_KEYS
from finmcp.recordings.plumbing.listener import CORS_REQUEST_HEADERS, ListenerPolicy

TOKEN_HEADER = b"x-finmcp-proxy-token"


@dataclass(frozen=True, eq=False)
class Policy(ListenerPolicy):
    """What the proxy's HTTP listener accepts: ``Policy.build(host, token, allow_hosts=..., allow_origins=...)``."""

    token_headers: tuple[bytes, ...] = (TOKEN_HEADER,)
    token_reason: str = "missing or wrong proxy token"
    cors_request_headers: tuple[bytes, ...] = (*CORS_REQUEST_HEADERS, TOKEN_HEADER, *HEADER_KEYS)
