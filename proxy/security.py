"""The proxy listener's policy: the shared listener policy, configured for finmcp-proxy.

:class:`recordings.plumbing.listener.ListenerPolicy` checks Host, Origin and the token; the proxy
also accepts its token as ``X-Finmcp-Proxy-Token: TOKEN`` (never forwarded upstream) and checks the
body size itself while reading a request (chunked bodies too), so the policy leaves that out.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Self

from recordings.plumbing.listener import ListenerPolicy

TOKEN_HEADER = b"x-finmcp-proxy-token"


class Policy(ListenerPolicy):
    """What the proxy's HTTP listener accepts."""

    @classmethod
    def build(
        cls,
        bind_host: str,
        token: str | None = None,
        allow_hosts: Iterable[str] = (),
        allow_origins: Iterable[str] = (),
    ) -> Self:
        """Loopback names, the bound host (unless a wildcard) and any extra hosts/origins."""
        return cls.create(
            bind_host,
            token,
            allow_hosts=allow_hosts,
            allow_origins=allow_origins,
            token_headers=(TOKEN_HEADER,),
            token_reason="missing or wrong proxy token",
        )
