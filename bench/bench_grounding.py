"""Grounded-answer checker speed on 10^5 answers (issue 29 item 3).

Workload: the validation corpus (:mod:`evaluator.grounding.corpus`): finmcp-sim's gold replies, the
answers stating values of their outputs and of the world, and their injected copies (~3,800 distinct
answers, each with its sample's recorded outputs as JSON text, as a trace store gives them), cycled to
``ANSWERS`` answers. Rows:

- ``grounding_check``: :meth:`Checker.check` of every answer against its outputs (claims extracted,
  sources indexed, every claim judged; an output is indexed once and kept, as in a run where several
  answers and agents see the same outputs), answers/s;
- ``grounding_check_cold``: the distinct answers once each, with nothing kept (every output indexed,
  every world NAV window built), answers/s;
- baseline, same run, same answers: plain regex tokenising (numbers with units, codes, dates found with
  one ``re.findall`` each, nothing matched against anything); the ratio is checker time / baseline time.

Run directly (``python -m bench.bench_grounding``) or through ``python -m bench``.
"""

from __future__ import annotations

import re
import time
from typing import Any

from finmcp.evaluator.grounding import sources
from finmcp.evaluator.grounding.check import Checker
from finmcp.evaluator.grounding.corpus import fact_items, inject, sim_items
from finmcp.evaluator.progress import Progress

ANSWERS = 100_000
_TOKENS = (
    re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?\s?(?:%|亿元|万元|亿|万|元)?"),
    re.compile(r"(?<!\d)\d{6}(?!\d)|[A-Z]{2}\d{6}"),
    re.compile(r"\d{4}[-/年]\d{1,2}[-/月]\d{1,2}日?"),
)


def _baseline(answer: str) -> int:
    return sum(len(p.findall(answer)) for p in _TOKENS)


def run() -> list[dict[str, Any]]:
    """The two checker rows, each beside the regex-tokenising baseline of the same answers."""
    checker = Checker(0)
    sim = list(sim_items())
    facts = list(fact_items(sim, checker))
    clean = sim + facts
    corpus = clean + [copy for item in clean for copy in inject(item, checker)]
    rows: list[dict[str, Any]] = []

    sources.clear_cache()
    checker = Checker(0)  # a fresh world-facts cache
    started = time.perf_counter()
    claims = sum(len(checker.check(i.answer, i.outputs, i.question).claims) for i in corpus)
    cold = time.perf_counter() - started
    started = time.perf_counter()
    for item in corpus:
        _baseline(item.answer)
    base_cold = time.perf_counter() - started
    rows.append(_row("grounding_check_cold", len(corpus), cold, base_cold, claims=claims))

    work = [corpus[i % len(corpus)] for i in range(ANSWERS)]
    claims = 0
    with Progress("grounding bench answers", len(work)) as bar:
        started = time.perf_counter()
        for n, item in enumerate(work, 1):
            claims += len(checker.check(item.answer, item.outputs, item.question).claims)
            if n % 1000 == 0:
                bar.advance(1000)
        checked = time.perf_counter() - started
    started = time.perf_counter()
    tokens = sum(_baseline(item.answer) for item in work)
    base = time.perf_counter() - started
    rows.append(_row("grounding_check", len(work), checked, base, claims=claims, baseline_tokens=tokens))
    return rows


def _row(name: str, n: int, seconds: float, baseline: float, **extra: Any) -> dict[str, Any]:
    return {
        "bench": name,
        "answers": n,
        "seconds": round(seconds, 2),
        "answers_per_s": round(n / seconds),
        "baseline_regex_answers_per_s": round(n / baseline),
        "ratio_vs_baseline": round(seconds / baseline, 1),
        **extra,
    }


if __name__ == "__main__":
    import json

    for row in run():
        print(json.dumps(row, ensure_ascii=False))
