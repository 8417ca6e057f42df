"""Put references and predictions together and compute every number of a report (:class:`Report`)."""

from __future__ import annotations

import json
import sys
from typing import Any

from finmcp.evaluator.inputs.model import Prediction, PredictionSet, Reference, ReferenceSet
from finmcp.evaluator.inputs.pairing import Pairing, pair_up, require_matches, unmatched_warning
from finmcp.evaluator.metrics.argnorm import Canonicalizer
from finmcp.evaluator.metrics.finmcp import compute_official, paper_emr
from finmcp.evaluator.metrics.fintoolbench import COMPLIANCE_NA, evaluate_records, prefetch_judgments
from finmcp.evaluator.metrics.headline import (
    finmcp_specs,
    fintoolbench_columns,
    fintoolbench_specs,
    point_values,
    table_columns,
)
from finmcp.evaluator.metrics.options import EvalOptions
from finmcp.evaluator.metrics.stats import Bootstrap, pass_hat_k
from finmcp.evaluator.metrics.table import ScoreTable, official_rows, score_pairs
from finmcp.evaluator.reports.behaviour import behaviour_summary
from finmcp.evaluator.reports.evidence import sample_evidence
from finmcp.evaluator.reports.model import Report, SampleCounts
from finmcp.recordings.plumbing.terminal import visible

REPORT_VERSION = 1


def groups_view(turns: list[list[list[Any]]]) -> list[list[list[str]]]:
    """Tool names per turn and group (for per-sample rows and the HTML alignment view)."""
    return [[[c.tool for c in g] for g in groups] for groups in turns]


def fintoolbench_record(ref: Reference, pred: Prediction | None) -> dict[str, Any]:
    """The FinToolBench result record of a sample: the raw one when read from a result file, else one
    synthesised from the trace (step = group index + 1 within the sample's single turn)."""
    if pred is not None and pred.record is not None:
        record = dict(pred.record)
        if record.get("ground_truth") is None:
            record["ground_truth"] = ref.ground_truth
        if not (record.get("question") or record.get("query")):
            record["question"] = ref.question
        return record
    calls = []
    answer = pred.answer if pred is not None else None
    if pred is not None:
        step = 0
        for groups in pred.turns:
            for group in groups:
                step += 1
                for c in group:
                    calls.append(
                        {
                            "step": step,
                            "tool_name": c.tool,
                            "parameters": c.arguments,
                            "output": c.output,
                            "status": c.status,
                        }
                    )
    return {
        "id": ref.id,
        "question": ref.question,
        "execution_result": answer or "",
        "ground_truth": ref.ground_truth,
        "tool_calls": calls,
        "error": None,
        "_answer_known": answer is not None,
    }


def run_fintoolbench(pairs: list[tuple[Reference, Prediction | None]], opts: EvalOptions) -> dict[str, Any]:
    """Both FinToolBench variants (official and corrected) with CIs and graded records."""
    from finmcp.evaluator.metrics.rule_judge import RuleJudge

    judge = opts.judge or RuleJudge()
    records = [fintoolbench_record(ref, pred) for ref, pred in pairs]
    strata = [ref.type for ref, _ in pairs]
    out: dict[str, Any] = {
        "judge": judge.name,
        "judge_repeats": opts.judge_repeats,
        "tool_metadata": len(opts.tool_meta),
        "tool_metadata_source": opts.tool_meta_source or None,
    }
    prefetch_judgments(judge, records, opts.tool_meta, opts.judge_repeats)
    for variant, corrected in (("fintoolbench", False), ("fintoolbench_corrected", True)):
        results, metrics = evaluate_records(records, judge, opts.tool_meta, opts.judge_repeats, corrected)
        cols = fintoolbench_columns(results)
        specs = fintoolbench_specs(variant)
        out[variant] = {
            "metrics": metrics,
            "ci": Bootstrap(strata, opts.bootstrap, opts.seed).ci(cols, specs),
            "records": results,
        }
    return out


def compliance_warnings(block: dict[str, Any]) -> list[str]:
    """Warnings about TMR/IMR/DMR of a FinToolBench block: rates that are n/a, and judged calls whose
    tool has no metadata (the released evaluator counts them as matches)."""
    found: dict[str, list[str]] = {}  # message -> variants it holds for
    for variant in ("fintoolbench", "fintoolbench_corrected"):
        com = block[variant]["metrics"].get("com") or {}
        by_reason: dict[str, list[str]] = {}
        for metric, reason in (com.get("na_reason") or {}).items():
            by_reason.setdefault(reason, []).append(metric.upper())
        for reason, metrics in by_reason.items():
            hint = (
                "; give --inventory with finance tags (e.g. fintool760) or --tool-manifest tools.jsonl"
                if reason in (COMPLIANCE_NA["no_metadata"], COMPLIANCE_NA["no_tool_metadata"])
                else ""
            )
            found.setdefault(f"{'/'.join(metrics)} n/a: {reason}{hint}", []).append(variant)
        judged, with_meta = com.get("judged_tools", 0), com.get("with_metadata", 0)
        if 0 < with_meta < judged:
            message = (
                f"{judged - with_meta} of {judged} judged tool calls have no tool metadata "
                "(not judged: they count as matches, as in the released evaluator)"
            )
            found.setdefault(message, []).append(variant)
    return [f"FinToolBench ({', '.join(variants)}): {message}" for message, variants in found.items()]


def trials_block(refs: ReferenceSet, preds: PredictionSet, canon: Canonicalizer) -> dict[str, Any] | None:
    """Per-trial official overall numbers and pass^k (success = paper EMR) when a run has repeated trials."""
    if preds.trial_count() < 2:
        return None
    by_id = refs.by_id()
    successes: list[list[int]] = []
    per_trial: dict[int, list[tuple[Reference, Prediction]]] = {}
    for sid, trials in preds.by_sample.items():
        ref = by_id.get(sid)
        if ref is None:
            continue
        gold = [t.calls for t in ref.turns]
        ok = [p for p in trials if not p.error and not p.invalid]
        successes.append([paper_emr(p.turns, gold) for p in ok])
        for p in ok:
            per_trial.setdefault(p.trial, []).append((ref, p))
    overall = {}
    for trial, pairs in sorted(per_trial.items()):
        table = score_pairs(pairs, canon)
        overall[str(trial)] = compute_official(official_rows(table))["overall"]
    return {"trials": preds.trial_count(), "pass_hat_k": pass_hat_k(successes), "official_by_trial": overall}


def evaluate(refs: ReferenceSet, preds: PredictionSet, opts: EvalOptions | None = None) -> Report:
    """The whole report of one run."""
    opts = opts or EvalOptions()
    canon = opts.canon or Canonicalizer()
    pairing = pair_up(refs, preds, opts.missing)
    require_matches(pairing, refs, preds)
    table = score_pairs(pairing.pairs, canon)
    return Report.from_dict(report_dict(refs, preds, pairing, table, trials_block(refs, preds, canon), opts))


def compare_sample_counts(
    refs: ReferenceSet, preds_a: PredictionSet, preds_b: PredictionSet, missing: str
) -> dict[str, dict[str, Any]]:
    """``{"a": counts, "b": counts}``: each run's :class:`~evaluator.reports.model.SampleCounts` (what
    ``compare`` adds to its result as ``samples``)."""
    out = {}
    for side, preds in (("a", preds_a), ("b", preds_b)):
        pairing = pair_up(refs, preds, missing)
        counts = SampleCounts.of(len(refs.samples), len(pairing.pairs), len(pairing.missing), missing)
        out[side] = counts.model_dump()
    return out


def is_fintoolbench(refs: ReferenceSet) -> bool:
    """True when every reference is a FinToolBench sample (the report then scores it as FinToolBench)."""
    return all(r.source == "fintoolbench" for r in refs.samples)


def report_dict(
    refs: ReferenceSet,
    preds: PredictionSet,
    pairing: Pairing,
    table: ScoreTable,
    trials: dict[str, Any] | None,
    opts: EvalOptions,
    evidence: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The report of scored pairs as a JSON-ready dict (``report.json``'s keys in order; a
    :class:`Report` validates it): ``table`` holds the rows of ``pairing.pairs`` in order, ``trials``
    the :func:`trials_block` (both computed here by :func:`evaluate`, or while streaming a trace);
    ``evidence`` per sample id when already built (streaming keeps it instead of the predictions)."""
    benchmark = "fintoolbench" if is_fintoolbench(refs) else "finmcp"
    report: dict[str, Any] = {
        "version": REPORT_VERSION,
        "benchmark": benchmark,
        "inputs": {
            "references": refs.path,
            "reference_format": refs.format,
            "predictions": preds.source,
            "prediction_format": preds.format,
            "run_id": preds.run_id,
            "bootstrap": opts.bootstrap,
            "seed": opts.seed,
            "missing": opts.missing,
        },
        "coverage": {
            "references": len(refs.samples),
            "scored": len(table),
            "missing_predictions": len(pairing.missing),
            "dropped": pairing.dropped,
            "skipped_references": refs.skipped,
            "predictions_not_in_references": pairing.unknown[:100],
            "predictions_not_in_references_count": len(pairing.unknown),
        },
        "warnings": refs.warnings + preds.warnings,
    }
    unmatched = unmatched_warning(pairing, preds)
    if unmatched:
        report["warnings"].append(unmatched)
    report.update(finmcp_block(table, opts, benchmark))
    report["by_type"] = by_group(table, "type")
    report["by_difficulty"] = by_group(table, "difficulty", opts)
    report["by_scenario"] = by_group(table, "level1")
    if trials is not None:
        report["trials"] = trials
    if benchmark == "fintoolbench" or preds.format == "fintoolbench_result":
        report["fintoolbench"] = run_fintoolbench(pairing.pairs, opts)
        report["warnings"] += compliance_warnings(report["fintoolbench"])
    report["samples"] = sample_rows(table, pairing.pairs, report.get("fintoolbench"), evidence)
    report["agent_behaviour"] = behaviour_summary(report["samples"])
    if preds.fingerprint is not None:  # absent for runs without one: their report.json is unchanged
        report["fingerprint"] = preds.fingerprint
    return report


def finmcp_block(table: ScoreTable, opts: EvalOptions, benchmark: str) -> dict[str, Any]:
    """The official block (exact, rounded), the headline numbers (unrounded) and their CIs."""
    specs = finmcp_specs(table.args_known)
    cols = table_columns(table)
    n = len(table)
    headline = point_values(cols, specs, n)
    ci = Bootstrap(table.meta["type"], opts.bootstrap, opts.seed).ci(cols, specs)
    out: dict[str, Any] = {
        "headline": {k: {"value": v, **ci[k]} for k, v in headline.items()},
        "first_error_histogram": first_error_histogram(table),
    }
    official = compute_official(official_rows(table))
    if benchmark == "finmcp":
        out["official"] = official
    else:  # the FinMCP formulas on FinToolBench's select_tools are not official for that benchmark
        out["tool_selection"] = official
    return out


def first_error_histogram(table: ScoreTable) -> dict[str, int]:
    """How many samples first go wrong at reference group 1, 2, ... (>= 6 pooled); 'none' = no error."""
    hist: dict[str, int] = {}
    for pos in table.cols["first_error"]:
        key = "none" if pos == 0 else str(pos) if pos < 6 else ">=6"
        hist[key] = hist.get(key, 0) + 1
    order = ["1", "2", "3", "4", "5", ">=6", "none"]
    return {k: hist[k] for k in order if k in hist}


GROUP_CI = ("official.macro_Precision", "official.macro_Recall", "official.macro_F1")


def by_group(table: ScoreTable, key: str, opts: EvalOptions | None = None) -> dict[str, dict[str, Any]]:
    """Headline numbers per value of a meta column; with ``opts``, CIs of TP/TR/TF1 (macro P/R/F1)."""
    specs = finmcp_specs(table.args_known)
    ci_specs = [m for m in specs if m.name in GROUP_CI]
    cols = table_columns(table)
    groups: dict[str, list[int]] = {}
    for i, value in enumerate(table.meta[key]):
        groups.setdefault(value, []).append(i)
    out = {}
    for value, idx in groups.items():
        sub = {c: [col[i] for i in idx] for c, col in cols.items()}
        out[value] = {"N": len(idx), **point_values(sub, specs, len(idx))}
        if opts is not None and opts.bootstrap > 0:
            strata = [table.meta["type"][i] for i in idx]
            out[value]["ci"] = Bootstrap(strata, opts.bootstrap, opts.seed).ci(sub, ci_specs)
    return out


def sample_rows(
    table: ScoreTable,
    pairs: list[tuple[Reference, Prediction | None]],
    fintool: dict[str, Any] | None,
    evidence: dict[str, dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """One JSON row per scored sample with its numbers, its reference/predicted groups and the evidence
    (calls with arguments, outputs, first error: :func:`evaluator.reports.evidence.sample_evidence`)."""
    records = fintool["fintoolbench"]["records"] if fintool else None
    corrected = fintool["fintoolbench_corrected"]["records"] if fintool else None
    rows = []
    for i, (ref, pred) in enumerate(pairs):
        row = table.row(i)
        row["ref_groups"] = groups_view([t.calls for t in ref.turns])
        row["pred_groups"] = groups_view(pred.turns) if pred is not None else []
        known = evidence.get(ref.id) if evidence is not None and pred is not None else None
        row["evidence"] = known if known is not None else sample_evidence(ref, pred)
        if records is not None and corrected is not None:
            r, c = records[i], corrected[i]
            row["fintoolbench"] = {k: r[k] for k in ("pass", "pass_reason", "score_mean", "compliance")}
            row["fintoolbench_corrected"] = {k: c[k] for k in ("pass", "pass_reason", "compliance")}
        rows.append(row)
    return rows


def print_warnings(warnings: list[str], prog: str, limit: int = 10) -> None:
    """A report's warnings on stderr (the first ``limit``; the report holds them all)."""
    for warning in warnings[:limit]:  # they name samples, tools and runs: untrusted text
        print(f"{prog}: warning: {visible(warning)}", file=sys.stderr)
    if len(warnings) > limit:
        print(f"{prog}: warning: ... {len(warnings) - limit} more in the report", file=sys.stderr)


def dumps(report: Report | dict[str, Any]) -> str:
    """Deterministic JSON text of a report (``report.json``) or of a comparison (``compare.json``)."""
    data = report.to_dict() if isinstance(report, Report) else report
    return json.dumps(data, ensure_ascii=False, indent=1, sort_keys=False, default=str)
