"""Paired comparison of two runs on the same samples: paired bootstrap (F1s) and McNemar (EMR)."""

from __future__ import annotations

from typing import Any

from finmcp.evaluator.inputs.fingerprint import comparability
from finmcp.evaluator.inputs.model import PredictionSet, ReferenceSet
from finmcp.evaluator.inputs.pairing import pair_up, require_matches, unmatched_warning
from finmcp.evaluator.metrics.argnorm import Canonicalizer
from finmcp.evaluator.metrics.headline import finmcp_specs, table_columns
from finmcp.evaluator.metrics.options import EvalOptions
from finmcp.evaluator.metrics.stats import Bootstrap, mcnemar
from finmcp.evaluator.metrics.table import score_pairs

PAIRED_METRICS = (
    "official.macro_Precision",
    "official.macro_Recall",
    "official.macro_F1",
    "official.micro_F1",
    "extended.exact_call_f1",
    "extended.arg_f1_micro",
    "extended.dep_f1_micro",
)
GROUP_METRICS = ("official.macro_F1",)
"""Paired per group (scenario, sample type): B - A of these, for the per-scenario forest plot."""
GROUP_KEYS = ("level1", "type")
MCNEMAR_METRICS = (("paper.EMR", "emr"), ("official.consist", "consist"), ("extended.emr_lenient", "emr_seq"))


def compare_runs(
    refs: ReferenceSet, preds_a: PredictionSet, preds_b: PredictionSet, opts: EvalOptions | None = None
) -> dict[str, Any]:
    """Compare run B against run A on the samples both runs scored; ``by_group`` holds the paired
    bootstrap of ``GROUP_METRICS`` within each scenario (``level1``) and sample type."""
    opts = opts or EvalOptions()
    canon = opts.canon or Canonicalizer()
    pa = pair_up(refs, preds_a, opts.missing)
    pb = pair_up(refs, preds_b, opts.missing)
    require_matches(pa, refs, preds_a)
    require_matches(pb, refs, preds_b)
    ta, tb = score_pairs(pa.pairs, canon), score_pairs(pb.pairs, canon)
    pos_a = {sid: i for i, sid in enumerate(ta.meta["id"])}
    pos_b = {sid: i for i, sid in enumerate(tb.meta["id"])}
    common = [sid for sid in ta.meta["id"] if sid in pos_b]
    ia, ib = [pos_a[s] for s in common], [pos_b[s] for s in common]
    cols_a, cols_b = table_columns(ta), table_columns(tb)
    sub_a = {c: [col[i] for i in ia] for c, col in cols_a.items()}
    sub_b = {c: [col[i] for i in ib] for c, col in cols_b.items()}
    strata = [ta.meta["type"][i] for i in ia]
    specs = [m for m in finmcp_specs(ta.args_known and tb.args_known) if m.name in PAIRED_METRICS]
    group_specs = [m for m in specs if m.name in GROUP_METRICS]
    by_group: dict[str, dict[str, Any]] = {}
    for key in GROUP_KEYS:
        members: dict[str, list[int]] = {}
        for j, i in enumerate(ia):
            members.setdefault(str(ta.meta[key][i]), []).append(j)
        by_group[key] = {
            value: {
                "N": len(idx),
                **Bootstrap([strata[j] for j in idx], opts.bootstrap, opts.seed).paired(
                    {c: [col[j] for j in idx] for c, col in sub_a.items()},
                    {c: [col[j] for j in idx] for c, col in sub_b.items()},
                    group_specs,
                ),
            }
            for value, idx in sorted(members.items())
        }
    return {
        "a": preds_a.run_id or preds_a.source,
        "b": preds_b.run_id or preds_b.source,
        "paired_samples": len(common),
        "only_a": len(ta) - len(common),
        "only_b": len(tb) - len(common),
        "bootstrap": opts.bootstrap,
        "seed": opts.seed,
        "paired_bootstrap": Bootstrap(strata, opts.bootstrap, opts.seed).paired(sub_a, sub_b, specs),
        "mcnemar": {name: mcnemar(sub_a[col], sub_b[col]) for name, col in MCNEMAR_METRICS},
        "by_group": by_group,
        "warnings": [w for w in (unmatched_warning(pa, preds_a), unmatched_warning(pb, preds_b)) if w],
        **fingerprints_block(preds_a, preds_b),
    }


def fingerprints_block(preds_a: PredictionSet, preds_b: PredictionSet) -> dict[str, Any]:
    """``{"fingerprints": comparability}`` when either run has a fingerprint (else nothing: an older
    run's comparison is unchanged); its ``differ`` lists what makes the deltas not comparable."""
    if preds_a.fingerprint is None and preds_b.fingerprint is None:
        return {}
    return {"fingerprints": comparability(preds_a.fingerprint, preds_b.fingerprint)}
