"""Common Qieman tools (clock, trading-day window, chart and PDF rendering) and the formatting helpers
the fund and content builders share.

The simulated clock reads ``world.as_of`` at 10:00:00 Asia/Shanghai: before the 15:00 cut-off, so on a
trading day the current transaction date is ``as_of`` itself. Render tools draw nothing: they check the
input the real renderer needs and answer a stable URL derived from a hash of the request.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from datetime import date, datetime, time, timedelta
from functools import lru_cache
from typing import Any

from finmcp.recordings.canonical import canonical_json
from finmcp.server.sim.registry import BuildContext, ToolInputError, qieman_builder
from finmcp.server.world import trading_calendar as cal

CLOCK_TIME = time(10, 0, 0)
CUT_OFF = time(15, 0, 0)
TIMEZONE = "Asia/Shanghai"
UTC_OFFSET_MS = 8 * 3600 * 1000
WEEKDAYS = ("星期一", "星期二", "星期三", "星期四", "星期五", "星期六", "星期日")
SHORT_WEEKDAYS = ("周一", "周二", "周三", "周四", "周五", "周六", "周日")
MAX_TXN_DAYS = 500
MAX_RENDER_PIXELS = 10000
RENDER_HOST = "https://render.finmcp.local"
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATETIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$")


# ------------------------------------------------------------------ formatting helpers
def fund_url(code: str) -> str:
    """The Qieman page of a fund."""
    return f"https://qieman.com/funds/{code}"


def r4(x: float) -> float:
    """Round a ratio to 4 decimals."""
    return round(x, 4)


def r6(x: float) -> float:
    """Round a return to 6 decimals."""
    return round(x, 6)


def cn_date(value: str | date | None) -> str | None:
    """An ISO date (or date) as the real server prints it: ``2024年12月26日``."""
    if value is None:
        return None
    d = date.fromisoformat(value) if isinstance(value, str) else value
    return f"{d.year}年{d.month:02d}月{d.day:02d}日"


@lru_cache(maxsize=1)
def cn_trading_dates() -> tuple[str, ...]:
    """:func:`cn_date` of every trading day of the calendar, by global trading-day index."""
    return tuple(f"{d[:4]}年{d[5:7]}月{d[8:10]}日" for d in cal.all_trading_day_strings())


def pct_text(fraction: float | None, digits: int = 2) -> str | None:
    """A fraction as percent text: ``0.001 -> '0.10%'``; None stays None."""
    if fraction is None:
        return None
    return f"{fraction * 100:.{digits}f}%"


def epoch_ms(d: date | str) -> int:
    """Midnight of a day in Asia/Shanghai as epoch milliseconds (how the real server stamps dates)."""
    day = date.fromisoformat(d) if isinstance(d, str) else d
    return (day - date(1970, 1, 1)).days * 86_400_000 - UTC_OFFSET_MS


def now(ctx: BuildContext) -> datetime:
    """The simulated current time: ``as_of`` at 10:00:00 (Asia/Shanghai)."""
    return datetime.combine(ctx.world.as_of, CLOCK_TIME)


def txn_date_of(moment: datetime) -> date:
    """The trading day an order placed at ``moment`` belongs to (15:00 or later counts as the next one)."""
    d = moment.date()
    if cal.is_trading_day(d) and moment.time() < CUT_OFF:
        return d
    return cal.all_trading_days()[cal.index_on_or_after(d + timedelta(days=1))]


def add_txn_days(d: date, n: int) -> date:
    """The trading day ``n`` trading days after trading day ``d``."""
    return cal.all_trading_days()[cal.index_on_or_after(d) + n]


def parse_day(value: Any, tool: str, field: str) -> date:
    """A ``YYYY-MM-DD`` argument as a date, or ToolInputError naming the tool and field."""
    if not isinstance(value, str) or not _DATE_RE.match(value):
        raise ToolInputError(f"{tool}: {field} must be a date YYYY-MM-DD, got {value!r}")
    try:
        return date.fromisoformat(value)
    except ValueError as exc:
        raise ToolInputError(f"{tool}: {field} {value!r} is not a real date") from exc


def parse_moment(value: Any, tool: str, field: str) -> datetime:
    """A ``YYYY-MM-DD HH:mm:ss`` (or bare ``YYYY-MM-DD``, read as 00:00:00) argument as a datetime."""
    if isinstance(value, str) and _DATE_RE.match(value):
        return datetime.combine(parse_day(value, tool, field), time(0, 0, 0))
    if not isinstance(value, str) or not _DATETIME_RE.match(value):
        raise ToolInputError(f"{tool}: {field} must be 'YYYY-MM-DD HH:mm:ss', got {value!r}")
    try:
        return datetime.strptime(value, "%Y-%m-%d %H:%M:%S")
    except ValueError as exc:
        raise ToolInputError(f"{tool}: {field} {value!r} is not a real date and time") from exc


def in_calendar(d: date, tool: str, field: str) -> date:
    """``d`` when the trading calendar covers it (with a margin for windows), else ToolInputError."""
    lo, hi = cal.CALENDAR_START + timedelta(days=800), cal.CALENDAR_END - timedelta(days=800)
    if not lo <= d <= hi:
        raise ToolInputError(f"{tool}: {field} {d.isoformat()} is outside {lo.isoformat()}..{hi.isoformat()}")
    return d


def int_arg(args: dict[str, Any], name: str, tool: str, default: int, minimum: int) -> int:
    """An integer argument (integral floats accepted) with a default and a lower bound."""
    value = args.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise ToolInputError(f"{tool}: {name} must be an integer, got {value!r}")
    if value < minimum:
        raise ToolInputError(f"{tool}: {name} must be >= {minimum}, got {value!r}")
    return int(value)


def one_of(value: Any, field: str, tool: str, choices: Sequence[Any]) -> Any:
    """``value`` when it is one of ``choices``, else a ToolInputError listing them."""
    if value not in choices:
        raise ToolInputError(f"{tool}: {field} {value!r} unknown; expected one of {list(choices)}")
    return value


def choice_arg(args: dict[str, Any], field: str, tool: str, choices: Sequence[Any], default: Any) -> Any:
    """The argument ``field`` (``default`` when absent or empty), checked against ``choices``."""
    return one_of(args.get(field) or default, field, tool, choices)


_FUND_CODE_RE = re.compile(r"^\d{6}$")


def code_list_arg(
    args: dict[str, Any], field: str, tool: str, limit: int | None = None, six_digits: bool = False
) -> list[str]:
    """The fund-code list argument ``field``, duplicates dropped in order; ToolInputError when it is
    missing, empty, longer than ``limit`` or holds a non-string (with ``six_digits``: a malformed code)."""
    codes = args.get(field)
    what = "array of six-digit fund codes" if six_digits else "list of fund codes"
    if not isinstance(codes, list) or not codes:
        raise ToolInputError(f"{tool}: {field} must be a non-empty {what}")
    if limit is not None and len(codes) > limit:
        raise ToolInputError(f"{tool}: {field} holds {len(codes)} codes; at most {limit} per call")
    out: list[str] = []
    for i, code in enumerate(codes):
        if six_digits and not (isinstance(code, str) and _FUND_CODE_RE.match(code)):
            raise ToolInputError(f"{tool}: {field}[{i}] must be a six-digit fund code, got {code!r}")
        if not isinstance(code, str):
            raise ToolInputError(f"{tool}: {field}[{i}] must be a string fund code")
        if code not in out:
            out.append(code)
    return out


def band_text(x: float, bands: Sequence[tuple[float, str]], top: str) -> str:
    """The text of the first band whose upper limit ``x`` is below (``top`` above them all)."""
    return next((text for limit, text in bands if x < limit), top)


# ------------------------------------------------------------------ tools
@qieman_builder("GetCurrentTime")
def build_current_time(ctx: BuildContext, args: dict[str, Any]) -> dict[str, Any]:
    """The simulated clock: ``as_of`` at 10:00:00 Asia/Shanghai."""
    moment = now(ctx)
    return {
        "currentTime": moment.strftime("%Y-%m-%d %H:%M:%S"),
        "date": moment.date().isoformat(),
        "weekday": WEEKDAYS[moment.weekday()],
        "timestamp": epoch_ms(moment.date()) + (moment.hour * 3600 + moment.minute * 60) * 1000,
        "timezone": TIMEZONE,
    }


def _day_count(args: dict[str, Any], name: str) -> int:
    value = args.get(name)
    if not isinstance(value, str) or not value.isdigit():
        raise ToolInputError(f"GetTxnDayRange: {name} must be a digit string such as '5', got {value!r}")
    n = int(value)
    if n > MAX_TXN_DAYS:
        raise ToolInputError(f"GetTxnDayRange: {name} must be at most {MAX_TXN_DAYS}, got {n}")
    return n


@qieman_builder("GetTxnDayRange")
def build_txn_day_range(ctx: BuildContext, args: dict[str, Any]) -> dict[str, Any]:
    """Trading days around a centre time (default: now); 15:00 or later belongs to the next trading day.

    Every fund in the world trades on the Shanghai/Shenzhen calendar, so ``fundCode`` only needs to be
    well formed.
    """
    before, after = _day_count(args, "beforeDays"), _day_count(args, "afterDays")
    code = args.get("fundCode")
    if code is not None and (not isinstance(code, str) or not re.fullmatch(r"\d{6}", code)):
        raise ToolInputError(f"GetTxnDayRange: fundCode must be six digits, got {code!r}")
    center = args.get("centerTime")
    moment = now(ctx) if center is None else parse_moment(center, "GetTxnDayRange", "centerTime")
    in_calendar(moment.date(), "GetTxnDayRange", "centerTime")
    current = txn_date_of(moment)
    days = cal.all_trading_days()
    i = cal.index_on_or_after(current)
    return {
        "centerTime": moment.strftime("%Y-%m-%d %H:%M:%S"),
        "currentTxnDate": current.isoformat(),
        "isTxnDay": cal.is_trading_day(moment.date()),
        "beforeTxnDays": [d.isoformat() for d in days[i - before : i]],
        "afterTxnDays": [d.isoformat() for d in days[i + 1 : i + 1 + after]],
    }


def _digest(payload: Any) -> str:
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()[:32]


def _pixels(args: dict[str, Any], name: str) -> int:
    value = args.get(name)
    if not isinstance(value, str) or not value.isdigit():
        raise ToolInputError(f"RenderEchart: {name} must be a digit string such as '800', got {value!r}")
    n = int(value)
    if not 1 <= n <= MAX_RENDER_PIXELS:
        raise ToolInputError(f"RenderEchart: {name} must be between 1 and {MAX_RENDER_PIXELS}, got {n}")
    return n


@qieman_builder("RenderEchart")
def build_render_echart(ctx: BuildContext, args: dict[str, Any]) -> dict[str, str]:
    """Check the ECharts option (a JSON object in a string) and answer the image URL of its hash."""
    raw = args.get("option")
    if not isinstance(raw, str) or not raw.strip():
        raise ToolInputError("RenderEchart: option is required: an ECharts option object serialised as JSON")
    try:
        option = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ToolInputError(f"RenderEchart: option is not valid JSON ({exc.msg} at char {exc.pos})") from exc
    if not isinstance(option, dict):
        raise ToolInputError(f"RenderEchart: option must be a JSON object, got {type(option).__name__}")
    if "series" not in option:
        raise ToolInputError("RenderEchart: option has no 'series': there is nothing to draw")
    width, height = _pixels(args, "width"), _pixels(args, "height")
    ratio = args.get("devicePixelRatio", 1)
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 < ratio <= 4:
        raise ToolInputError(f"RenderEchart: devicePixelRatio must be a number in (0, 4], got {ratio!r}")
    digest = _digest({"option": option, "width": width, "height": height, "ratio": ratio})
    return {"url": f"{RENDER_HOST}/charts/{digest}.png"}


@qieman_builder("RenderHtmlToPdf")
def build_render_pdf(ctx: BuildContext, args: dict[str, Any]) -> dict[str, str]:
    """Check the HTML is non-empty and the options well formed; answer the PDF URL of their hash."""
    html = args.get("html")
    if not isinstance(html, str) or not html.strip():
        raise ToolInputError("RenderHtmlToPdf: html is required and must be a non-empty HTML document")
    options = args.get("options") or {}
    if not isinstance(options, dict):
        raise ToolInputError(f"RenderHtmlToPdf: options must be an object, got {type(options).__name__}")
    paper = options.get("format")
    if paper is not None and (not isinstance(paper, str) or not paper.strip()):
        raise ToolInputError(
            f"RenderHtmlToPdf: options.format must be a paper size such as 'A4', got {paper!r}"
        )
    return {"url": f"{RENDER_HOST}/pdf/{_digest({'html': html, 'options': options})}.pdf"}
