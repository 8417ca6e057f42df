"""The model door's share of a report: tokens per sample, cost from ``--prices``, model vs tool time.

``finmcp-eval score --db TRACE --run RUN`` adds a ``model_usage`` block when the run has model
exchanges (``finmcp-proxy --llm-upstream``, docs/proxy.md "Model door"):

- per sample: exchanges, ``input_tokens``, ``output_tokens``, ``cached_tokens`` (as the upstream
  reported them; ``unreported`` counts exchanges whose upstream reported none, never guessed),
  ``cost_usd`` (with ``--prices``), ``model_ms`` (the model's answers, end to end) and ``tool_ms``
  (the sample's tool calls upstream), ``model_share`` of the two;
- totals, and TF1 (the official macro F1) per dollar and per thousand tokens.

A price file is JSON: ``{"MODEL": {"input": $, "output": $, "cached": $}}`` in US dollars per
million tokens (``cached`` optional: input price when absent); cached tokens are priced at
``cached`` and taken out of the input count when ``"cached_in_input": true`` (OpenAI's usage counts
cached tokens inside ``prompt_tokens``; Anthropic's does not, so it defaults to false). A model the
file does not name has no cost (and a warning names it).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from finmcp.evaluator.errors import EvalInputError
from finmcp.evaluator.reports.model import Report
from finmcp.recordings.model_exchanges import SampleUsage, tool_ms_by_sample, usage_by_sample
from finmcp.recordings.trace_store import open_trace_store


@dataclass(frozen=True, slots=True)
class Price:
    """US dollars per million tokens."""

    input: float
    output: float
    cached: float
    cached_in_input: bool = False

    def cost(self, tin: int, tout: int, cached: int) -> float:
        fresh = max(tin - cached, 0) if self.cached_in_input else tin
        return (fresh * self.input + tout * self.output + cached * self.cached) / 1e6


def load_prices(path: str | Path) -> dict[str, Price]:
    """Read a ``--prices`` file (see the module docstring); :class:`EvalInputError` naming what is wrong."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise EvalInputError(f"--prices {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise EvalInputError(f"--prices {path}: not JSON ({exc})") from None
    if not isinstance(data, dict) or not data:
        raise EvalInputError(f'--prices {path}: expected {{"MODEL": {{"input": $, "output": $}}, ...}}')
    prices = {}
    for model, entry in data.items():
        if not isinstance(entry, dict):
            raise EvalInputError(f"--prices {path}: {model!r}: expected an object with input/output prices")
        values = {}
        for key in ("input", "output", "cached"):
            value = entry.get(key, entry.get("input") if key == "cached" else None)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or value < 0
            ):
                raise EvalInputError(
                    f"--prices {path}: {model!r}.{key}: expected a price >= 0 in $ per million tokens"
                )
            values[key] = float(value)
        prices[model] = Price(**values, cached_in_input=bool(entry.get("cached_in_input", False)))
    return prices


def _cost(usage: SampleUsage, prices: dict[str, Price], unpriced: set[str]) -> float | None:
    total = 0.0
    for model, (tin, tout, cached) in usage.by_model.items():
        price = prices.get(model)
        if price is None:
            unpriced.add(model)
            return None
        total += price.cost(tin, tout, cached)
    return total


def model_usage_block(
    db: str | Path, run_id: str, tf1: float | None, prices: dict[str, Price] | None
) -> tuple[dict[str, Any] | None, list[str]]:
    """The ``model_usage`` block of a run (None when it has no model exchanges) and its warnings."""
    with open_trace_store(db, readonly=True) as store:
        if store.engine != "sqlite":
            return None, [
                "model usage: the model door logs to the proxy's SQLite store only; not read from PostgreSQL"
            ]
        usage = usage_by_sample(store, run_id)
        if not usage:
            return None, []
        tools = tool_ms_by_sample(store, run_id)
    unpriced: set[str] = set()
    samples = {}
    totals = {"exchanges": 0, "input_tokens": 0, "output_tokens": 0, "cached_tokens": 0, "unreported": 0}
    cost_total: float | None = 0.0 if prices is not None else None
    model_ms = tool_ms = 0.0
    for sample in sorted(usage):
        u = usage[sample]
        cost = _cost(u, prices, unpriced) if prices is not None else None
        if cost is None:
            cost_total = None
        elif cost_total is not None:
            cost_total += cost
        tms = tools.get(sample, 0.0)
        samples[sample] = {
            "exchanges": u.exchanges,
            "input_tokens": u.input_tokens,
            "output_tokens": u.output_tokens,
            "cached_tokens": u.cached_tokens,
            "unreported": u.unreported,
            "errors": u.errors,
            "cost_usd": cost,
            "model_ms": round(u.model_ms, 3),
            "tool_ms": round(tms, 3),
            "model_share": round(u.model_ms / (u.model_ms + tms), 4) if u.model_ms + tms > 0 else None,
        }
        for key in totals:
            totals[key] += getattr(u, key)
        model_ms += u.model_ms
        tool_ms += tms
    tokens = totals["input_tokens"] + totals["output_tokens"]
    block: dict[str, Any] = {
        "totals": {
            **totals,
            "cost_usd": cost_total,
            "model_ms": round(model_ms, 3),
            "tool_ms": round(tool_ms, 3),
            "model_share": round(model_ms / (model_ms + tool_ms), 4) if model_ms + tool_ms > 0 else None,
        },
        "TF1": tf1,
        "TF1_per_dollar": tf1 / cost_total if tf1 is not None and cost_total else None,
        "TF1_per_1k_tokens": tf1 / (tokens / 1000) if tf1 is not None and tokens else None,
        "prices": None
        if prices is None
        else {m: [p.input, p.output, p.cached] for m, p in sorted(prices.items())},
        "samples": samples,
    }
    warnings = []
    if unpriced:
        warnings.append(
            f"model usage: no price for model(s) {', '.join(sorted(unpriced))} in --prices: no cost"
        )
    if totals["unreported"]:
        warnings.append(
            f"model usage: {totals['unreported']} model exchange(s) had no usage from the upstream; their tokens"
            " are not counted"
        )
    return block, warnings


def attach_model_usage(
    report: Report, db: str | Path, run_id: str | None, prices: dict[str, Price] | None = None
) -> Report:
    """``report`` with its run's ``model_usage`` block and warnings, when the run has model exchanges."""
    if run_id is None:
        return report
    block, warnings = model_usage_block(db, run_id, report.official_numbers.overall.macro_F1, prices)
    if block is None:
        return report
    data = report.to_dict()
    data["model_usage"] = block
    data["warnings"] = [*report.warnings, *warnings]
    return Report.from_dict(data)


def markdown_lines(block: dict[str, Any] | None) -> list[str]:
    """The report's "Model usage" section (nothing without a block)."""
    if not block:
        return []
    t = block["totals"]

    def money(value: Any) -> str:
        return "n/a" if value is None else f"${value:.6f}"

    def num(value: Any, digits: int = 4) -> str:
        return "n/a" if value is None else f"{value:.{digits}g}"

    lines = [
        "## Model usage (model door)",
        "",
        f"- exchanges: {t['exchanges']}; tokens in/out/cached: {t['input_tokens']}/{t['output_tokens']}/"
        f"{t['cached_tokens']}"
        + (f" ({t['unreported']} exchange(s) without usage)" if t["unreported"] else ""),
        f"- cost: {money(t['cost_usd'])}; TF1 per dollar: {num(block['TF1_per_dollar'])};"
        f" TF1 per 1k tokens: {num(block['TF1_per_1k_tokens'])}",
        f"- time: model {t['model_ms'] / 1000:.3f} s, tools {t['tool_ms'] / 1000:.3f} s"
        + (f" (model share {t['model_share']:.1%})" if t["model_share"] is not None else ""),
        "",
        "| sample | exchanges | input | output | cached | cost | model s | tool s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for sample, s in list(block["samples"].items())[:200]:
        lines.append(
            f"| {sample.replace('|', '&#124;')} | {s['exchanges']} | {s['input_tokens']} | {s['output_tokens']} |"
            f" {s['cached_tokens']} | {money(s['cost_usd'])} | {s['model_ms'] / 1000:.3f} | {s['tool_ms'] / 1000:.3f} |"
        )
    return [*lines, ""]
