"""Recovery metrics of a robustness run (a run with a fault schedule), per fault kind and overall.

A *fault* is a call whose answer carries the fault marker and is not itself a repeat (a permanent
fault answering a retry, or an early retry after a rate limit, is the same fault again). For each one,
looking at the later calls of its (sample, trial) with the same tool and arguments:

- ``recovered``: one of them succeeded without a fault (the faulted call was still made and worked);
- ``appropriate_retry``: a transient fault was retried (a rate limit only counts when the first retry
  was sent at least ``retry_after`` seconds after the fault's answer: ``retry_after_honoured``); a
  permanent one was not;
- ``gave_up_cleanly`` (per sample with an unrecovered signalled fault): the reply of every such fault's
  turn says it could not get the data (:data:`GIVE_UP`, English or Chinese) instead of answering as if
  it had (a silent fault gives nothing to give up on: its cost shows in ``recovered`` and ΔEMR);
- ``repeated_acting``: (tool, arguments) pairs of a tool that may act (no ``readOnlyHint: true`` in
  the run's ``tools/list``) sent more than once in a sample;
- ``delta_vs_clean``: TF1 and EMR of this run minus the same agent's clean run (paired bootstrap), on
  the calls that were answered (:func:`answered_only`) and, ``*_sent``, on every call sent.

Every rate has a bootstrap CI over samples (:class:`evaluator.metrics.stats.Bootstrap`). Kinds that
look like success to a client (``empty``, ``wrong_values``) are *silent*: nothing tells an agent to retry.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from finmcp.evaluator.inputs.fault_trace import FaultTrace, TracedCall
from finmcp.evaluator.metrics.stats import Bootstrap, MetricSpec

KINDS = ("rpc_error", "is_error", "timeout", "rate_limit", "truncated", "empty", "wrong_values")
SILENT_KINDS = ("empty", "wrong_values")
SIGNALLED_KINDS = tuple(k for k in KINDS if k not in SILENT_KINDS)
GIVE_UP = re.compile(
    r"could not|couldn't|cannot|can't|unable to|failed|unavailable|try again later|will not guess"
    r"|无法|失败|稍后再试|暂时不可用|未能",
    re.IGNORECASE,
)
"""The deterministic rule: a reply gives up when it says it could not get the data."""
RATES = (
    ("recovered", "recovered", "faults"),
    ("appropriate_retry", "appropriate", "faults"),
    ("transient_retried", "transient_retried", "transient"),
    ("permanent_not_retried", "permanent_kept", "permanent"),
    ("retry_after_honoured", "honoured", "rl_retried"),
)
"""(name, numerator column, denominator column) of each per-kind rate."""


def gives_up(answer: str) -> bool:
    """True when the reply says it could not get the data (:data:`GIVE_UP`)."""
    return bool(GIVE_UP.search(answer or ""))


def _ratio(num: Any, den: Any) -> Any:
    def fn(sums: Mapping[Any, float], n: int) -> float | None:
        return sums[num] / sums[den] if sums[den] else None

    return fn


def _events(calls: list[TracedCall]) -> list[dict[str, Any]]:
    """Every fault of one (sample, trial) with what followed it."""
    out = []
    for i, call in enumerate(calls):
        marker = call.marker
        if marker is None or marker.get("repeat"):
            continue
        later = [c for c in calls[i + 1 :] if c.tool == call.tool and c.args == call.args]
        kind = str(marker.get("kind"))
        transient = bool(marker.get("transient"))
        retried = bool(later)
        honoured = None
        if kind == "rate_limit" and retried and later[0].t_req_ns is not None and call.t_resp_ns is not None:
            wait_ns = float(marker.get("retry_after") or 0) * 1e9
            honoured = later[0].t_req_ns - call.t_resp_ns >= wait_ns
        appropriate = (retried and honoured is not False) if transient else not retried
        out.append(
            {
                "kind": kind,
                "turn": call.turn,
                "transient": transient,
                "retried": retried,
                "honoured": honoured,
                "appropriate": appropriate,
                "recovered": any(c.ok and c.marker is None for c in later),
            }
        )
    return out


def recovery_metrics(
    trace: FaultTrace,
    answers: Mapping[tuple[str, int], Sequence[str]],
    bootstrap: int = 1000,
    seed: int = 0,
    delta: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The recovery block of a run (``report.json``'s ``recovery``); ``answers``: each (sample, trial)'s
    replies per turn (the run state); ``delta``: :func:`delta_vs_clean`'s result, when a clean run is known."""
    by_unit: dict[tuple[str, int], list[TracedCall]] = defaultdict(list)
    for call in trace.calls:
        by_unit[(call.sample, call.trial)].append(call)
    units = sorted(set(by_unit) | set(answers))
    columns: dict[str, list[float]] = defaultdict(lambda: [0.0] * len(units))
    counts: Counter[str] = Counter()
    for u, unit in enumerate(units):
        calls = by_unit.get(unit, [])
        events = _events(calls)
        replies = list(answers.get(unit, []))
        unrecovered_turns = {
            e["turn"] for e in events if not e["recovered"] and e["kind"] not in SILENT_KINDS
        }
        if unrecovered_turns:
            columns["unrecovered"][u] = 1.0
            said = all(gives_up(replies[t]) if t < len(replies) else False for t in unrecovered_turns)
            columns["gave_up"][u] = 1.0 if said else 0.0
        sent = Counter((c.tool, c.args) for c in calls if not trace.read_only.get(c.tool, False))
        columns["repeated_acting"][u] = float(sum(1 for n in sent.values() if n > 1))
        for e in events:
            for kind in (e["kind"], "all", "signalled" if e["kind"] not in SILENT_KINDS else "silent"):
                counts[kind] += 1
                col = columns
                col[f"{kind}.faults"][u] += 1
                col[f"{kind}.recovered"][u] += e["recovered"]
                col[f"{kind}.appropriate"][u] += e["appropriate"]
                col[f"{kind}.transient"][u] += e["transient"]
                col[f"{kind}.transient_retried"][u] += e["transient"] and e["retried"]
                col[f"{kind}.permanent"][u] += not e["transient"]
                col[f"{kind}.permanent_kept"][u] += (not e["transient"]) and not e["retried"]
                col[f"{kind}.rl_retried"][u] += e["honoured"] is not None
                col[f"{kind}.honoured"][u] += bool(e["honoured"])
                transient_kind = f"{kind}.transient_recovered"
                col[transient_kind][u] += e["transient"] and e["recovered"]
    groups = [k for k in (*KINDS, "signalled", "silent", "all") if counts[k]]
    specs = [
        MetricSpec(f"{g}.{name}", (f"{g}.{num}", f"{g}.{den}"), _ratio(f"{g}.{num}", f"{g}.{den}"))
        for g in groups
        for name, num, den in RATES
    ]
    specs += [
        MetricSpec(
            f"{g}.transient_recovered",
            (f"{g}.transient_recovered", f"{g}.transient"),
            _ratio(f"{g}.transient_recovered", f"{g}.transient"),
        )
        for g in groups
    ]
    specs.append(MetricSpec("gave_up_cleanly", ("gave_up", "unrecovered"), _ratio("gave_up", "unrecovered")))
    specs.append(
        MetricSpec(
            "repeated_acting_per_sample",
            ("repeated_acting",),
            lambda s, n: s["repeated_acting"] / n if n else None,
        )
    )
    full = {c: float(sum(v)) for c, v in columns.items()}
    for spec in specs:
        for c in spec.columns:
            columns.setdefault(c, [0.0] * len(units))
            full.setdefault(c, 0.0)
    boot = Bootstrap(["all"] * len(units), bootstrap, seed)
    ci = boot.ci(dict(columns), specs)

    def estimate(name: str) -> dict[str, Any]:
        spec = next(s for s in specs if s.name == name)
        return {"value": spec.fn(full, len(units)), **ci[name]}

    by_kind = {}
    for g in groups:
        block: dict[str, Any] = {
            "faults": counts[g],
            "transient": int(full[f"{g}.transient"]),
            "permanent": int(full[f"{g}.permanent"]),
        }
        for name, _, _ in RATES:
            block[name] = estimate(f"{g}.{name}")
        block["transient_recovered"] = estimate(f"{g}.transient_recovered")
        by_kind[g] = block
    return {
        "run": trace.run_id,
        "samples": len(units),
        "faults": counts["all"],
        "by_kind": by_kind,
        "gave_up_cleanly": {"samples": int(full["unrecovered"]), **estimate("gave_up_cleanly")},
        "repeated_acting": {"pairs": int(full["repeated_acting"]), **estimate("repeated_acting_per_sample")},
        "delta_vs_clean": dict(delta) if delta else None,
        "bootstrap": bootstrap,
        "seed": seed,
    }


def answered_only(preds: Any, trace: FaultTrace) -> Any:
    """A copy of ``preds`` without the calls whose answer was a fault (matched by sample, trial, turn,
    tool and arguments; empty groups dropped): what the agent actually got answered."""
    import copy

    faulted = Counter(
        (c.sample, c.trial, c.turn, c.tool, c.args) for c in trace.calls if c.marker is not None
    )
    out = copy.copy(preds)
    out.by_sample = {}
    for sample, trials in preds.by_sample.items():
        kept = []
        for pred in trials:
            pred = copy.copy(pred)
            turns = []
            for turn, groups in enumerate(pred.turns):
                new_groups = []
                for group in groups:
                    new_group = []
                    for call in group:
                        key = (
                            sample,
                            pred.trial,
                            turn,
                            call.tool,
                            json.dumps(call.arguments, sort_keys=True, ensure_ascii=False),
                        )
                        if faulted[key] > 0:
                            faulted[key] -= 1
                            continue
                        new_group.append(call)
                    if new_group:
                        new_groups.append(new_group)
                turns.append(new_groups)
            pred.turns = turns
            kept.append(pred)
        out.by_sample[sample] = kept
    return out


def delta_vs_clean(
    refs: Any, clean: Any, faulted: Any, opts: Any, trace: FaultTrace | None = None
) -> dict[str, Any]:
    """TF1 and EMR of ``faulted`` minus ``clean`` (prediction sets of the same agent) on the samples both
    scored, paired bootstrap: ``{"clean_run", "paired_samples", "TF1", "EMR", "TF1_sent", "EMR_sent"}``,
    each ``{a, b, diff, lo, hi, p_value, n_boot}``. ``TF1``/``EMR`` score the calls that were answered
    (with ``trace``, a call whose answer was a fault is left out: a recovered call counts once, an
    unrecovered one is missing); ``*_sent`` score every call sent, as the official script would."""
    answered = _paired_delta(
        refs, clean, answered_only(faulted, trace) if trace is not None else faulted, opts
    )
    sent = _paired_delta(refs, clean, faulted, opts)
    return {
        "clean_run": clean.run_id or clean.source,
        "paired_samples": answered.pop("paired_samples"),
        **answered,
        **{f"{name}_sent": value for name, value in sent.items() if name != "paired_samples"},
    }


def _paired_delta(refs: Any, clean: Any, faulted: Any, opts: Any) -> dict[str, Any]:
    from finmcp.evaluator.inputs.pairing import pair_up
    from finmcp.evaluator.metrics.argnorm import Canonicalizer
    from finmcp.evaluator.metrics.headline import finmcp_specs, table_columns
    from finmcp.evaluator.metrics.table import score_pairs

    canon = opts.canon or Canonicalizer()
    ta = score_pairs(pair_up(refs, clean, opts.missing).pairs, canon)
    tb = score_pairs(pair_up(refs, faulted, opts.missing).pairs, canon)
    pos_b = {sid: i for i, sid in enumerate(tb.meta["id"])}
    pairs = [(i, pos_b[sid]) for i, sid in enumerate(ta.meta["id"]) if sid in pos_b]
    cols_a, cols_b = table_columns(ta), table_columns(tb)
    sub_a = {c: [col[i] for i, _ in pairs] for c, col in cols_a.items()}
    sub_b = {c: [col[j] for _, j in pairs] for c, col in cols_b.items()}
    wanted = {"official.macro_F1": "TF1", "paper.EMR": "EMR"}
    specs = [m for m in finmcp_specs(ta.args_known and tb.args_known) if m.name in wanted]
    strata = [ta.meta["type"][i] for i, _ in pairs]
    paired = Bootstrap(strata, opts.bootstrap, opts.seed).paired(sub_a, sub_b, specs)
    return {"paired_samples": len(pairs), **{wanted[name]: value for name, value in paired.items()}}
