"""Text primitives of the grounding checker: width folding, numbers with units, dates.

Everything here is pure and deterministic; offsets are kept (folding maps one character to one), so a
claim's span points into the answer as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FOLD = {cp: cp - 0xFEE0 for cp in range(0xFF01, 0xFF5F)} | {0x3000: 0x20, 0x2212: 0x2D}
"""Full-width ASCII (０-９, ％, ．, ，…) to ASCII, the ideographic space to a space, U+2212 to '-'."""


def fold(text: str) -> str:
    """Full-width digits and punctuation to ASCII, one character for one (offsets stay valid)."""
    return text.translate(_FOLD)


SCALES: dict[str, float] = {
    "亿元": 1e8,
    "亿": 1e8,
    "万亿": 1e12,
    "万元": 1e4,
    "万": 1e4,
    "千元": 1e3,
    "千": 1e3,
    "billion": 1e9,
    "bn": 1e9,
    "million": 1e6,
    "mn": 1e6,
    "thousand": 1e3,
    "k": 1e3,
}
"""Multipliers of amount units (the number shown times the scale is the amount)."""

PERCENT_UNITS = ("%", "percent", "个百分点", "百分点", "pct")
BP_UNITS = ("BP", "bp", "bps", "基点")
COUNT_UNITS = ("只", "个", "条", "家", "笔", "位", "次", "支", "项", "款", "份", "人", "户")
PERIOD_UNITS = ("个交易日", "个月", "交易日", "天", "日", "周", "月", "年", "days", "day", "months", "years")
CURRENCY_UNITS = ("元", "块", "美元", "港元", "yuan", "RMB", "CNY")
POINT_UNITS = ("点", "倍", "points", "x")

_UNIT_ALTS = sorted(
    {*SCALES, *(s + "美元" for s in ("亿", "万")), *PERCENT_UNITS, *BP_UNITS, *COUNT_UNITS, *PERIOD_UNITS}
    | {*CURRENCY_UNITS, *POINT_UNITS},
    key=len,
    reverse=True,
)
_UNIT_RE = "|".join(re.escape(u) for u in _UNIT_ALTS)

NUMBER_RE = re.compile(
    r"(?:(?<![0-9A-Za-z.%_/#])(?P<sign>[-+])|(?<![0-9A-Za-z._/#+\-])|(?<=[0-9%]-)|(?<=[0-9%]~))"
    r"(?P<num>(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)"
    r"(?![0-9])(?:\s?(?P<unit>" + _UNIT_RE + r")(?![A-Za-z]))?"
)
"""A number (thousands separators allowed) and an optional unit right after it."""

HEDGES = (
    "约",
    "大约",
    "近",
    "逼近",
    "接近",
    "左右",
    "超",
    "超过",
    "逾",
    "不到",
    "约为",
    "about",
    "around",
    "nearly",
    "over",
)


@dataclass(frozen=True)
class Quantity:
    """A number as shown: value, digits after the point, unit, and the amount's scale (1 when none)."""

    value: float
    decimals: int
    unit: str
    scale: float
    kind: str  # number | percent | amount | count | period | bp | point

    def tolerance(self, hedged: bool = False) -> float:
        """Half a unit of the last digit shown (of the last non-zero integer digit when ``hedged``)."""
        if self.kind in ("count", "period"):
            return 1e-9  # whole things: equal or not
        tol = 0.5 * 10.0 ** (-self.decimals)
        if hedged and self.decimals == 0 and self.value:
            digits = str(int(abs(self.value)))
            zeros = len(digits) - len(digits.rstrip("0"))
            tol = 0.5 * 10.0**zeros
        return tol + 1e-9 * max(1.0, abs(self.value))


def quantity(num: str, unit: str | None, sign: str | None = None) -> Quantity:
    """The :class:`Quantity` of a matched number text and unit."""
    text = num.replace(",", "")
    decimals = len(text.split(".", 1)[1]) if "." in text else 0
    value = float(text) * (-1.0 if sign == "-" else 1.0)
    unit = unit or ""
    scale = 1.0
    if unit in PERCENT_UNITS:
        kind = "percent"
    elif unit in BP_UNITS:
        kind = "bp"
    elif unit in COUNT_UNITS:
        kind = "count"
    elif unit in PERIOD_UNITS:
        kind = "period"
    elif unit in POINT_UNITS:
        kind = "point"
    elif unit:
        kind = "amount"
        for key, mult in SCALES.items():
            if unit.startswith(key):
                scale = mult
                break
    else:
        kind = "number"
    return Quantity(value, decimals, unit, scale, kind)


# ------------------------------------------------------------------------------------------- dates
_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
    )
}
DATE_RES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("ymd", re.compile(r"(?<![0-9])(?P<y>(?:19|20)\d\d)[-/.](?P<m>\d{1,2})[-/.](?P<d>\d{1,2})(?![0-9])")),
    (
        "ymd",
        re.compile(r"(?<![0-9])(?P<y>(?:19|20)\d\d)\s?年\s?(?P<m>\d{1,2})\s?月\s?(?P<d>\d{1,2})\s?[日号]"),
    ),
    ("ym", re.compile(r"(?<![0-9])(?P<y>(?:19|20)\d\d)\s?年\s?(?P<m>\d{1,2})\s?月(?!份?\d)")),
    ("md", re.compile(r"(?<![0-9年])(?P<m>\d{1,2})\s?月\s?(?P<d>\d{1,2})\s?[日号]")),
    (
        "ymd",
        re.compile(
            r"\b(?P<mon>(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*)\.?\s+(?P<d>\d{1,2}),?\s+"
            r"(?P<y>(?:19|20)\d\d)\b",
            re.I,
        ),
    ),
    (
        "ymd",
        re.compile(
            r"\b(?P<d>\d{1,2})\s+(?P<mon>(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*)\.?,?\s+"
            r"(?P<y>(?:19|20)\d\d)\b",
            re.I,
        ),
    ),
)
"""Date forms read in answers: 2024-05-01 (/ and . too), 2024年5月1日, 2024年5月, 5月1日, May 1, 2024."""

COMPACT_DATE_RE = re.compile(r"(?<![0-9])(?P<y>(?:19|20)\d\d)(?P<m>[01]\d)(?P<d>[0-3]\d)(?![0-9])")
"""20240501, read in tool outputs only (in an answer eight digits are as likely an amount)."""

DateParts = tuple[int | None, int, int | None]
"""(year or None, month, day or None)."""


def date_parts(match: re.Match[str]) -> DateParts | None:
    """The parts of a date match (None when the month or day is out of range)."""
    groups = match.groupdict()
    month = _MONTHS[groups["mon"][:3].lower()] if groups.get("mon") else int(groups["m"])
    year = int(groups["y"]) if groups.get("y") else None
    day = int(groups["d"]) if groups.get("d") else None
    if not 1 <= month <= 12 or (day is not None and not 1 <= day <= 31):
        return None
    return (year, month, day)


_DATEISH = re.compile(r"\d\s?[-/.年月]\s?\d|\d{8}|(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)")


def find_dates(text: str, compact: bool = False) -> list[tuple[int, int, DateParts]]:
    """(start, end, parts) of every date in ``text``, leftmost-longest, without overlaps."""
    if not _DATEISH.search(text):
        return []
    found: list[tuple[int, int, DateParts]] = []
    taken: list[tuple[int, int]] = []
    patterns = [p for _, p in DATE_RES] + ([COMPACT_DATE_RE] if compact else [])
    for pattern in patterns:
        for m in pattern.finditer(text):
            s, e = m.span()
            if any(s < te and ts < e for ts, te in taken):
                continue
            parts = date_parts(m)
            if parts is not None:
                found.append((s, e, parts))
                taken.append((s, e))
    found.sort()
    return found


def dates_agree(a: DateParts, b: DateParts) -> bool:
    """Whether two dates can be the same day (a missing year or day agrees with any)."""
    return (
        a[1] == b[1]
        and (a[0] is None or b[0] is None or a[0] == b[0])
        and (a[2] is None or b[2] is None or a[2] == b[2])
    )


FUND_CODE_RE = re.compile(r"(?<![0-9A-Za-z.])\d{6}(?![0-9.%])")
STRATEGY_CODE_RE = re.compile(r"(?<![0-9A-Za-z])[A-Z]{2,4}\d{4,8}(?![0-9A-Za-z])")
