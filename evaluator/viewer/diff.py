"""A sample's calls against its reference, with the evaluator's own metrics.

Nothing here scores anew: per-sample values are :func:`evaluator.metrics.table.score_pairs`'s row
(the numbers ``finmcp-eval score`` reports), and the diff marks come from the same pieces the
extended metrics use - :func:`evaluator.metrics.matching.match_calls` over
:meth:`evaluator.metrics.argnorm.Canonicalizer.pairs` (which predicted call answers which reference
call), the precedence pairs of the dependency F1 (order errors) and
:func:`evaluator.metrics.extended.first_error_position`. Marks:

- reference call: ``ok``, ``wrong_args`` (matched, canonical arguments differ), ``missing`` (no
  predicted call matched it), ``order`` (matched, but on the other side of another matched call);
- predicted call: ``ok``, ``wrong_args``, ``extra`` (matched no reference call), ``order``.

Predictions are grouped from trace rows exactly as :mod:`evaluator.inputs.trace_db` groups them
(by turn, then ``call_group``; a call without a group is a group of its own), keeping each call's
trace id so the page can put a mark on its bar; a test checks both agree on a real run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from finmcp.evaluator.errors import EvalInputError
from finmcp.evaluator.inputs.model import Call, Prediction, Reference
from finmcp.evaluator.inputs.records import parse_arguments
from finmcp.evaluator.metrics.argnorm import Canonicalizer, inventory_schema_lookup
from finmcp.evaluator.metrics.extended import first_error_position, flatten
from finmcp.evaluator.metrics.matching import match_calls
from finmcp.evaluator.metrics.table import score_pairs

METRIC_KEYS = (
    "p",
    "r",
    "f1",
    "consist",
    "emr",
    "emr_seq",
    "n_ref",
    "n_pred",
    "matched",
    "exact",
    "arg_f1",
    "dep_f1",
    "dup_excess",
    "first_error",
    "malformed",
)
"""The per-sample values the page shows (names as in a report's ``samples`` rows)."""


@dataclass
class Benchmark:
    """References by sample id and the argument canonicaliser ``score`` would use for them."""

    name: str
    refs: dict[str, Reference]
    canon: Canonicalizer = field(default_factory=Canonicalizer)


def load_benchmark(source: str) -> Benchmark:
    """``--bench``: a shipped benchmark by name or a references file (as ``finmcp-eval score`` reads it)."""
    from finmcp.evaluator.benchmarks import open_references

    refs = open_references(source)
    names = {r.inventory for r in refs.samples if r.inventory}
    canon = Canonicalizer()
    if len(names) == 1:
        try:
            from finmcp.tool_specs.inventory import load_inventory

            canon = Canonicalizer(inventory_schema_lookup(load_inventory(names.pop())))
        except Exception:  # an unknown inventory name: plain canonical forms, as score does
            canon = Canonicalizer()
    return Benchmark(source, refs.by_id(), canon)


@dataclass
class TracedPrediction:
    """A :class:`Prediction` of one sample and trial, with the trace id of every call (same nesting)."""

    prediction: Prediction
    ids: list[list[list[int]]]

    def flat_ids(self) -> list[int]:
        """Trace ids in the order of :func:`evaluator.metrics.extended.flatten`."""
        return [i for groups in self.ids for g in groups for i in g]


def traced_predictions(
    rows: Iterable[Sequence[Any]], turn_base: int = 0, ids: Iterable[int] | None = None
) -> dict[tuple[str, int], TracedPrediction]:
    """Predictions per (sample, trial) from ``(sample_id, trial, turn, call_group, seq, tool, arguments,
    result, rpc_error, status)`` rows in trace order; ``ids`` gives each row's trace id."""
    id_iter = iter(ids) if ids is not None else None
    grouped: dict[tuple[str, int], dict[int, dict[tuple[int, int], list[tuple[int, Call]]]]] = {}
    for n, (sample_id, trial, turn, group, seq, tool, arguments, _result, _error, status) in enumerate(rows):
        call_id = next(id_iter) if id_iter is not None else n
        if sample_id is None or sample_id == "":
            continue
        turn_index = (turn if turn is not None else turn_base) - turn_base
        if turn_index < 0:
            raise EvalInputError(f"sample {sample_id!r}: turn {turn} is below the turn base {turn_base}")
        key = (0, group) if group is not None else (1, seq or 0)
        args, malformed = parse_arguments(arguments)
        call = Call(str(tool or ""), args, status=status, malformed=malformed)
        turns = grouped.setdefault((str(sample_id), int(trial or 0)), {})
        turns.setdefault(turn_index, {}).setdefault(key, []).append((call_id, call))
    out = {}
    for (sample_id, trial), turns in grouped.items():
        n_turns = max(turns) + 1
        groups = [[turns[t][k] for k in sorted(turns[t])] if t in turns else [] for t in range(n_turns)]
        prediction = Prediction(sample_id, [[[c for _, c in g] for g in gs] for gs in groups], trial=trial)
        out[(sample_id, trial)] = TracedPrediction(
            prediction, [[[i for i, _ in g] for g in gs] for gs in groups]
        )
    return out


def sample_metrics(ref: Reference, pred: Prediction | None, canon: Canonicalizer) -> dict[str, Any]:
    """The per-sample row ``finmcp-eval score`` computes for this pair (a subset: :data:`METRIC_KEYS`)."""
    row = score_pairs([(ref, pred)], canon).row(0)
    return {k: row[k] for k in METRIC_KEYS}


def sample_diff(ref: Reference, traced: TracedPrediction | None, canon: Canonicalizer) -> dict[str, Any]:
    """Reference groups with marks, marks per predicted trace id, the first wrong reference group."""
    gold_turns = [t.calls for t in ref.turns]
    pred_turns = traced.prediction.turns if traced is not None else []
    r_groups_all, r_calls, r_names = flatten(gold_turns)
    p_groups_all, p_calls, p_names = flatten(pred_turns)
    r_group = [k for k, g in enumerate(r_groups_all) for _ in g]
    p_group = [k for k, g in enumerate(p_groups_all) for _ in g]
    if ref.args_known:
        r_kv = [canon.pairs(c.tool, c.arguments) for c in r_calls]
        p_kv = [canon.pairs(c.tool, c.arguments) for c in p_calls]
    else:
        r_kv = [frozenset() for _ in r_calls]
        p_kv = [frozenset() for _ in p_calls]

    def similarity(i: int, j: int) -> float:
        a, b = r_kv[i], p_kv[j]
        return 1.0 if not a and not b else 2 * len(a & b) / (len(a) + len(b))

    pairs = match_calls(r_names, p_names, similarity, r_group, p_group)
    ref_marks: list[list[str]] = [["missing"] for _ in r_calls]
    pred_marks: list[list[str]] = [["extra"] for _ in p_calls]
    ref_match: list[int | None] = [None] * len(r_calls)
    arg_diff: list[list[str]] = [[] for _ in r_calls]
    for i, j in pairs:
        same = r_kv[i] == p_kv[j]
        ref_marks[i] = ["ok"] if same else ["wrong_args"]
        pred_marks[j] = list(ref_marks[i])
        ref_match[i] = j
        if not same:
            arg_diff[i] = sorted({str(k) for k, _ in r_kv[i] ^ p_kv[j]})
    for x, (i, j) in enumerate(pairs):  # precedence pairs the prediction reverses
        for i2, j2 in pairs[x + 1 :]:
            crossed = r_group[i] != r_group[i2] and p_group[j] != p_group[j2]
            if crossed and (r_group[i] < r_group[i2]) != (p_group[j] < p_group[j2]):
                for marks, k in ((ref_marks, i), (ref_marks, i2), (pred_marks, j), (pred_marks, j2)):
                    if "order" not in marks[k]:
                        marks[k].append("order")
    flat_ids = traced.flat_ids() if traced is not None else []
    turns_out = []
    k = 0
    for t, turn in enumerate(ref.turns):
        groups_out = []
        for group in turn.calls:
            calls_out = []
            for call in group:
                match = ref_match[k]
                calls_out.append(
                    {
                        "tool": call.tool,
                        "arguments": call.arguments,
                        "marks": ref_marks[k],
                        "matched_call": flat_ids[match] if match is not None else None,
                        "arg_diff": arg_diff[k],
                    }
                )
                k += 1
            groups_out.append(calls_out)
        turns_out.append({"turn": t, "user": turn.user, "groups": groups_out})
    return {
        "turns": turns_out,
        "predicted": {str(flat_ids[j]): pred_marks[j] for j in range(len(p_calls))},
        "first_error_group": first_error_position(pred_turns, gold_turns),
        "counts": {
            "ok": sum(m[0] == "ok" for m in ref_marks),
            "wrong_args": sum(m[0] == "wrong_args" for m in ref_marks),
            "missing": sum(m[0] == "missing" for m in ref_marks),
            "extra": sum(m[0] == "extra" for m in pred_marks),
            "order": sum("order" in m for m in pred_marks),
        },
    }


def reference_view(ref: Reference) -> dict[str, Any]:
    """What the page shows of a reference besides its calls."""
    return {
        "id": ref.id,
        "type": ref.type,
        "scenario": ref.scenario,
        "difficulty": ref.difficulty,
        "question": ref.question or (ref.turns[0].user if ref.turns else ""),
        "args_known": ref.args_known,
    }
