"""Column-name heuristics, date parsing/formatting and pattern-matching strings for generated values.

``column_kind(name)`` maps an output column (English or Chinese) to what its values mean: a date, the
row's instrument code or name, a bar field (open/high/low/close/volume), a change, a ratio, an amount.
(Strings matching a schema ``pattern`` come from :mod:`server.sim.regex_strings`.)
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta, timezone
from typing import Literal, overload

from finmcp.tool_specs.param_text import DATE_FORMATS as _DATE_FORMATS

# (kind, regex) in priority order; names are matched lower-cased.
_KIND_RULES: tuple[tuple[str, str], ...] = (
    ("rank", r"^(序号|排名|排行|rank|no|index)$"),
    ("prev_close", r"昨收|前收|prev_?close|previousclose|pre_?close|regularmarketpreviousclose"),
    ("open", r"^(open|o|open_?price|regularmarketopen)$|开盘|今开"),
    ("high", r"^(high|h|high_?price|dayhigh|regularmarketdayhigh)$|最高"),
    ("low", r"^(low|l|low_?price|daylow|regularmarketdaylow)$|最低"),
    ("acc_close", r"累计净值|acc_?nav|adj_?close|adjclose|复权"),
    (
        "close",
        r"^(close|c|price|last|lastprice|last_price|close_?price|latest_?price|nav|rate|value"
        r"|regularmarketprice|current_?price|mark_?price|avg_?price|vwap)$"
        r"|收盘|最新价|现价|单位净值|^净值$|^价格$|成交价|结算价|均价",
    ),
    (
        "change_pct",
        r"涨跌幅|涨幅|跌幅|日增长率|daily_?return|change_?percent|changespercentage|pct_?chg|pct_?change|percent_?change",
    ),
    ("change", r"涨跌额|^涨跌$|^change$|^chg$|price_?change|netchange"),
    ("amplitude", r"振幅|amplitude"),
    ("turnover_rate", r"换手率|turnover_?rate"),
    ("amount", r"成交额|成交金额|^amount$|turnover$|^amt$"),
    ("volume", r"^(volume|vol|v)$|成交量|volume$"),
    ("pe", r"市盈率|^pe$|pe_?ttm|peratio|pe_ratio"),
    ("pb", r"市净率|^pb$|pb_?ratio|pricetobook"),
    ("market_cap", r"市值|market_?cap|marketcapitalization"),
    ("code", r"代码|^symbol$|^ticker$|^code$|_code$|^ts_code$|securityid|^secid$|证券号"),
    ("name", r"名称|简称|^name$|short_?name|long_?name|display_?name|company_?name|^company$|证券名"),
    ("industry", r"行业|板块|industry|sector"),
    ("exchange", r"交易所|^exchange$|^market$|^市场$"),
    ("currency", r"币种|^currency$"),
    ("status", r"状态|^status$|^state$"),
    ("url", r"url|link|href|网址|链接"),
    ("title", r"标题|^title$|headline"),
    ("text", r"内容|摘要|summary|content|description|^text$|body|简介"),
    ("count", r"数量|家数|人数|次数|笔数|count$|^num|shares|股数|持股数|份额"),
    ("ratio", r"比例|占比|ratio|weight|权重|percentage|pct|percent|%"),
    ("rate", r"率$|收益|增长|yield|return|growth"),
    (
        "money",
        r"金额|资产|收入|利润|净额|余额|规模|负债|营收|revenue|income|profit|assets|cash|debt|sales|earnings|ebit",
    ),
    ("year", r"^(年份|年度|year|fiscal_?year)$"),
    (
        "date",
        r"(^|_)(date|time|datetime|timestamp|day)$|^(t|dt|ts)$|日期|时间|^date|date$|^报告期$|公告日|交易日$",
    ),
)
_COMPILED = tuple((kind, re.compile(rx)) for kind, rx in _KIND_RULES)
_CJK = re.compile(r"[\u4e00-\u9fff]")


def column_kind(name: str) -> str:
    """What the values of column ``name`` mean (``other`` when nothing matches)."""
    lowered = name.lower()
    if _COMPILED[-1][1].search(lowered) and not re.search(r"代码|名称|price|价", lowered):
        return "date"
    for kind, rx in _COMPILED:
        if rx.search(lowered):
            return kind
    return "other"


def is_chinese(text: str) -> bool:
    """True when ``text`` holds any CJK character."""
    return _CJK.search(text) is not None


# ----------------------------------------------------------------------------- dates

_FMT_TO_STRFTIME = {label: fmt for fmt, label in _DATE_FORMATS}
_CST = timezone(timedelta(hours=8))


def parse_date(value: object) -> tuple[date, str] | None:
    """(date, format label) of a date argument, or None when it is not a date.

    Accepts YYYYMMDD, YYYY-MM-DD (optionally with a time), YYYY/MM/DD, YYYY.MM.DD, YYYYMM, YYYY and Unix
    timestamps (seconds or milliseconds, as numbers or digit strings of 10/13 digits).
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) or (isinstance(value, str) and re.fullmatch(r"\d{10}|\d{13}", value)):
        x = float(value)
        if x > 1e11:
            x /= 1000
        if not 0 < x < 4.2e9:
            return None
        return datetime.fromtimestamp(x, _CST).date(), "unix"
    if not isinstance(value, str):
        return None
    text = value.strip().replace("Z", "")
    text = re.sub(r"[+-]\d\d:\d\d$", "", text) if "T" in text else text
    text = re.sub(r"\.\d+$", "", text)
    for fmt, label in _DATE_FORMATS:
        try:
            return datetime.strptime(text, fmt).date(), label
        except ValueError:
            continue
    return None


@overload
def format_date(d: date, label: Literal["unix", "unix_ms"], time_of_day: str = ...) -> int: ...
@overload
def format_date(d: date, label: str, time_of_day: str = ...) -> str | int: ...
def format_date(d: date, label: str, time_of_day: str = "15:00:00") -> str | int:
    """``d`` written in format ``label`` (``unix``/``unix_ms`` give ints; ``iso-datetime`` is RFC 3339)."""
    if label in ("unix", "unix_ms"):
        hh, mm, ss = (int(x) for x in time_of_day.split(":"))
        seconds = int(datetime(d.year, d.month, d.day, hh, mm, ss, tzinfo=_CST).timestamp())
        return seconds * 1000 if label == "unix_ms" else seconds
    if label == "iso-datetime":
        return f"{d.isoformat()}T{time_of_day}+08:00"
    if label == "YYYY-MM-DD HH:MM:SS":
        return f"{d.isoformat()} {time_of_day}"
    if label == "YYYY-MM-DDTHH:MM:SS":
        return f"{d.isoformat()}T{time_of_day}"
    if label == "YYYY-MM-DD HH:MM":
        return f"{d.isoformat()} {time_of_day[:5]}"
    return d.strftime(_FMT_TO_STRFTIME.get(label, "%Y-%m-%d"))
