"""What the Qieman fund data tools share: the fund-code list argument and the batch answer shape.

Formats follow the recorded outputs: dates in summaries as ``2025年08月15日``, returns as percent text
(``"-0.68%"``) in detail and NAV rows, fractions (``0.1511683106``) in search rows, epoch milliseconds
for trade-limit dates, fund pages at ``https://qieman.com/funds/<code>``.

Unknown codes: every ``Batch*`` tool answers one entry per *known* requested code, in request order,
duplicates dropped, and silently skips codes the world does not have (an all-unknown request gives
``[]``). ``SearchFunds`` answers ``{"funds": [], "total": 0}``; ``GetFundAnnouncements`` an empty page.
Malformed codes (not six digits) and more than 20 codes are refused with a ToolInputError.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from finmcp.server.sim.qieman.common import code_list_arg, fund_url
from finmcp.server.sim.registry import BuildContext, qieman_builder
from finmcp.server.world.funds import Fund

MAX_BATCH = 20
FundData = Callable[[BuildContext, Fund], dict[str, Any]]
"""What a batch tool answers for one known fund."""


def batch(
    ctx: BuildContext, args: dict[str, Any], tool: str, build_data: FundData, limit: int | None = MAX_BATCH
) -> list[dict[str, Any]]:
    """``[{fundCode, data, url}]`` for the known codes of the request (unknown codes skipped)."""
    entries = []
    for code in code_list_arg(args, "fundCodes", tool, limit, six_digits=True):
        fund = ctx.world.fund(code)
        if fund is not None:
            entries.append({"fundCode": code, "data": build_data(ctx, fund), "url": fund_url(code)})
    return entries


def batch_tool(name: str, limit: int | None = MAX_BATCH) -> Callable[[FundData], FundData]:
    """Register the decorated ``data(ctx, fund)`` as the builder of the batch tool ``name``: one
    ``{fundCode, data, url}`` entry per known requested code (see :func:`batch`)."""

    def register(data: FundData) -> FundData:
        qieman_builder(name)(lambda ctx, args: batch(ctx, args, name, data, limit))
        return data

    return register


def display_type(fund_type: str) -> str:
    """The fund type as the real server prints it (``QDII`` rather than ``QDII型``)."""
    return "QDII" if fund_type == "QDII型" else fund_type
