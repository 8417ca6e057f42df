"""Check every claim of an answer against the sample's tool outputs and the seeded world.

Verdicts: ``supported`` (found, with where: ``call-id $.json.path`` or a world fact), ``unsupported``
(found nowhere, or only as another entity's value), ``stale`` (a true value of that entity from
another date), ``not_checkable`` (the answer cannot be read, or a count/period the outputs do not
state: an answer's own enumeration, advice like 持有1年以上).

Matching is tolerant of formatting, not of values: a shown number matches a source number that rounds
to it at the shown precision (1.2345 -> 1.23); percentages match the percent or the fraction (12.3%
vs 0.123); amounts match in yuan or in the unit shown (1.5亿 vs 150000000 or 1.5); signs may be
written as words (下跌0.19% vs -0.19). Derived numbers: a sum or difference of two numbers of one
JSON object, a list's length, a column's total over a list count as supported (evidence says which).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from finmcp.evaluator.grounding.claims import NUMERIC_KINDS, Claim, extract_claims, unreadable
from finmcp.evaluator.grounding.lexicon import NameLexicon, world_for, world_lexicon
from finmcp.evaluator.grounding.sources import Entry, Sources, build_sources
from finmcp.evaluator.grounding.text import DateParts, dates_agree
from finmcp.evaluator.grounding.world_facts import WorldFacts

_CODE = re.compile(r"^(?:\d{6}|[A-Z]{2,4}\d{4,8})$")
VERDICTS = ("supported", "unsupported", "stale", "not_checkable")
SOFT_KINDS = ("count", "period")
"""Numbers not found in the outputs that are not checkable rather than unsupported."""


@dataclass
class AnswerCheck:
    """An answer's claims with verdicts, and why it could not be read (when it could not)."""

    claims: list[Claim] = field(default_factory=list)
    unreadable: str | None = None

    def counts(self) -> dict[str, int]:
        """Claims per verdict, and checkable numeric claims and their unsupported/stale counts."""
        out = dict.fromkeys(VERDICTS, 0)
        numeric = numeric_unsupported = numeric_stale = 0
        for c in self.claims:
            out[c.verdict] += 1
            if c.kind in NUMERIC_KINDS and c.verdict != "not_checkable":
                numeric += 1
                numeric_unsupported += c.verdict == "unsupported"
                numeric_stale += c.verdict == "stale"
        out.update(numeric=numeric, numeric_unsupported=numeric_unsupported, numeric_stale=numeric_stale)
        return out

    def flagged(self) -> list[Claim]:
        """Claims found unsupported or stale."""
        return [c for c in self.claims if c.verdict in ("unsupported", "stale")]

    def to_dict(self) -> dict[str, Any]:
        """Counts, the unreadable reason and every claim (reports, viewer, JSON)."""
        return {
            "counts": self.counts(),
            "unreadable": self.unreadable,
            "claims": [c.to_dict() for c in self.claims],
        }


class Checker:
    """A reusable checker for one world (seed): its names and facts are built once."""

    def __init__(self, seed: int = 0, world: Any = None, lexicon: NameLexicon | None = None) -> None:
        self.world = world if world is not None else world_for(seed)
        self.lexicon = lexicon if lexicon is not None else world_lexicon(seed)
        self.facts = WorldFacts(self.world)

    def check(
        self, answer: Any, outputs: Iterable[tuple[str, Any]] | Sources, question: str | None = None
    ) -> AnswerCheck:
        """Check ``answer`` against ``(call id, output)`` pairs (and the user's question), or against
        :class:`~evaluator.grounding.sources.Sources` built once for several answers of a sample."""
        reason = unreadable(answer)
        if reason is not None:
            text = answer if isinstance(answer, str) else repr(answer)
            claim = Claim("answer", text[:80], 0, len(text), verdict="not_checkable", evidence=reason)
            return AnswerCheck([claim], reason)
        claims = extract_claims(answer, self.lexicon)
        if not claims:
            return AnswerCheck([])
        src = outputs if isinstance(outputs, Sources) else build_sources(outputs, question)
        text = answer
        for claim in sorted(claims, key=_judging_order):  # numbers, then codes, then dates and names
            _judge(self, claim, text, claims, src)
        return AnswerCheck(claims)


def _judging_order(claim: Claim) -> int:
    return 0 if claim.kind in NUMERIC_KINDS else 1 if claim.kind.endswith("code") else 2


def check_answer(
    answer: Any, outputs: Iterable[tuple[str, Any]], question: str | None = None, seed: int = 0
) -> AnswerCheck:
    """Check one answer against its sample's tool outputs and the world of ``seed`` (see module doc)."""
    return Checker(seed).check(answer, outputs, question)


# ------------------------------------------------------------------------------------------ judging
def _context(
    checker: Checker, src: Sources, claim: Claim, claims: list[Claim]
) -> tuple[set[str], list[DateParts]]:
    """The entities (codes; names resolved to codes) and dates in the claim's sentence."""
    ents: set[str] = set()
    dates: list[DateParts] = []
    for other in claims:
        if other.sentence != claim.sentence or other is claim:
            continue
        if other.kind in ("fund_code", "strategy_code"):
            ents.add(other.text)
        elif other.kind == "name" and (code := _canon(checker, src, other.text)) is not None:
            ents.add(code)
        elif other.kind == "date" and other.date is not None:
            dates.append(other.date)
    return ents, dates


def _canon(checker: Checker, src: Sources, name: str) -> str | None:
    """The entity code of a code or name (None for a name of no known entity: a category, a title)."""
    if _CODE.match(name):
        return name
    code = src.aliases.get(name)
    if code is None:  # the world's code counts only where the outputs speak of that code
        code = checker.lexicon.resolve(name)
        if code is not None and src.find_text(code) is None:
            return None
    return code


def _entry_ents(checker: Checker, src: Sources, entry: Entry) -> set[str]:
    return {code for e in entry.ents if (code := _canon(checker, src, e)) is not None}


def _judge(checker: Checker, claim: Claim, text: str, claims: list[Claim], src: Sources) -> None:
    if claim.kind in NUMERIC_KINDS:
        _judge_number(checker, claim, claims, src)
    elif claim.kind == "date":
        _judge_date(checker, claim, claims, src)
    elif claim.kind in ("fund_code", "strategy_code"):
        _judge_code(checker, claim, text, claims, src)
    else:
        _judge_name(checker, claim, claims, src)


def match_targets(claim: Claim) -> list[tuple[float, float]]:
    """(value, tolerance) pairs a source number may equal (formatting only, never another value)."""
    q = claim.quantity
    assert q is not None
    tol = q.tolerance(claim.hedged)
    v = abs(q.value)
    out = [(v, tol)]
    if q.kind == "percent":
        out.append((v / 100.0, tol / 100.0))
    elif q.kind == "bp":
        out += [(v / 100.0, tol / 100.0), (v / 10000.0, tol / 10000.0)]
    elif q.scale != 1.0:
        out.append((v * q.scale, tol * q.scale))
    return out


def _judge_number(checker: Checker, claim: Claim, claims: list[Claim], src: Sources) -> None:
    ents, dates = _context(checker, src, claim, claims)
    q = claim.quantity
    counts = q is not None and (q.kind == "count" or (q.kind == "number" and q.decimals == 0))
    stale: Entry | None = None
    other_entity: Entry | None = None
    for target, tol in match_targets(claim):
        for sign in (1.0, -1.0):
            for entry in src.near(sign * target, tol):
                if entry.count and not counts:
                    continue
                e_ents = _entry_ents(checker, src, entry)
                if ents and e_ents and not ents & e_ents:
                    other_entity = other_entity or entry
                    continue
                if dates and entry.dates and not any(dates_agree(d, e) for d in dates for e in entry.dates):
                    stale = stale or entry
                    continue
                claim.verdict, claim.evidence = "supported", entry.where
                return
    for code in sorted(ents):
        for target, tol in match_targets(claim)[:1]:
            fact = checker.facts.check_value(code, dates[0] if dates else None, target, tol)
            if fact is not None:
                claim.verdict, claim.evidence = fact
                return
    if stale is not None:
        claim.verdict, claim.evidence = "stale", f"{stale.where} (value of another date)"
        return
    if other_entity is None:
        derived = _derived(claim, src)
        if derived is not None:
            claim.verdict, claim.evidence = "supported", derived
            return
    if claim.kind in SOFT_KINDS:
        claim.verdict, claim.evidence = "not_checkable", "a count or period the outputs do not state"
    elif other_entity is not None:
        claim.verdict, claim.evidence = "unsupported", f"value of another entity at {other_entity.where}"
    else:
        claim.verdict, claim.evidence = "unsupported", "in no tool output"


def _derived(claim: Claim, src: Sources) -> str | None:
    """A sum or difference of two numbers of one JSON object that equals the claim (at its precision)."""
    q = claim.quantity
    assert q is not None
    digits = _significant(q)
    if digits < 3:
        return None
    for target, tol in match_targets(claim):
        for group in src.groups:
            if len(group) > 40:
                continue
            for i, a in enumerate(group):
                for b in group[i + 1 :]:
                    for value, op in ((a + b, "+"), (abs(a - b), "-")):
                        # operands of the claim's order (a NAV plus a fee is no claim anyone makes):
                        # a sum's parts are each >= 1 % of it, and >= 10 % unless the claim shows 4+
                        # significant digits; a difference's operands are within 100x of it
                        small, big = sorted((abs(a), abs(b)))
                        if op == "+" and (small < 0.01 * target or (small < 0.1 * target and digits < 4)):
                            continue
                        if op == "-" and big > 100 * target:
                            continue
                        if abs(value - target) <= tol:
                            return f"derived: {a} {op} {b} (numbers of one output object)"
    return None


def _significant(q: Any) -> int:
    digits = f"{abs(q.value):.{q.decimals}f}".replace(".", "").lstrip("0")
    return len(digits)


def _judge_date(checker: Checker, claim: Claim, claims: list[Claim], src: Sources) -> None:
    assert claim.date is not None
    where = src.has_date(claim.date)
    if where is not None:
        claim.verdict, claim.evidence = "supported", where
        return
    day = _day(claim.date)
    for other in claims:  # the day of a value the world has for that day (judged before dates)
        if (
            other.sentence == claim.sentence
            and other.verdict == "supported"
            and day
            and f" on {day} " in other.evidence
        ):
            claim.verdict, claim.evidence = "supported", other.evidence
            return
    as_of = checker.world.as_of
    if dates_agree(claim.date, (as_of.year, as_of.month, as_of.day)):
        claim.verdict, claim.evidence = "supported", f"world: as-of date {as_of.isoformat()}"
        return
    codes = [c.text for c in claims if c.sentence == claim.sentence and c.kind == "fund_code"]
    for other in claims:  # a value the world has for this fund on this day (beside the day)
        if other.sentence == claim.sentence and other.kind == "number" and other.verdict == "supported":
            assert other.quantity is not None
            for code in codes:
                value, tol = other.quantity.value, other.quantity.tolerance()
                fact = checker.facts.check_value(code, claim.date, value, tol)
                if fact is not None and fact[0] == "supported":
                    claim.verdict, claim.evidence = fact
                    return
    claim.verdict, claim.evidence = "unsupported", "in no tool output"


def _day(parts: DateParts) -> str | None:
    if parts[0] is None or parts[2] is None:
        return None
    return f"{parts[0]:04d}-{parts[1]:02d}-{parts[2]:02d}"


def _judge_code(checker: Checker, claim: Claim, text: str, claims: list[Claim], src: Sources) -> None:
    where = src.find_text(claim.text)
    if where is None and claim.kind == "fund_code":  # six digits may be a bare amount (137700)
        where = next((e.where for e in src.near(float(claim.text), 0.0) if not e.count), None)
    if where is not None:
        claim.verdict, claim.evidence = "supported", where
        return
    sentence = text[claim.sentence[0] : claim.sentence[1]]
    prefix = f"world: fund {claim.text} "
    for other in claims:  # a value the world has for this code, stated beside it
        if (
            other.sentence == claim.sentence
            and other.verdict == "supported"
            and other.evidence.startswith(prefix)
        ):
            claim.verdict, claim.evidence = "supported", other.evidence
            return
    names = checker.facts.name_of(claim.text)
    if any(name and name in sentence for name in names):
        claim.verdict, claim.evidence = "supported", f"world: {claim.text} is {min(names, key=len)}"
        return
    known = "a code of the world, " if checker.facts.knows(claim.text) else ""
    claim.verdict, claim.evidence = "unsupported", f"{known}in no tool output"


def _judge_name(checker: Checker, claim: Claim, claims: list[Claim], src: Sources) -> None:
    where = src.find_text(claim.text)  # a share class letter as written must be found too
    if where is not None:
        claim.verdict, claim.evidence = "supported", where
        return
    for other in claims:  # named beside its own code, which the outputs or the world support
        if (
            other.sentence == claim.sentence
            and other.kind in ("fund_code", "strategy_code")
            and other.verdict == "supported"
            and claim.text in checker.facts.name_of(other.text)
        ):
            claim.verdict, claim.evidence = "supported", f"world: {other.text} is {claim.text}"
            return
    claim.verdict, claim.evidence = "unsupported", "a name of the world in no tool output"
