"""The validation corpus: gold answers with their tool outputs, and copies with one wrong number each.

Three sources of clean answers, all deterministic:

- ``sim``: finmcp-sim's gold replies, each turn with the recorded outputs of its calls (and those of
  earlier turns);
- ``facts``: per finmcp-sim turn, an answer stating up to three values of its outputs in the ways
  answers write them (rounded, percent for fractions, 万/亿, thousands separators, full-width
  digits, Chinese or English), and for one fund of the outputs its NAV on a day from the world;
- ``official``: the official FinMCP-Bench demo files' final answers with their tool messages (when
  the files are present; their gold answers hold numbers the outputs do not state, counted apart).

Injections (one per copy, into a claim the checker supports in the clean answer): a number perturbed
by 5-30 % at its precision (``number``), a date moved by 1-40 days (``date``), a fund code replaced
by another of the world (``code``), a fund or strategy name swapped for another (``entity``), a NAV
replaced by the same fund's NAV of another day (``stale``). An injected value is never one the
outputs state (an "error" equal to a true value is no error).
"""

from __future__ import annotations

import gzip
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from finmcp.evaluator.grounding.check import Checker
from finmcp.evaluator.grounding.claims import NUMERIC_KINDS, Claim
from finmcp.evaluator.grounding.sources import Sources, build_sources, parse_output

INJECTION_KINDS = ("number", "date", "code", "entity", "stale")
_FULL = str.maketrans("0123456789.%", "０１２３４５６７８９．％")


@dataclass
class Item:
    """One answer with what its sample's tools returned."""

    id: str
    source: str  # sim | facts | official
    answer: str
    outputs: list[tuple[str, Any]]
    question: str = ""
    injected: str = ""  # the injection kind ("" for a clean answer)
    span: tuple[int, int] = (0, 0)  # where the injected text is
    original: str = ""
    notes: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------- clean answers
def sim_items() -> Iterator[Item]:
    """finmcp-sim's gold replies (non-empty), each with the recorded outputs of its turn and earlier."""
    from finmcp.evaluator.benchmarks import data_path, load_records
    from finmcp.recordings.canonical import args_key
    from finmcp.tool_specs.inventory import load_inventory

    inventory = load_inventory("finmcp65")
    recorded: dict[tuple[str, str], Any] = {}
    with gzip.open(data_path("finmcp-sim", "recordings"), "rt", encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            recorded[(row["tool"], row["args_key"])] = json.dumps(
                row["result"], ensure_ascii=False
            )  # as traced
    for record in load_records("finmcp-sim"):
        outputs: list[tuple[str, Any]] = []
        for t, turn in enumerate(record["turns"]):
            for g, group in enumerate(turn["calls"]):
                for c, call in enumerate(group):
                    spec = inventory.get(call["tool"])
                    key = args_key(call["arguments"], getattr(spec, "input_schema", None))
                    outputs.append((f"t{t}.g{g}.c{c}:{call['tool']}", recorded.get((call["tool"], key))))
            if turn.get("assistant", "").strip():
                yield Item(f"{record['id']}#t{t}", "sim", turn["assistant"], list(outputs), turn["user"])


def official_items(folder: str | Path) -> Iterator[Item]:
    """The official demo files' final answers (``demo_infer.json``'s ``answer``, else the last
    assistant message with text) and their tool messages."""
    for name in ("train_data_demo.json", "demo_infer.json"):
        path = Path(folder) / name
        for i, record in enumerate(json.loads(path.read_text("utf-8"))):
            messages = record.get("messages") or []
            outputs = [
                (str(m.get("tool_call_id") or f"m{j}"), m.get("content"))
                for j, m in enumerate(messages)
                if m.get("role") == "tool"
            ]
            texts = [m["content"] for m in messages if m.get("role") == "assistant" and m.get("content")]
            answer = record.get("answer") or (texts[-1] if texts else "")
            users = [m.get("content", "") for m in messages if m.get("role") == "user"]
            if answer:
                yield Item(f"{name}#{i}", "official", answer, outputs, users[0] if users else "")


def fact_items(sim: list[Item], checker: Checker, seed: int = 0) -> Iterator[Item]:
    """Answers stating values of each turn's outputs in the forms answers use (module docstring)."""
    for item in sim:
        rng = random.Random(f"{seed}:facts:{item.id}")
        facts = _facts(item.outputs)
        if not facts:
            continue
        chosen = rng.sample(facts, min(3, len(facts)))
        english = rng.random() < 0.3
        lines = [_render(fact, rng, english) for fact in chosen]
        nav_line = _world_nav_line(item.outputs, checker, rng, english)
        if nav_line:
            lines.append(nav_line)
        yield Item(item.id + "#facts", "facts", "\n".join(lines), item.outputs, item.question)


def _facts(outputs: list[tuple[str, Any]]) -> list[tuple[str, str, float]]:
    """(entity label, key, value) of the numbers in objects that name their entity."""
    out: list[tuple[str, str, float]] = []

    def walk(node: Any, label: str) -> None:
        if isinstance(node, dict):
            name = next(
                (
                    v
                    for k, v in node.items()
                    if isinstance(v, str) and "name" in k.lower() and 3 <= len(v) <= 30
                ),
                None,
            )
            code = next(
                (
                    v
                    for k, v in node.items()
                    if isinstance(v, str) and "code" in k.lower() and v.isalnum() and len(v) <= 12
                ),
                None,
            )
            here = f"{name}（{code}）" if name and code else (name or code or label)
            for key, value in node.items():
                if isinstance(value, bool) or value is None:
                    continue
                if (
                    isinstance(value, (int, float))
                    and here
                    and key.isidentifier()
                    and not any(ch.isdigit() for ch in key)
                ):
                    if abs(value) < 1e12:
                        out.append((here, key, float(value)))
                elif isinstance(value, (dict, list)):
                    walk(value, here)
        elif isinstance(node, list):
            for item in node[:20]:
                walk(item, label)

    for _, output in outputs:
        data = parse_output(output)
        if not isinstance(data, str):
            walk(data, "")
    return out


def _render(fact: tuple[str, str, float], rng: random.Random, english: bool) -> str:
    label, key, value = fact
    shown = _format(value, key, rng)
    if english:
        return f"The {key} of {label} is {shown}."
    return f"{label}的{key}为{shown}。"


def _format(value: float, key: str, rng: random.Random) -> str:
    """A true value as an answer writes it (never another value)."""
    style = rng.randrange(6)
    ratio = any(w in key.lower() for w in ("rate", "ratio", "return", "yield", "weight", "pct", "percent"))
    if style == 0 and ratio and 0 < abs(value) < 1:
        return f"{value * 100:.2f}%"
    if style == 1 and abs(value) >= 1e8:
        return f"{value / 1e8:.2f}亿"
    if style == 1 and abs(value) >= 1e4:
        return f"{value / 1e4:.2f}万"
    if style == 2 and abs(value) >= 1000 and float(value).is_integer():
        return f"{int(value):,}"
    if style == 3 and not float(value).is_integer():
        text = repr(value)
        decimals = len(text.split(".")[1]) if "." in text and "e" not in text else 0
        if decimals > 2:
            return f"{value:.2f}"
    if style == 4:
        return _plain(value).translate(_FULL)
    return _plain(value)


def _plain(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)


def _world_nav_line(
    outputs: list[tuple[str, Any]], checker: Checker, rng: random.Random, english: bool
) -> str:
    """A sentence with the NAV a fund of the outputs had on a day of its recent history (world fact)."""
    text = json.dumps([o for _, o in outputs], ensure_ascii=False)
    import re

    codes = sorted(
        {c for c in re.findall(r"(?<![\d.])\d{6}(?![\d.])", text) if checker.world.fund_stub(c) is not None}
    )
    if not codes:
        return ""
    code = rng.choice(codes)
    rows = checker.facts.nav_days(code, None)
    if len(rows) < 5:
        return ""
    row = rows[-1 - rng.randrange(min(10, len(rows) - 1))]
    name = checker.world.fund_stub(code).name
    if english:
        return f"On {row['date']}, the NAV of {name} ({code}) was {row['nav']:.4f}."
    y, m, d = (int(x) for x in row["date"].split("-"))
    return f"{name}（{code}）在{y}年{m}月{d}日的单位净值为{row['nav']:.4f}。"


# ------------------------------------------------------------------------------------- injections
def inject(
    item: Item, checker: Checker, seed: int = 0, per_item: int = 2, sources: Sources | None = None
) -> list[Item]:
    """Up to ``per_item`` copies of ``item`` with one injected error each (kinds in a seeded order);
    ``sources``: the item's outputs already indexed."""
    rng = random.Random(f"{seed}:inject:{item.id}")
    src = sources if sources is not None else build_sources(item.outputs, item.question)
    clean = checker.check(item.answer, src)
    supported = [c for c in clean.claims if c.verdict == "supported"]
    kinds = list(INJECTION_KINDS)
    rng.shuffle(kinds)
    out: list[Item] = []
    for kind in kinds:
        if len(out) >= per_item:
            break
        made = _inject_one(kind, item, supported, src, checker, rng)
        if made is not None:
            out.append(made)
    return out


def _inject_one(
    kind: str, item: Item, claims: list[Claim], src: Sources, checker: Checker, rng: random.Random
) -> Item | None:
    pool = {
        "number": [c for c in claims if c.kind in NUMERIC_KINDS and c.kind not in ("count", "period")],
        "date": [c for c in claims if c.kind == "date" and c.date is not None and c.date[2] is not None],
        "code": [c for c in claims if c.kind == "fund_code"],
        "entity": [c for c in claims if c.kind == "name" and len(c.text) > 4],
        "stale": [c for c in claims if c.kind == "number" and c.evidence.startswith("world:")],
    }[kind]
    if not pool:
        return None
    claim = rng.choice(pool)
    new = {
        "number": _new_number,
        "date": _new_date,
        "code": _new_code,
        "entity": _new_name,
        "stale": _stale_nav,
    }[kind](claim, src, checker, rng, item.answer)
    if new is None:
        return None
    answer = item.answer[: claim.start] + new + item.answer[claim.end :]
    return Item(
        f"{item.id}+{kind}",
        item.source,
        answer,
        item.outputs,
        item.question,
        injected=kind,
        span=(claim.start, claim.start + len(new)),
        original=claim.text,
    )


def _new_number(claim: Claim, src: Sources, checker: Checker, rng: random.Random, answer: str) -> str | None:
    from finmcp.evaluator.grounding.text import NUMBER_RE

    q = claim.quantity
    match = NUMBER_RE.search(claim.text)
    if q is None or match is None:
        return None
    num = match.group("num")
    for _ in range(8):
        value = abs(q.value) * (1 + rng.uniform(0.05, 0.3) * rng.choice((-1, 1)))
        if value == 0:
            value = 10.0 ** (-q.decimals) * rng.randrange(3, 30)
        shown = f"{value:,.{q.decimals}f}" if "," in num else f"{value:.{q.decimals}f}"
        if shown == num or (q.kind == "number" and len(shown) < 2):
            continue
        probe = Claim(claim.kind, shown, 0, 0, quantity=_requantity(shown, q), hedged=claim.hedged)
        if not _stated(probe, src):
            s, e = match.span("num")
            return claim.text[:s] + shown + claim.text[e:]
    return None


def _requantity(shown: str, q: Any) -> Any:
    from finmcp.evaluator.grounding.text import quantity

    return quantity(shown, q.unit)


def _stated(claim: Claim, src: Sources) -> bool:
    """Whether any number of the outputs equals the claim at its precision (either sign)."""
    from finmcp.evaluator.grounding.check import match_targets

    return any(
        next(src.near(s * t, tol), None) is not None for t, tol in match_targets(claim) for s in (1, -1)
    )


def _new_date(claim: Claim, src: Sources, checker: Checker, rng: random.Random, answer: str) -> str | None:
    year, month, day = claim.date  # type: ignore[misc]
    for _ in range(8):
        base = date(year or 2025, month, day or 1)
        moved = base + timedelta(days=rng.choice((-1, 1)) * rng.randrange(1, 41))
        parts = (moved.year if year else None, moved.month, moved.day)
        if (
            src.has_date(parts) is None
            and moved != checker.world.as_of
            and not _true_on(claim, parts, checker, answer)
        ):
            return _date_like(claim.text, moved, year is not None)
    return None


def _true_on(claim: Claim, day: Any, checker: Checker, answer: str) -> bool:
    """Whether a NAV stated in the claim's sentence is that fund's NAV on ``day`` too (a money fund's
    1.0000 is true every day: moving its date injects no error)."""
    from finmcp.evaluator.grounding.text import FUND_CODE_RE, NUMBER_RE, quantity

    sentence = answer[claim.sentence[0] : claim.sentence[1]]
    codes = [m.group() for m in FUND_CODE_RE.finditer(sentence)]
    for m in NUMBER_RE.finditer(sentence):
        q = quantity(m.group("num"), m.group("unit"))
        if q.decimals == 0:
            continue
        for code in codes:
            fact = checker.facts.check_value(code, day, q.value, q.tolerance())
            if fact is not None and fact[0] == "supported":
                return True
    return False


def _date_like(original: str, d: date, with_year: bool) -> str:
    if "年" in original or "月" in original:
        return (f"{d.year}年" if with_year else "") + f"{d.month}月{d.day}日"
    if original[:1].isalpha():
        return d.strftime("%B %-d, %Y")
    sep = "/" if "/" in original else "-"
    return f"{d.year}{sep}{d.month:02d}{sep}{d.day:02d}"


def _new_code(claim: Claim, src: Sources, checker: Checker, rng: random.Random, answer: str) -> str | None:
    codes = checker.world.fund_codes()
    for _ in range(20):
        code = rng.choice(codes)
        if src.find_text(code) is None and code not in answer:
            return code
    return None


def _new_name(claim: Claim, src: Sources, checker: Checker, rng: random.Random, answer: str) -> str | None:
    names = _long_names(checker)
    for _ in range(20):
        name = rng.choice(names)
        if src.find_text(name) is None and name not in answer and claim.text not in name:
            return name
    return None


_NAMES: dict[int, list[str]] = {}


def _long_names(checker: Checker) -> list[str]:
    """The lexicon's names longer than four characters, sorted (kept per lexicon)."""
    key = id(checker.lexicon)
    if key not in _NAMES:
        _NAMES[key] = sorted(n for n in checker.lexicon.code_of if len(n) > 4)
    return _NAMES[key]


def _stale_nav(claim: Claim, src: Sources, checker: Checker, rng: random.Random, answer: str) -> str | None:
    code = claim.evidence.split()[2]
    rows = checker.facts.nav_days(code, claim.date)
    q = claim.quantity
    assert q is not None
    others = [r["nav"] for r in rows if abs(r["nav"] - q.value) > q.tolerance()]
    rng.shuffle(others)
    for nav in others:
        shown = f"{nav:.{q.decimals}f}"
        probe = Claim("number", shown, 0, 0, quantity=_requantity(shown, q))
        if not _stated(probe, src):
            return shown
    return None
