"""The harness's former HTTP client, httpx2 with a keep-alive pool, behind :class:`HttpPool`'s interface.

Bench-only: the product has one HTTP client (:mod:`evaluator.harness.http_pool`).
``bench/bench_demo.py`` puts this one in its place for its baseline run (:func:`installed`) and runs
the demo with both in the same run, so the lean client's saving is measured against it.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Iterator, Mapping
from typing import Any

import httpx2

from finmcp.evaluator.harness import mcp_client
from finmcp.evaluator.harness.http_pool import HttpResponse, HttpTransportError


class Httpx2Pool:
    """POSTs through one ``httpx2.AsyncClient`` (no proxies from the environment)."""

    def __init__(
        self, timeout: float = 120.0, max_connections: int = 64, ssl_context: ssl.SSLContext | None = None
    ) -> None:
        self.http = httpx2.AsyncClient(
            timeout=timeout,
            limits=httpx2.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
            trust_env=False,
            verify=ssl_context if ssl_context is not None else True,
        )

    async def aclose(self) -> None:
        """Close the pooled connections."""
        await self.http.aclose()

    async def post(
        self, url: str, body: bytes, headers: Mapping[str, str], sent: asyncio.Event | None = None
    ) -> HttpResponse:
        """POST ``body``; ``sent`` is set once the body is on the wire (or the request ended)."""

        async def trace(event: str, info: dict[str, Any]) -> None:
            if sent is not None and event.endswith("send_request_body.complete"):
                sent.set()

        try:
            # the trace hook costs a callback per connection event: only calls that order others use it
            response = await self.http.post(
                url, content=body, headers=dict(headers), extensions={"trace": trace} if sent else None
            )
        except (httpx2.HTTPError, UnicodeEncodeError) as exc:
            raise HttpTransportError(f"{type(exc).__name__}: {exc}") from None
        finally:
            if sent is not None:
                sent.set()
        return HttpResponse(response.status_code, dict(response.headers), response.content)


@contextlib.contextmanager
def installed() -> Iterator[None]:
    """While inside, the harness's MCP client posts through :class:`Httpx2Pool` (the baseline)."""
    lean = mcp_client.HttpPool
    mcp_client.HttpPool = Httpx2Pool  # type: ignore[misc,assignment]  # same interface, bench only
    try:
        yield
    finally:
        mcp_client.HttpPool = lean  # type: ignore[misc]
