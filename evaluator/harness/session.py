"""Tagged endpoints and the tool session an agent uses for one (sample, trial, turn)."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import quote, urlsplit

from finmcp.evaluator.agents.base import ToolCall, ToolOutcome
from finmcp.evaluator.errors import EvalInputError
from finmcp.evaluator.harness.mcp_client import GROUP_META_KEY, McpCallError
from finmcp.recordings.fault_schedule import POSITION_META


def tagged_url(proxy_url: str, run: str, sample: str, turn: int, trial: int | None = None) -> str:
    """``http://host:port/r/{run}/s/{sample}[/k/{trial}]/t/{turn}/mcp`` for a proxy URL.

    ``proxy_url`` may be ``http://host:port``, ``.../mcp`` or ``.../{inventory}/mcp``; the tags go
    right after the host, the rest of the path after them (the proxy forwards it upstream).
    """
    parts = urlsplit(proxy_url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise EvalInputError(f"--proxy {proxy_url!r}: expected an http://host:port[/mcp] URL")
    path = parts.path.rstrip("/")
    suffix = path if path.endswith("/mcp") else f"{path}/mcp"
    tags = f"/r/{quote(run, safe='')}/s/{quote(sample, safe='')}"
    if trial is not None:
        tags += f"/k/{int(trial)}"
    return f"{parts.scheme}://{parts.netloc}{tags}/t/{int(turn)}{suffix}"


def untagged_url(proxy_url: str, run: str) -> str:
    """The endpoint tagged with the run only (used for the run's one ``tools/list``)."""
    parts = urlsplit(proxy_url)
    path = parts.path.rstrip("/")
    suffix = path if path.endswith("/mcp") else f"{path}/mcp"
    return f"{parts.scheme}://{parts.netloc}/r/{quote(run, safe='')}{suffix}"


class HarnessSession:
    """Implements :class:`evaluator.agents.base.ToolSession` over a client and one tagged URL.

    Every :meth:`call_group` is one assistant step: its calls are sent concurrently, and with
    ``group_tags`` each carries ``params._meta["io.finmcp/group"]`` = the step's index in the turn.
    A call with ``raw_arguments`` (a model's malformed argument text) sends that text as ``arguments``.

    ``place`` (a run with a fault schedule): ``_meta`` tags every call carries (``io.finmcp/run``,
    ``sample``, ``trial``, ``turn``) plus ``io.finmcp/position`` = ``{"turn": n, "sample": m, "member":
    i}``, its 0-based place in the turn, in the sample (``sample_calls``, shared by the sample's turns)
    and in its group, so the server draws the same faults whatever order calls arrive in.
    """

    def __init__(
        self,
        client: Any,
        url: str,
        group_tags: bool = True,
        place: dict[str, Any] | None = None,
        sample_calls: list[int] | None = None,
    ) -> None:
        self.client = client
        self.url = url
        self.group_tags = group_tags
        self.groups = 0
        self.calls_made = 0
        self.place = place
        self.sample_calls = sample_calls if sample_calls is not None else [0]

    async def call_group(self, calls: list[ToolCall]) -> list[ToolOutcome]:
        """Send one step's calls concurrently, in order; a failed call becomes an outcome with ``error``."""
        if not calls:
            return []
        meta = {GROUP_META_KEY: self.groups} if self.group_tags else None
        self.groups += 1
        metas = [self._call_meta(meta, i) for i in range(len(calls))]
        self.calls_made += len(calls)
        self.sample_calls[0] += len(calls)

        async def one(call: ToolCall, sent: asyncio.Event, meta: dict[str, Any] | None) -> ToolOutcome:
            try:
                arguments = call.arguments if call.raw_arguments is None else call.raw_arguments
                result = await self.client.call_tool(self.url, call.tool, arguments, meta, sent)
            except McpCallError as exc:  # a JSON-RPC error reads as its own message, as the trace logs it
                return ToolOutcome(call, error=exc.rpc_message or str(exc))
            finally:
                sent.set()
            return ToolOutcome(call, result=result)

        tasks = []
        for call, call_meta in zip(calls, metas, strict=True):  # concurrent, each on the wire before the next
            sent = asyncio.Event()
            tasks.append(asyncio.ensure_future(one(call, sent, call_meta)))
            await sent.wait()
        return list(await asyncio.gather(*tasks))

    def _call_meta(self, group: dict[str, Any] | None, member: int) -> dict[str, Any] | None:
        if self.place is None:
            return group
        position = {
            "turn": self.calls_made + member,
            "sample": self.sample_calls[0] + member,
            "member": member,
        }
        return {**(group or {}), **self.place, POSITION_META: position}
