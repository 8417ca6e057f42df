"""Claims of an answer: numbers with units, fund and strategy codes, names, dates.

What counts as a claim (docs/evaluator.md, "Grounded answers"): a number with a unit (%, 元, 万/亿,
基点, 点, 倍, a count or a period) or a bare number with a decimal point or at least two digits; a
six-digit fund code, a strategy code (``ZH013136``); a fund or strategy name the world knows; a date
(2024-05-01, 2024年5月1日, 2024年5月, 5月1日, May 1, 2024). Not claims: list markers (``1.``,
``（2）``), ordinals (``第3``), years and quarters on their own (``2025年``, ``2季度``), times of day,
URLs, numbers glued to letters (``A500``, ``5G``).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from finmcp.evaluator.grounding.lexicon import NameLexicon
from finmcp.evaluator.grounding.text import (
    FUND_CODE_RE,
    HEDGES,
    NUMBER_RE,
    STRATEGY_CODE_RE,
    DateParts,
    Quantity,
    find_dates,
    fold,
    quantity,
)

NUMERIC_KINDS = ("number", "percent", "amount", "bp", "point", "count", "period")

_SKIPS = re.compile(
    r"https?://\S+"
    r"|(?m:^[ \t]*(?:[-*+>#|][ \t]*)*\d{1,2}[.、)）](?!\d))"
    r"|[(（]\d{1,2}[)）]"
    r"|第\s?\d+"
    r"|(?i:top\s?\d+)"
    r"|前\s?\d+(?=\s?[名位只个条])"
    r"|(?<![0-9])\d{1,2}:\d{2}(?::\d{2})?"
    r"|(?<![0-9])(?:19|20)\d\d\s?年(?:度|报|末|初|内|底)?(?:\s?[1-4一二三四]\s?季度|[上下]半年|Q[1-4])?"
    r"|(?<![0-9])[1-4]\s?季度|(?<![A-Za-z])Q[1-4](?![0-9])"
    r"|\d+(?=[A-Za-z])(?!(?:BP|bps?|k|x|bn|mn|million|billion|thousand|percent|pct|yuan|RMB|CNY|days?|months?|years?|points?)\b)"
)
"""Spans that are not claims (see the module docstring)."""

SHORT_NAME = 4
"""Names this short (strategy names like 长期定投) are claims only where they stand alone."""
_OPENERS = set('：:、，,「“"《(（[ \t\n-*|')
_CLOSERS = set('、，,。；;」”"》)）(（] \t\n*|：:')
_SENTENCE_END = re.compile(r"[。！？!?；;\n]|\.(?=\s|$)")


@dataclass
class Claim:
    """One claim: its kind, the text as written and where, and (after checking) verdict and evidence."""

    kind: str  # a NUMERIC_KINDS kind, date, fund_code, strategy_code, name, or answer (unreadable)
    text: str
    start: int
    end: int
    sentence: tuple[int, int] = (0, 0)
    quantity: Quantity | None = None
    date: DateParts | None = None
    hedged: bool = False
    verdict: str = ""  # supported | unsupported | stale | not_checkable
    evidence: str = ""
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The claim as a JSON object (what reports and the viewer show)."""
        return {
            "kind": self.kind,
            "text": self.text,
            "span": [self.start, self.end],
            "verdict": self.verdict,
            "evidence": self.evidence,
        }


def unreadable(answer: Any) -> str | None:
    """Why the checker cannot read ``answer`` (None when it can): not text, a JSON document, or a
    language other than Chinese or English (more than a fifth of its letters from another script)."""
    if not isinstance(answer, str):
        return f"not text ({type(answer).__name__})"
    stripped = answer.strip()
    if stripped[:1] in ("{", "[") and stripped[-1:] in ("}", "]"):
        return "a JSON document, not prose"
    if any(unicodedata.category(c) == "Cc" and c not in "\n\r\t" for c in stripped):
        return "control characters (binary or garbled text)"
    letters = [c for c in stripped if c.isalpha()]
    if not letters:
        return None
    readable = sum(
        1 for c in letters if c.isascii() or "\u4e00" <= c <= "\u9fff" or "\u3400" <= c <= "\u4dbf"
    )
    if readable < 0.8 * len(letters):
        return "language: not Chinese or English"
    return None


def sentence_bounds(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence or line of ``text``."""
    out, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        out.append((start, m.end()))
        start = m.end()
    if start < len(text):
        out.append((start, len(text)))
    return out


def extract_claims(answer: str, lexicon: NameLexicon) -> list[Claim]:
    """Every claim of a readable answer, in text order (see the module docstring)."""
    text = fold(answer)
    taken: list[tuple[int, int]] = []
    claims: list[Claim] = []

    def free(s: int, e: int) -> bool:
        return not any(s < te and ts < e for ts, te in taken)

    for s, e, name in lexicon.find(text):
        if len(name) <= SHORT_NAME and not _delimited(text, s, e):
            continue  # a short name inside prose is as likely a phrase (长期定投是可行的)
        claims.append(Claim("name", name, s, e))
        taken.append((s, e))
    for s, e, parts in find_dates(text):
        if free(s, e):
            claims.append(Claim("date", text[s:e], s, e, date=parts))
            taken.append((s, e))
    for m in _SKIPS.finditer(text):
        if free(*m.span()):
            taken.append(m.span())
    for kind, pattern in (("strategy_code", STRATEGY_CODE_RE), ("fund_code", FUND_CODE_RE)):
        for m in pattern.finditer(text):
            s, e = m.span()
            if free(s, e) and not _amount_follows(text, e):
                claims.append(Claim(kind, m.group(), s, e))
                taken.append((s, e))
    for m in NUMBER_RE.finditer(text):
        s, e = m.span()
        if not free(s, e):
            continue
        q = quantity(m.group("num"), m.group("unit"), m.group("sign"))
        if q.kind == "number" and q.decimals == 0 and len(m.group("num")) < 2:
            continue  # a bare digit: too generic to be a claim
        claims.append(Claim(q.kind, m.group(), s, e, quantity=q, hedged=_hedged(text, s, e)))
    claims.sort(key=lambda c: c.start)
    bounds = sentence_bounds(text)
    k = 0
    for claim in claims:
        while k < len(bounds) - 1 and bounds[k][1] <= claim.start:
            k += 1
        claim.sentence = bounds[k] if bounds else (0, len(text))
    return claims


def _delimited(text: str, start: int, end: int) -> bool:
    """Whether a name stands alone: a list item, quoted, or a line of its own."""
    before = text[start - 1] if start else "\n"
    after = text[end] if end < len(text) else "\n"
    return before in _OPENERS and after in _CLOSERS


def _amount_follows(text: str, end: int) -> bool:
    """Whether six digits are an amount (a unit right after them), not a code."""
    rest = text[end : end + 2].lstrip()
    return bool(rest) and rest[0] in "元万亿千份只个%"


def _hedged(text: str, start: int, end: int) -> bool:
    """Whether the number is written as approximate (约, 近, 超过, 左右, about …)."""
    before = text[max(0, start - 3) : start].lower()
    after = text[end : end + 2]
    return any(before.endswith(h) or before.endswith(h + " ") for h in HEDGES) or after.startswith("左右")
