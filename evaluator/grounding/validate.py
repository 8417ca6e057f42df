"""Detection F1 of the checker on the injected corpus, and its false alarms on clean gold answers.

A detection is a flagged claim (unsupported or stale) overlapping the injected text; a flagged claim
elsewhere in an injected answer is a false positive unless the clean answer had it flagged too (the
official demo's gold answers state numbers their outputs do not: those are counted apart as
``gold_flagged``, listed, never hidden). A false alarm is a flagged claim of a clean answer of
``sim`` or ``facts`` (answers built only from what the outputs and the world say).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from finmcp.evaluator.grounding.check import Checker
from finmcp.evaluator.grounding.corpus import Item, inject
from finmcp.evaluator.grounding.sources import build_sources


def validate(clean: Iterable[Item], checker: Checker, seed: int = 0, per_item: int = 2) -> dict[str, Any]:
    """Check every clean answer and its injected copies; the counts, F1 per kind and overall."""
    out: dict[str, Any] = {
        "clean": 0,
        "clean_claims": 0,
        "false_alarms": [],
        "gold_flagged": [],
        "by_kind": {},
    }
    tp = fp = fn = 0
    for item in clean:
        src = build_sources(item.outputs, item.question)
        result = checker.check(item.answer, src)
        out["clean"] += 1
        out["clean_claims"] += len(result.claims)
        base = {(c.text, c.kind) for c in result.flagged()}
        for claim in result.flagged():
            entry = {"id": item.id, "claim": claim.text, "kind": claim.kind, "evidence": claim.evidence}
            (out["gold_flagged"] if item.source == "official" else out["false_alarms"]).append(entry)
        for copy in inject(item, checker, seed, per_item, src):
            checked = checker.check(copy.answer, src)
            s, e = copy.span
            hit = any(c.start < e and s < c.end for c in checked.flagged())
            # the injected sentence's other claims may now disagree with it: a consequence, not an alarm
            injected_sentence = next(
                (c.sentence for c in checked.claims if c.start < e and s < c.end), (s, e)
            )
            extra = [
                c
                for c in checked.flagged()
                if c.sentence != injected_sentence and (c.text, c.kind) not in base
            ]
            kind = out["by_kind"].setdefault(
                copy.injected, {"injected": 0, "detected": 0, "as_stale": 0, "missed": []}
            )
            kind["injected"] += 1
            kind["detected"] += hit
            kind["as_stale"] += any(
                c.verdict == "stale" and c.start < e and s < c.end for c in checked.claims
            )
            if not hit and len(kind["missed"]) < 20:
                kind["missed"].append(
                    {"id": copy.id, "original": copy.original, "injected": copy.answer[s:e]}
                )
            tp += hit
            fn += not hit
            fp += len(extra)
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    f1 = 2 * precision * recall / (precision + recall) if precision and recall else None
    out.update(injected=tp + fn, tp=tp, fp=fp, fn=fn, precision=precision, recall=recall, f1=f1)
    return out
