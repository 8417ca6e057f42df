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

import re
from typing import Any

from server.sim.qieman.common import fund_url
from server.sim.registry import BuildContext, ToolInputError

MAX_BATCH = 20
_CODE_RE = re.compile(r"^\d{6}$")


def fund_codes_arg(args: dict[str, Any], tool: str, key: str = "fundCodes", limit: int | None = MAX_BATCH):
    """The requested fund codes, deduplicated in order; ToolInputError for a malformed list."""
    codes = args.get(key)
    if not isinstance(codes, list) or not codes:
        raise ToolInputError(f"{tool}: {key} must be a non-empty array of six-digit fund codes")
    if limit is not None and len(codes) > limit:
        raise ToolInputError(f"{tool}: {key} holds {len(codes)} codes; at most {limit} per call")
    out: list[str] = []
    for i, code in enumerate(codes):
        if not isinstance(code, str) or not _CODE_RE.match(code):
            raise ToolInputError(f"{tool}: {key}[{i}] must be a six-digit fund code, got {code!r}")
        if code not in out:
            out.append(code)
    return out


def batch(ctx: BuildContext, args: dict[str, Any], tool: str, build_data, limit: int | None = MAX_BATCH):
    """``[{fundCode, data, url}]`` for the known codes of the request (unknown codes skipped)."""
    entries = []
    for code in fund_codes_arg(args, tool, limit=limit):
        fund = ctx.world.fund(code)
        if fund is not None:
            entries.append({"fundCode": code, "data": build_data(ctx, fund), "url": fund_url(code)})
    return entries


def display_type(fund_type: str) -> str:
    """The fund type as the real server prints it (``QDII`` rather than ``QDII型``)."""
    return "QDII" if fund_type == "QDII型" else fund_type
