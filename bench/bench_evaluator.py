"""Evaluator benchmark: 613-sample scoring with 2,000 bootstrap resamples, and 1,000,000 synthetic samples.

Each measurement is printed next to a baseline measured in the same run: a naive, straightforward
implementation of the official formulas (``Counter`` per sample, every bootstrap resample recomputed from
the name lists). Baselines run on a subset and are reported as rates, so the ratio is like for like.
"""

from __future__ import annotations

import multiprocessing
import random
import sys
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

from finmcp.evaluator.inputs.model import Call, Prediction, Reference, Turn
from finmcp.evaluator.metrics.argnorm import Canonicalizer
from finmcp.evaluator.metrics.finmcp import compute_official
from finmcp.evaluator.metrics.headline import finmcp_specs, point_values, table_columns
from finmcp.evaluator.metrics.stats import Bootstrap
from finmcp.evaluator.metrics.table import Scorer, ScoreTable, official_rows

TOOLS = [f"Tool{i:02d}" for i in range(65)]
KEYS = ("fundCodes", "strategyCode", "keyword", "startDate", "pageSize", "userId")
VALUES: dict[str, list[Any]] = {
    "fundCodes": [["161128"], ["000001", "110017"], ["519723"]],
    "strategyCode": ["ZH032680", "ZH012636", "LONG_WIN"],
    "keyword": ["红利", "债券市场", "科技"],
    "startDate": ["2024-01-01", "2025-03-31", "2025/6/30"],
    "pageSize": [5, 10, 20],
    "userId": ["9b989c9d999f93", "9b989c9e999b92"],
}
SCENARIOS = ("市场分析与研究", "账户与服务管理", "投资规划与配置", "产品信息查询", "平台技术支持")
TYPE_MIX = (("single_tool", 145), ("multi_tool", 249), ("multi_turn", 219))  # FinMCP-Bench Table 1


def call_pool(seed: int = 7, size: int = 4096) -> list[Call]:
    """A deterministic pool of distinct-looking calls the synthetic samples draw from."""
    rng = random.Random(seed)
    pool = []
    for _ in range(size):
        keys = rng.sample(KEYS, rng.randint(1, 3))
        pool.append(Call(rng.choice(TOOLS), {k: rng.choice(VALUES[k]) for k in keys}))
    return pool


POOL = call_pool()


def synthetic_pair(rng: random.Random, sample_id: str, stype: str) -> tuple[Reference, Prediction]:
    """One deterministic reference and a perturbed prediction of it (one perturbation in ~55% of samples)."""
    rand = rng.random
    pool, size = POOL, len(POOL)
    n_turns = 2 + int(rand() * 3) if stype == "multi_turn" else 1
    turns = []
    for _ in range(n_turns):
        if stype == "single_tool":
            groups = [[pool[int(rand() * size)]]]
        else:
            groups = [
                [pool[int(rand() * size)]]
                if rand() < 0.8
                else [pool[int(rand() * size)], pool[int(rand() * size)]]
                for _ in range(1 + int(rand() * 4))
            ]
        turns.append(Turn("q", groups, "a"))
    ref = Reference(sample_id, stype, SCENARIOS[int(rand() * len(SCENARIOS))], turns)
    pred_turns = [[list(g) for g in t.calls] for t in turns]
    r = rand()
    if r < 0.15:  # drop a call
        t = pred_turns[int(rand() * len(pred_turns))]
        if t:
            t[int(rand() * len(t))].pop()
    elif r < 0.30:  # add a call
        pred_turns[-1].append([pool[int(rand() * size)]])
    elif r < 0.40:  # reorder the first two groups of a turn
        t = pred_turns[int(rand() * len(pred_turns))]
        if len(t) > 1:
            t[0], t[1] = t[1], t[0]
    elif r < 0.50:  # change an argument value
        t = pred_turns[int(rand() * len(pred_turns))]
        if t:
            g = t[int(rand() * len(t))]
            c = g[0]
            g[0] = Call(c.tool, {**c.arguments, "pageSize": 1 + int(rand() * 3)})
    elif r < 0.55:  # split the first parallel group
        for t in pred_turns:
            for k, g in enumerate(t):
                if len(g) > 1:
                    t[k : k + 1] = [[c] for c in g]
                    break
    pred_turns = [[g for g in t if g] for t in pred_turns]
    return ref, Prediction(sample_id, pred_turns)


def synthetic_pairs(n: int, seed: int, start: int = 0) -> Iterator[tuple[Reference, Prediction]]:
    """``n`` pairs numbered from ``start``; the type mix follows FinMCP-Bench (145 / 249 / 219 per 613)."""
    rng = random.Random(seed)
    types = [t for t, k in TYPE_MIX for _ in range(k)]
    for i in range(start, start + n):
        yield synthetic_pair(rng, f"s{i}", types[i % len(types)])


BLOCK = 25_000


def score_block(job: tuple[int, int, int]) -> tuple[ScoreTable, float, float]:
    """Generate, then score one block of synthetic samples; returns (table, generate s, score s).

    Block b is seeded by (seed, b), so the data does not depend on how many workers share the blocks.
    """
    seed, block, n = job
    start = block * BLOCK
    t0 = time.perf_counter()
    pairs = list(synthetic_pairs(min(BLOCK, n - start), seed * 1_000_003 + block, start))
    t1 = time.perf_counter()
    scorer = Scorer(Canonicalizer())
    add = scorer.add
    for ref, pred in pairs:
        add(ref, pred)
    table = scorer.finish()
    return table, t1 - t0, time.perf_counter() - t1


def naive_sample(ref: Reference, pred: Prediction) -> tuple[int, int, int, int]:
    """Baseline: the official per-sample formula written plainly with Counter."""
    gold = [c.tool for t in ref.turns for g in t.calls for c in g]
    got = [c.tool for t in pred.turns for g in t for c in g]
    gc, pc = Counter(gold), Counter(got)
    return sum((pc & gc).values()), sum((pc - gc).values()), sum((gc - pc).values()), int(gold == got)


def naive_bootstrap(pairs: list[tuple[Reference, Prediction]], n_boot: int, seed: int) -> None:
    """Baseline bootstrap: every resample recomputes every sample's counts and the metrics."""
    rng = random.Random(seed)
    n = len(pairs)
    for _ in range(n_boot):
        rows = [naive_sample(*pairs[rng.randrange(n)]) for _ in range(n)]
        f1s = []
        for tp, fp, fn, _c in rows:
            p = tp / (tp + fp) if tp + fp else 0
            r = tp / (tp + fn) if tp + fn else 0
            f1s.append(2 * p * r / (p + r) if p + r else 0)
        sum(f1s) / n


def bench_613(n_boot: int = 2000, seed: int = 0) -> dict[str, Any]:
    """Score 613 samples (all metrics) and bootstrap every headline number."""
    pairs = list(synthetic_pairs(613, seed))
    t0 = time.perf_counter()
    scorer = Scorer(Canonicalizer())
    for ref, pred in pairs:
        scorer.add(ref, pred)
    table = scorer.finish()
    compute_official(official_rows(table))
    specs = finmcp_specs(True)
    cols = table_columns(table)
    point_values(cols, specs, len(table))
    t1 = time.perf_counter()
    Bootstrap(table.meta["type"], n_boot, seed).ci(cols, specs)
    t2 = time.perf_counter()
    base_boot = max(20, n_boot // 20)
    t3 = time.perf_counter()
    naive_bootstrap(pairs, base_boot, seed)
    t4 = time.perf_counter()
    naive_per_resample = (t4 - t3) / base_boot
    return {
        "name": "evaluator: 613 samples + 2000 bootstrap",
        "seconds": t2 - t0,
        "score_seconds": t1 - t0,
        "bootstrap_seconds": t2 - t1,
        "metrics_bootstrapped": len(specs),
        "baseline": f"naive recompute-per-resample bootstrap of macro F1 only, {base_boot} resamples measured",
        "baseline_seconds_per_resample": naive_per_resample,
        "ours_seconds_per_resample": (t2 - t1) / n_boot,
        "speedup_per_resample": naive_per_resample / ((t2 - t1) / n_boot),
        "limit_seconds": 2.0,
        "ok": t2 - t0 < 2.0,
    }


def bench_million(
    n: int = 1_000_000, seed: int = 1, workers: int = 2, progress: bool = True
) -> dict[str, Any]:
    """Generate and score ``n`` synthetic samples (all metrics, no bootstrap) on ``workers`` processes,
    then aggregate the official and headline numbers."""
    jobs = [(seed, b, n) for b in range((n + BLOCK - 1) // BLOCK)]
    table = ScoreTable()
    t_start = time.perf_counter()
    done = 0
    pool = multiprocessing.get_context("fork").Pool(workers) if workers > 1 else None
    try:
        results = pool.imap(score_block, jobs) if pool else map(score_block, jobs)
        gen_cpu = score_cpu = 0.0
        for part, gen_s, score_s in results:
            table.extend(part)
            done += len(part)
            gen_cpu += gen_s
            score_cpu += score_s
            if progress:
                elapsed = time.perf_counter() - t_start
                print(
                    f"\r  scored {done:,}/{n:,} samples ({elapsed:.1f} s)",
                    end="",
                    file=sys.stderr,
                    flush=True,
                )
    finally:
        if pool:
            pool.close()
            pool.join()
    if progress:
        print(file=sys.stderr)
    t_scored = time.perf_counter()
    official = compute_official(official_rows(table))
    point_values(table_columns(table), finmcp_specs(True), len(table))
    t_done = time.perf_counter()
    base_blocks = min(len(jobs), 4)  # the same samples as the first blocks of the table
    base_n = min(n, base_blocks * BLOCK)
    batch = [
        pair
        for b in range(base_blocks)
        for pair in synthetic_pairs(min(BLOCK, n - b * BLOCK), seed * 1_000_003 + b, b * BLOCK)
    ]
    t0 = time.perf_counter()
    rows = [naive_sample(r, p) for r, p in batch]
    naive_agg = compute_official(("x", "y", "z", *row) for row in rows)
    naive_time = time.perf_counter() - t0
    ours_first = compute_official(official_rows(table, range(base_n)))["overall"]
    total = t_done - t_start
    single = bench_single_rate(min(n, 20_000), seed)
    return {
        "name": f"evaluator: {n:,} synthetic samples generated and scored, all metrics, no bootstrap",
        "seconds": total,
        "workers": workers,
        "generate_and_score_seconds": t_scored - t_start,
        "generation_cpu_seconds": gen_cpu,
        "scoring_cpu_seconds": score_cpu,
        "aggregate_seconds": t_done - t_scored,
        "samples_per_second": n / total,
        "official_macro_F1": official["overall"]["macro_F1"],
        "single_process_score_us_per_sample": single,
        "baseline": f"naive Counter implementation of the official formulas only (no extended metrics), "
        f"{base_n:,} samples, 1 process",
        "baseline_samples_per_second": base_n / naive_time,
        "baseline_agrees_on_its_samples": naive_agg["overall"] == ours_first,
        "ratio_vs_baseline_rate": (n / total) / (base_n / naive_time),
        "limit_seconds": 60.0,
        "ok": total < 60.0,
    }


def bench_single_rate(n: int, seed: int) -> float:
    """Microseconds per sample of scoring alone (generation excluded), one process."""
    pairs = list(synthetic_pairs(n, seed))
    scorer = Scorer(Canonicalizer())
    t0 = time.perf_counter()
    for ref, pred in pairs:
        scorer.add(ref, pred)
    scorer.finish()
    return (time.perf_counter() - t0) / n * 1e6


def run() -> list[dict[str, Any]]:
    """Run both measurements, print them, and return them."""
    results = [bench_613(), bench_million()]
    for r in results:
        print(
            f"{r['name']}: {r['seconds']:.2f} s (limit {r['limit_seconds']:.0f} s) {'OK' if r['ok'] else 'TOO SLOW'}"
        )
        for k, v in r.items():
            if k not in ("name", "seconds", "ok", "limit_seconds"):
                print(f"    {k}: {v:.4g}" if isinstance(v, float) else f"    {k}: {v}")
    return results


if __name__ == "__main__":
    run()
