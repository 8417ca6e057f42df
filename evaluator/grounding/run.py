"""Grounded answers of a harness run: each answer of the run state checked against its sample's calls.

Answers come from the run state (:mod:`evaluator.harness.state`: a record's ``answers``, one per turn);
the outputs from the trace store's calls of that sample and trial (:class:`evaluator.inputs.model.
Prediction`), those of the answer's turn and earlier. Any other source of answers plugs into
:meth:`evaluator.grounding.check.Checker.check` with ``(call id, output)`` pairs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from finmcp.evaluator.grounding.check import AnswerCheck, Checker
from finmcp.evaluator.grounding.metrics import summarize
from finmcp.evaluator.grounding.sources import build_sources
from finmcp.evaluator.inputs.model import Prediction, PredictionSet, Reference


def call_outputs(pred: Prediction | None, upto_turn: int) -> list[tuple[str, Any]]:
    """``(call id, output)`` of a prediction's calls in turns ``0..upto_turn``; the id is
    ``t{turn}.g{group}.c{index}:{tool}``."""
    if pred is None:
        return []
    out = []
    for t, groups in enumerate(pred.turns[: upto_turn + 1]):
        for g, group in enumerate(groups):
            for c, call in enumerate(group):
                out.append((f"t{t}.g{g}.c{c}:{call.tool}", call.output))
    return out


def run_checks(
    preds: PredictionSet,
    state_records: Iterable[dict[str, Any]],
    refs: Iterable[Reference] = (),
    seed: int = 0,
    checker: Checker | None = None,
) -> list[tuple[dict[str, Any], AnswerCheck]]:
    """Every non-empty answer of the run state's records, checked (the user's turn text is a source)."""
    checker = checker or Checker(seed)
    questions = {r.id: [t.user for t in r.turns] for r in refs}
    out = []
    for record in sorted(state_records, key=lambda r: (str(r.get("sample")), int(r.get("trial", 0)))):
        sample, trial = str(record.get("sample")), int(record.get("trial", 0))
        pred = next((p for p in preds.by_sample.get(sample, []) if p.trial == trial), None)
        users = questions.get(sample, [])
        for turn, answer in enumerate(record.get("answers") or []):
            if isinstance(answer, str) and not answer.strip():
                continue
            question = "\n".join(users[: turn + 1]) or None
            src = build_sources(call_outputs(pred, turn), question)
            where = {"sample": sample, "trial": trial, "turn": turn}
            out.append((where, checker.check(answer, src)))
    return out


def grounding_block(
    preds: PredictionSet,
    state_records: Iterable[dict[str, Any]],
    refs: Iterable[Reference] = (),
    bootstrap: int = 2000,
    seed: int = 0,
    world_seed: int | None = None,
) -> dict[str, Any]:
    """The report's ``grounding`` block of a run (the world of the run's server seed, else 0)."""
    if world_seed is None:
        fp_seed = (preds.fingerprint or {}).get("seed")
        world_seed = fp_seed if isinstance(fp_seed, int) and not isinstance(fp_seed, bool) else 0
    checks = run_checks(preds, state_records, refs, world_seed)
    return summarize(checks, bootstrap, seed, world_seed)
