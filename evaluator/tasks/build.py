"""The tasks of a run (:class:`evaluator.tasks.model.Task`): the same inputs finmcp's own agents get.

:func:`make_task` builds one from what the harness holds for a (sample, trial, turn): the gold
history (:func:`evaluator.agents.history.gold_messages`), the tagged MCP URL
(:func:`evaluator.harness.session.tagged_url`) and the run's ``tools/list``. On FinToolBench the
protocol offers the agent only its top-K tools (FATR's K = 20; ranked by BM25 over the user
message, as ``--agent openai --top-k`` does: :mod:`evaluator.agents.bm25`), so the task names them
and its MCP URL asks the server to list only those (``?tools=``, :data:`server.mcp_server.TOOLS_QUERY`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

from finmcp.evaluator.agents.bm25 import ToolRetriever
from finmcp.evaluator.agents.history import OutputLookup, gold_messages
from finmcp.evaluator.harness.session import tagged_url
from finmcp.evaluator.inputs.model import Reference
from finmcp.evaluator.tasks.model import Limits, Task

FATR_TOP_K = 20
"""FinToolBench's agent retrieves the top 20 tools (FATR)."""
TOOLS_QUERY = "tools"
"""The query parameter finmcp-server reads to list only some tools (server.mcp_server.TOOLS_QUERY)."""

_TAGS = re.compile(r"^((?:/[rskt]/[^/]+)+)")


def default_top_k(ref: Reference, top_k: int | None) -> int | None:
    """``top_k`` when given; else FATR's 20 on FinToolBench samples and None (all tools) on FinMCP-Bench."""
    if top_k is not None:
        return top_k
    return FATR_TOP_K if ref.source == "fintoolbench" else None


def model_url(mcp_url: str) -> str:
    """The tagged model endpoint beside a tagged MCP URL: ``http://host:port/r/…/t/{turn}/v1``."""
    parts = urlsplit(mcp_url)
    match = _TAGS.match(parts.path)
    tags = match.group(1) if match else ""
    return urlunsplit((parts.scheme, parts.netloc, f"{tags}/v1", "", ""))


def with_tools(url: str, names: list[str] | None) -> str:
    """``url`` with ``?tools=A,B,…`` (its ``tools/list`` lists only those); ``url`` for None."""
    if names is None:
        return url
    parts = urlsplit(url)
    value = "tools=" + ",".join(quote(n, safe="") for n in names)
    query = f"{parts.query}&{value}" if parts.query else value
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))


class Offer:
    """The tools a protocol offers per user message: all, or the BM25 top-K (one index per run)."""

    def __init__(self, tools: list[dict[str, Any]]) -> None:
        self.tools = tools
        self._retriever: ToolRetriever | None = None

    def names(self, query: str, k: int | None) -> list[str] | None:
        """The top-``k`` tool names for ``query``; None when ``k`` is None or not below the tool count."""
        if k is None or len(self.tools) <= k:
            return None
        if self._retriever is None:
            self._retriever = ToolRetriever(self.tools)
        return [str(t["name"]) for t in self._retriever.top(query, k)]


def make_task(
    ref: Reference,
    turn: int,
    trial: int,
    run: str,
    mcp_url: str,
    messages: list[dict[str, Any]],
    offer: Offer,
    limits: Limits,
    top_k: int | None = None,
) -> Task:
    """The task of (``ref``, ``trial``, ``turn``) whose tagged MCP URL is ``mcp_url``."""
    user = ref.turns[turn].user
    names = offer.names(user, default_top_k(ref, top_k))
    return Task(
        run=run,
        sample=ref.id,
        turn=turn,
        trial=trial,
        turns=len(ref.turns),
        benchmark="fintoolbench" if ref.source == "fintoolbench" else "finmcp",
        user=user,
        messages=messages,
        mcp_url=with_tools(mcp_url, names),
        model_url=model_url(mcp_url),
        limits=limits,
        tools=names,
    )


def run_tasks(
    refs: list[Reference],
    run: str,
    proxy_url: str,
    tools: list[dict[str, Any]],
    outputs: OutputLookup | None,
    limits: Limits,
    trials: int = 1,
    top_k: int | None = None,
) -> Iterator[Task]:
    """Every task of a run, by sample, trial and turn (tags as the harness's: ``/k/`` only when
    ``trials`` > 1)."""
    offer = Offer(tools)
    for ref in refs:
        for trial in range(trials):
            for turn in range(len(ref.turns)):
                url = tagged_url(proxy_url, run, ref.id, turn, trial if trials > 1 else None)
                messages = gold_messages(ref, turn, outputs)
                yield make_task(ref, turn, trial, run, url, messages, offer, limits, top_k)
