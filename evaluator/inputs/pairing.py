"""Put references and predictions together: which samples are scored, dropped, missing or unknown."""

from __future__ import annotations

from dataclasses import dataclass

from evaluator.inputs.model import Prediction, PredictionSet, Reference, ReferenceSet


@dataclass
class Pairing:
    """References matched with the first trial of their predictions, and what was left out."""

    pairs: list[tuple[Reference, Prediction | None]]
    dropped: list[dict[str, str]]
    missing: list[str]
    unknown: list[str]


def pair_up(refs: ReferenceSet, preds: PredictionSet, missing: str = "empty") -> Pairing:
    """Match every reference with its prediction; drop error / invalid samples like the official script."""
    first = preds.first_trial()
    pairs: list[tuple[Reference, Prediction | None]] = []
    dropped: list[dict[str, str]] = []
    absent: list[str] = []
    for ref in refs.samples:
        pred = first.get(ref.id)
        if pred is None:
            absent.append(ref.id)
            if missing == "drop":
                dropped.append({"id": ref.id, "reason": "no prediction"})
                continue
        elif pred.error:
            dropped.append({"id": ref.id, "reason": f"error sample: {str(pred.error)[:120]}"})
            continue
        elif pred.invalid:
            dropped.append({"id": ref.id, "reason": pred.invalid})
            continue
        pairs.append((ref, pred))
    known = {r.id for r in refs.samples}
    unknown = []
    for sid, trials in preds.by_sample.items():
        if sid in known:
            continue
        if trials and trials[0].error:  # an official error record (it no longer carries its reference)
            dropped.append({"id": sid, "reason": f"error sample: {str(trials[0].error)[:120]}"})
        else:
            unknown.append(sid)
    return Pairing(pairs, dropped, absent, unknown)
