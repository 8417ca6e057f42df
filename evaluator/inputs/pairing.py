"""Put references and predictions together: which samples are scored, dropped, missing or unknown."""

from __future__ import annotations

from dataclasses import dataclass

from finmcp.evaluator.errors import EvalInputError
from finmcp.evaluator.inputs.model import Prediction, PredictionSet, Reference, ReferenceSet

SHOWN_IDS = 10
"""How many unmatched sample ids a warning or an error names."""

TAGGING = (
    "The proxy tags each call with its sample from the URL path /r/{run}/s/{sample}/t/{turn}/mcp "
    "(or the X-Finmcp-Run, X-Finmcp-Sample, X-Finmcp-Turn headers); the sample tag must be the "
    "reference's id exactly, and turn tags count from --turn-base (default 0)."
)
"""How traced samples are matched to references (said when none matches)."""


@dataclass
class Pairing:
    """References matched with the first trial of their predictions, and what was left out."""

    pairs: list[tuple[Reference, Prediction | None]]
    dropped: list[dict[str, str]]
    missing: list[str]
    unknown: list[str]
    """Predicted sample ids that match no reference (in prediction order)."""
    matched: int = 0
    """Predicted sample ids that match a reference (scored, or dropped as errors)."""


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
    matched = 0
    for sid, trials in preds.by_sample.items():
        if sid in known:
            matched += 1
            continue
        if trials and trials[0].error:  # an official error record (it no longer carries its reference)
            dropped.append({"id": sid, "reason": f"error sample: {str(trials[0].error)[:120]}"})
        else:
            unknown.append(sid)
    return Pairing(pairs, dropped, absent, unknown, matched)


def _source(preds: PredictionSet) -> str:
    if preds.format == "trace_db":
        return f"run {preds.run_id!r} of trace DB {preds.source}"
    return f"predictions {preds.source}"


def _ids(ids: list[str]) -> str:
    shown = ", ".join(repr(i) for i in ids[:SHOWN_IDS])
    return shown + (f", ... ({len(ids) - SHOWN_IDS} more)" if len(ids) > SHOWN_IDS else "")


def unmatched_warning(pairing: Pairing, preds: PredictionSet) -> str | None:
    """A warning naming the predicted samples that match no reference (None when every one matches)."""
    if not pairing.unknown:
        return None
    kind = "traced samples" if preds.format == "trace_db" else "predicted samples"
    return (
        f"{len(pairing.unknown)} {kind} of {_source(preds)} match no reference and are not scored: "
        f"{_ids(pairing.unknown)}"
    )


def require_matches(pairing: Pairing, refs: ReferenceSet, preds: PredictionSet) -> None:
    """Refuse a run none of whose predicted samples is a reference (wrong tags or wrong benchmark)."""
    if pairing.matched or not pairing.unknown:
        return
    ref_ids = [r.id for r in refs.samples]
    message = (
        f"none of the {len(pairing.unknown)} samples of {_source(preds)} matches a reference of "
        f"{refs.path or 'the benchmark'} ({len(ref_ids)} samples). Sample ids seen: {_ids(pairing.unknown)}; "
        f"reference ids look like: {_ids(ref_ids[:3])}."
    )
    if preds.format == "trace_db":
        message += " " + TAGGING
    raise EvalInputError(message)
