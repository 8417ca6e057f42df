"""FinToolBench metrics as its released evaluator computes them, and a corrected variant.

Official ("fintoolbench", reproduced from the released ``code_bench/evaluate``):

* only the **last round** (calls with the largest ``step``) decides pass/fail and is judged for compliance;
* a record fails when its ``error`` is truthy, when it has no tool call, or when a last-round output is a
  dict with a truthy ``error`` or a string containing ``error``/``exception``/``traceback`` (any case);
* TIR = invoked / N, TESR = passed / N, CER = passed / invoked (None if nobody invoked),
  SoftScore = mean of the numeric per-record judge means, CSS = that mean over passed records only;
* TMR / IMR / DMR = share of eligible records (>= 1 named last-round call) with at least one judged
  mismatch; a tool without metadata, or whose verdict cannot be parsed, is skipped (counts as a match).
  A rate that rests on no verdict at all (no tool metadata, no eligible record, or no verdict the judge
  could give) is not a number: it is None, with the reason in ``na_reason`` (never a perfect 0).

Corrected ("fintoolbench_corrected"): the same, except errors are detected structurally (trace status,
an ``error`` key of a dict / JSON-object output, ``isError``) instead of by substring, the agent's
copied last-output ``error`` no longer fails a record on its own, and compliance judges the tools of
**every** round.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from finmcp.evaluator.metrics.judges import AskRecorder, Judge

ERROR_WORDS = ("error", "exception", "traceback")
DIMENSIONS = (
    ("tmr", "timeliness", "timeliness"),
    ("imr", "intent", "intent_type"),
    ("dmr", "domain", "regulatory_domains"),
)


# ---------------------------------------------------------------- tool metadata


def load_tool_metadata(path: str | Path) -> dict[str, dict[str, Any]]:
    """``name -> financial_tags + description`` from a FinToolBench manifest; last line wins; {} if absent."""
    meta: dict[str, dict[str, Any]] = {}
    try:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                line = line.strip()
                if not line:
                    continue
                obj = json.loads(line)
                name = obj.get("name")
                if name:
                    tags = dict(obj.get("financial_tags", {}) or {})
                    tags["description"] = obj.get("description", "")
                    meta[name] = tags
    except FileNotFoundError:
        return {}
    return meta


def resolve_tool_metadata(
    manifest: str | Path | None, inventory: Any
) -> tuple[dict[str, dict[str, Any]], str]:
    """The tool metadata for TMR/IMR/DMR and where it came from: a FinToolBench manifest when one is
    given (it wins over the inventory, entirely), else the inventory's finance tags; ``({}, "")`` for
    neither."""
    if manifest:
        return load_tool_metadata(manifest), f"tool manifest {manifest}"
    if inventory is None:
        return {}, ""
    name = getattr(inventory, "name", None) or "?"
    return tool_metadata_from_inventory(inventory), f"inventory {name}"


def tool_metadata_from_inventory(inventory: Any) -> dict[str, dict[str, Any]]:
    """The same metadata from a ``tool_specs`` Inventory (its ToolSpecs' finance tags)."""
    meta: dict[str, dict[str, Any]] = {}
    for spec in inventory or ():
        tags = getattr(spec, "tags", None)
        if tags is None:
            continue
        meta[spec.name] = {
            "timeliness": getattr(tags, "timeliness", None),
            "intent_type": getattr(tags, "intent_type", None),
            "regulatory_domains": list(getattr(tags, "regulatory_domains", ()) or ()),
            "description": getattr(spec, "description", "") or "",
        }
    return meta


# ---------------------------------------------------------------- pass / fail


def normalize_tool_calls(raw: Any) -> list[Any]:
    """The trace as a list, ``long_output`` removed from dict entries."""
    if not isinstance(raw, list):
        return []
    out = []
    for per in raw:
        if isinstance(per, dict):
            per = dict(per)
            per.pop("long_output", None)
        out.append(per)
    return out


def _last_round(calls: list[dict[str, Any]]) -> tuple[int, list[tuple[int, dict[str, Any]]]]:
    max_step = max((tc.get("step", 0) for tc in calls), default=0)
    return max_step, [(i, tc) for i, tc in enumerate(calls) if tc.get("step", 0) == max_step]


def official_pass(record: dict[str, Any]) -> tuple[str, str]:
    """('passed'|'failed', reason) exactly as the released evaluator decides it."""
    if record.get("error"):
        return "failed", f"example.error: {str(record.get('error'))[:120]}"
    calls = normalize_tool_calls(record.get("tool_calls"))
    if not calls:
        return "failed", "no tool_calls"
    _, last = _last_round(calls)
    for i, tc in last:
        output = tc.get("output")
        if isinstance(output, dict) and output.get("error"):
            return "failed", f"tool_call[{i}] output.error"
        if isinstance(output, str):
            low = output.lower()
            if any(word in low for word in ERROR_WORDS):
                return "failed", f"tool_call[{i}] output error text"
    return "passed", "tool_calls ok"


def structured_error(call: dict[str, Any]) -> bool:
    """True when a call failed by structure: trace status, ``isError``, or a top-level ``error`` key."""
    status = call.get("status")
    if status not in (None, "ok"):
        return True
    output = call.get("output")
    if isinstance(output, str):
        text = output.strip()
        if text.startswith("[error]"):
            return True
        if text.startswith("{") and text.endswith("}"):
            try:
                output = json.loads(text)
            except json.JSONDecodeError:
                return False
    if isinstance(output, dict):
        return bool(output.get("error")) or output.get("isError") is True
    return False


def corrected_pass(record: dict[str, Any]) -> tuple[str, str]:
    """Pass/fail with structural error detection (no substring matching)."""
    calls = normalize_tool_calls(record.get("tool_calls"))
    error = record.get("error")
    copied = bool(calls) and isinstance(calls[-1], dict) and error == calls[-1].get("output")
    if error and not copied:
        return "failed", f"example.error: {str(error)[:120]}"
    if not calls:
        return "failed", "no tool_calls"
    _, last = _last_round(calls)
    for i, tc in last:
        if structured_error(tc):
            return "failed", f"tool_call[{i}] structured error"
    return "passed", "tool_calls ok"


# ---------------------------------------------------------------- answer scoring


def determine_answer_type(gold: str) -> str:
    """'criterium' (JSON object/list), 'choice' (A-E), 'numeric' (number charset) or 'other_str'."""
    text = gold.strip()
    if text and ((text[0] == "{" and text[-1] == "}") or (text[0] == "[" and text[-1] == "]")):
        try:
            json.loads(text)
            return "criterium"
        except json.JSONDecodeError:
            pass
    if text and len(text.upper()) == 1 and text.upper() in "ABCDE":
        return "choice"
    if text and any(ch.isdigit() for ch in text):
        allowed = set("0123456789.,+-eE%亿万千百十兆/ ")
        if all(ch.isdigit() or ch in allowed for ch in text):
            return "numeric"
    return "other_str"


def parse_json_reply(text: str) -> dict[str, Any] | None:
    """A judge reply as JSON: the whole text, else the span from the first '{' to the last '}'."""
    if not text:
        return None
    text = text.strip()
    try:
        value = json.loads(text)
        return value if isinstance(value, dict) else None
    except json.JSONDecodeError:
        pass
    try:
        value = json.loads(text[text.index("{") : text.rindex("}") + 1])
        return value if isinstance(value, dict) else None
    except ValueError:
        return None


def judge_score(
    judge: Judge, question: str, answer: str, gold: str, answer_type: str, repeat_k: int
) -> tuple[float | None, str | None, str]:
    """(score_mean, label_majority, first reason) over ``repeat_k`` judgments; (None, None, '') if no gold."""
    if not gold:
        return None, None, ""
    scores: list[float] = []
    labels: list[str] = []
    reasons: list[str] = []
    fields = {"question": question, "answer": answer, "gold": gold, "answer_type": answer_type}
    for k in range(repeat_k):
        parsed = parse_json_reply(judge.ask("score", fields, k)) or {}
        score: Any = parsed.get("score")  # whatever the judge wrote: float() failures are skipped below
        try:
            sc = float(score)
            if answer_type in ("numeric", "choice"):
                sc = 1.0 if sc >= 0.5 else 0.0
            scores.append(max(0.0, min(1.0, sc)))
        except (TypeError, ValueError):
            pass
        label = parsed.get("label")
        if isinstance(label, str) and label.strip().lower() in ("correct", "partial", "wrong"):
            labels.append(label.strip().lower())
        reason = parsed.get("reason")
        if isinstance(reason, str) and reason.strip():
            reasons.append(reason.strip())
    mean = sum(scores) / len(scores) if scores else None
    majority = Counter(labels).most_common(1)[0][0] if labels else None
    return mean, majority, reasons[0] if reasons else ""


# ---------------------------------------------------------------- compliance


def _judge_match(judge: Judge, kind: str, fields: dict[str, Any]) -> bool | None:
    parsed = parse_json_reply(judge.ask(kind, fields, 0)) or {}
    value = parsed.get("match")
    if isinstance(value, str):
        v = value.strip().lower()
        if v == "yes":
            return True
        if v == "no":
            return False
    return None


def compliance_one(
    question: str, tools: list[str], tool_meta: dict[str, dict[str, Any]], judge: Judge
) -> dict[str, Any]:
    """Per-record TMR/IMR/DMR flags over ``tools`` (duplicates judged again), with what they rest on:
    ``judged_tools`` (named calls judged), ``with_metadata`` (of those, tools with metadata) and
    ``verdicts`` (yes/no verdicts per dimension; a skipped verdict counts as a match but not here)."""
    verdicts = {flag: 0 for flag, _, _ in DIMENSIONS}
    if not tools:
        return {
            "eligible": False,
            "tmr": None,
            "imr": None,
            "dmr": None,
            "judged_tools": 0,
            "with_metadata": 0,
            "verdicts": verdicts,
        }
    flags: dict[str, Any] = {"eligible": True, "tmr": 0, "imr": 0, "dmr": 0}
    for flag, kind, tag_key in DIMENSIONS:
        for tool in tools:
            tags = tool_meta.get(tool)
            if tags is None:
                continue
            fields = {
                "question": question,
                "tool_name": tool,
                "tag": tags.get(tag_key),
                "description": tags.get("description") or "",
            }
            match = _judge_match(judge, kind, fields)
            if match is not None:
                verdicts[flag] += 1
            if match is False:
                flags[flag] = 1
    flags["judged_tools"] = len(tools)
    flags["with_metadata"] = sum(1 for tool in tools if tool in tool_meta)
    flags["verdicts"] = verdicts
    return flags


# ---------------------------------------------------------------- whole runs


def evaluate_record(
    record: dict[str, Any],
    judge: Judge,
    tool_meta: dict[str, dict[str, Any]],
    repeat_k: int = 3,
    corrected: bool = False,
) -> dict[str, Any]:
    """One graded record (the released evaluator's output line, plus ``all_tools`` when corrected)."""
    question = str(record.get("question") or record.get("query") or "").strip()
    answer = str(record.get("execution_result") or record.get("answer") or "").strip()
    gold = str(record.get("ground_truth") or "").strip()
    calls = normalize_tool_calls(record.get("tool_calls"))
    bad = [i for i, tc in enumerate(calls) if not isinstance(tc, dict)]
    if bad:
        raise ValueError(f"sample {record.get('id')!r}: field 'tool_calls[{bad[0]}]': not an object")
    max_step, last = _last_round(calls)
    select_tools = [name for _, tc in last if (name := tc.get("tool_name"))]
    label, reason = corrected_pass(record) if corrected else official_pass(record)
    answer_type = determine_answer_type(gold)
    if record.get("_answer_known", True):
        score_mean, majority, score_reason = judge_score(judge, question, answer, gold, answer_type, repeat_k)
    else:
        score_mean, majority, score_reason = None, None, "no final answer recorded"
    judged_tools = [name for tc in calls if (name := tc.get("tool_name"))] if corrected else select_tools
    return {
        "id": record.get("id"),
        "setting": record.get("setting"),
        "question": question,
        "execution_result": answer,
        "ground_truth": gold,
        "tool_invoked": bool(calls),
        "select_tools": select_tools,
        "max_step": max_step,
        "pass": label,
        "pass_reason": reason,
        "answer_type": answer_type,
        "score_mean": score_mean,
        "label_majority": majority,
        "score_reason": score_reason,
        "compliance": compliance_one(question, judged_tools, tool_meta, judge),
    }


def summarize_capability(results: list[dict[str, Any]]) -> dict[str, Any]:
    """TIR, TESR, CER, CSS, SoftScore as the released code computes them ({} for no records)."""
    total = len(results)
    if total == 0:
        return {}
    invoked = sum(1 for r in results if r.get("tool_invoked"))
    passed = sum(1 for r in results if r.get("pass") == "passed")
    scores = [r["score_mean"] for r in results if isinstance(r.get("score_mean"), (int, float))]
    css = [
        r["score_mean"]
        for r in results
        if r.get("pass") == "passed" and isinstance(r.get("score_mean"), (int, float))
    ]
    return {
        "tir": invoked / total,
        "tesr": passed / total,
        "cer": passed / invoked if invoked else None,
        "css": sum(css) / len(css) if css else None,
        "soft_score": sum(scores) / len(scores) if scores else None,
    }


COMPLIANCE_NA = {
    "no_record": "no record with a named tool call",
    "no_metadata": "no tool metadata",
    "no_tool_metadata": "no called tool has tool metadata",
    "no_verdict": "the judge gave no verdict",
}
"""Why a compliance rate is n/a (``na_reason`` of the ``com`` block)."""


def summarize_compliance(results: list[dict[str, Any]], metadata_known: bool = True) -> dict[str, Any]:
    """TMR, IMR, DMR over eligible records ({} for no records), with the verdict counts they rest on.

    A rate with no verdict behind it is None, and ``na_reason`` says why (``metadata_known`` False:
    the run had no tool metadata at all)."""
    if not results:
        return {}
    eligible = [r["compliance"] for r in results if (r.get("compliance") or {}).get("eligible")]
    n = len(eligible)
    with_meta = sum(int(f.get("with_metadata", 0)) for f in eligible)
    out: dict[str, Any] = {}
    verdicts: dict[str, int] = {}
    reasons: dict[str, str] = {}
    for k in ("tmr", "imr", "dmr"):
        verdicts[k] = sum(int((f.get("verdicts") or {}).get(k, 0)) for f in eligible)
        if n and verdicts[k]:
            out[k] = sum(1 for f in eligible if f.get(k)) / n
            continue
        out[k] = None
        if not n:
            reasons[k] = COMPLIANCE_NA["no_record"]
        elif not metadata_known:
            reasons[k] = COMPLIANCE_NA["no_metadata"]
        elif not with_meta:
            reasons[k] = COMPLIANCE_NA["no_tool_metadata"]
        else:
            reasons[k] = COMPLIANCE_NA["no_verdict"]
    out["eligible"] = n
    out["judged_tools"] = sum(int(f.get("judged_tools", 0)) for f in eligible)
    out["with_metadata"] = with_meta
    out["verdicts"] = verdicts
    if reasons:
        out["na_reason"] = reasons
    return out


def evaluate_records(
    records: Iterable[dict[str, Any]],
    judge: Judge,
    tool_meta: dict[str, dict[str, Any]],
    repeat_k: int = 3,
    corrected: bool = False,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Graded records and ``{"cap": {...}, "com": {...}}`` for a whole run."""
    results = [evaluate_record(r, judge, tool_meta, repeat_k, corrected) for r in records]
    return results, {
        "cap": summarize_capability(results),
        "com": summarize_compliance(results, bool(tool_meta)),
    }


def prefetch_judgments(
    judge: Judge, records: list[dict[str, Any]], tool_meta: dict[str, dict[str, Any]], repeat_k: int = 3
) -> None:
    """Let a judge that can (an LLM judge's ``prefetch``) ask every judgment of both variants at once;
    grading then reads the replies from its cache. Other judges are left alone."""
    prefetch = getattr(judge, "prefetch", None)
    if prefetch is None:
        return
    recorder = AskRecorder()
    for corrected in (False, True):
        evaluate_records(records, recorder, tool_meta, repeat_k, corrected)
    prefetch(recorder.asks)
