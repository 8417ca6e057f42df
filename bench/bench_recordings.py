"""Benchmark of the recordings data layer: replay lookups and trace writes.

``run()`` returns one dict per measurement with p50/p99 in microseconds, the same figures for a
baseline measured in the same run on the same machine, and their ratio:

- ``recordings.get_response`` (canonicalise the arguments, hash, SELECT, parse JSON) over 10,000
  stored responses, random seeded lookups with shuffled key order; baseline: a raw ``sqlite3``
  SELECT of the same row by a precomputed key on a second connection (no canonicalisation, no
  parsing); also against that SELECT plus ``json.loads`` of the two JSON columns (the least work
  that yields a usable result), and a plain dict lookup of precomputed keys as a floor.
- ``recordings.get_response (miss)``: lookups of arguments that are not recorded.
- ``recordings.begin_call+finish_call``: the proxy's per-call trace writes (two committed
  statements); baseline: a raw autocommit INSERT + UPDATE of the same shape with the same
  ``synchronous=NORMAL``. Both p99s include SQLite's automatic WAL checkpoints (every ~1000 pages),
  whose fsync costs milliseconds on a slow disk.

Run directly (``python -m bench.bench_recordings``) or through ``python -m bench``.
"""

from __future__ import annotations

import gc
import json
import random
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from finmcp.recordings import RecordingStore, SqliteTraceStore

SEED = 20260509
STORED = 10_000
LOOKUPS = 20_000
TRACE_CALLS = 3_000
TOOLS = [f"Tool{i:02d}" for i in range(20)]


def _percentiles(samples_ns: list[int]) -> tuple[float, float]:
    ordered = sorted(samples_ns)
    p50 = statistics.median(ordered)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return p50 / 1000, p99 / 1000


def _time_each(items: list[Any], fn: Callable[[Any], Any]) -> list[int]:
    """Per-item wall time in ns, with the cyclic GC paused (as ``timeit`` does), so that collections
    of the benchmark's own large fixtures do not land on whichever call happens to trigger them."""
    clock = time.perf_counter_ns
    out = []
    gc.collect()
    gc.disable()
    try:
        for item in items:
            start = clock()
            fn(item)
            out.append(clock() - start)
    finally:
        gc.enable()
    return out


def _arguments(rng: random.Random, i: int) -> dict[str, Any]:
    return {
        "fundCodes": [f"{rng.randint(0, 999_999):06d}" for _ in range(rng.randint(1, 5))],
        "pageSize": rng.choice([5, 10, 20]),
        "keyword": rng.choice(["红利", "债券", "黄金", "纳斯达克", "稳稳的幸福"]) + str(i),
        "options": {"isDesc": rng.random() < 0.5, "dimensionType": rng.choice(["oneYear", "threeYear"])},
    }


def _result(rng: random.Random, i: int) -> dict[str, Any]:
    rows = [
        {
            "fundCode": f"{rng.randint(0, 999_999):06d}",
            "fundName": f"示例基金{i}-{k}",
            "nav": rng.uniform(0.5, 3),
        }
        for k in range(rng.randint(3, 12))
    ]
    payload = {"rows": rows, "total": len(rows), "hasMoreRows": False}
    text = json.dumps(payload, ensure_ascii=False, indent=2)
    return {"content": [{"type": "text", "text": text}], "structuredContent": payload, "isError": False}


def _shuffled(args: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    items = list(args.items())
    rng.shuffle(items)
    return {k: _shuffled(v, rng) if isinstance(v, dict) else v for k, v in items}


def _row(name: str, n: int, mine: list[int], baseline_name: str, baseline: list[int]) -> dict[str, Any]:
    p50, p99 = _percentiles(mine)
    b50, b99 = _percentiles(baseline)
    return {
        "bench": name,
        "n": n,
        "p50_us": round(p50, 2),
        "p99_us": round(p99, 2),
        "baseline": baseline_name,
        "baseline_p50_us": round(b50, 2),
        "baseline_p99_us": round(b99, 2),
        "ratio_p50": round(p50 / b50, 2) if b50 else None,
        "ratio_p99": round(p99 / b99, 2) if b99 else None,
    }


def _lookups(store: RecordingStore, path: Path, rng: random.Random) -> list[dict[str, Any]]:
    stored: list[tuple[str, dict[str, Any]]] = []
    with store.transaction():
        for i in range(STORED):
            tool, args = rng.choice(TOOLS), _arguments(rng, i)
            store.put_response(
                "bench", tool, args, _result(rng, i), "simulated", latency_ms=rng.uniform(5, 80)
            )
            stored.append((tool, args))
    picks = [stored[rng.randrange(STORED)] for _ in range(LOOKUPS)]
    queries = [(tool, _shuffled(args, rng)) for tool, args in picks]
    keys = [(tool, store.canonical(tool, args).key) for tool, args in picks]
    for tool, args in queries[:500]:  # warm-up
        store.get_response("bench", tool, args)

    mine = _time_each(queries, lambda q: store.get_response("bench", q[0], q[1]))
    assert all(store.get_response("bench", t, a) is not None for t, a in queries[:100])

    raw = sqlite3.connect(path, check_same_thread=False)
    sql = (
        "SELECT content, structured_content, is_error, provenance, latency_ms, created"
        " FROM responses WHERE inventory = ? AND tool = ? AND args_key = ?"
    )
    raw_times = _time_each(keys, lambda k: raw.execute(sql, ("bench", k[0], k[1])).fetchone())

    def select_and_parse(key: tuple[str, str]) -> tuple[Any, Any]:
        row = raw.execute(sql, ("bench", key[0], key[1])).fetchone()
        return json.loads(row[0]), json.loads(row[1])

    parse_times = _time_each(keys, select_and_parse)
    table = {k: raw.execute(sql, ("bench", k[0], k[1])).fetchone() for k in set(keys)}
    dict_times = _time_each(keys, table.__getitem__)
    raw.close()

    misses = [(tool, {**args, "pageSize": 999}) for tool, args in queries[:5000]]
    miss_times = _time_each(misses, lambda q: store.get_response("bench", q[0], q[1]))
    miss_base = _time_each(
        [(t, "0" * 32) for t, _ in misses], lambda k: store.get_response_by_key("bench", k[0], k[1])
    )
    return [
        _row("recordings.get_response", LOOKUPS, mine, "raw sqlite3 SELECT by precomputed key", raw_times),
        _row("recordings.get_response", LOOKUPS, mine, "raw SELECT + json.loads of the result", parse_times),
        _row("recordings.get_response", LOOKUPS, mine, "dict lookup of precomputed key", dict_times),
        _row(
            "recordings.get_response (miss)", len(misses), miss_times, "get_response_by_key (miss)", miss_base
        ),
    ]


def _trace_writes(store: SqliteTraceStore, path: Path, rng: random.Random) -> dict[str, Any]:
    result = _result(rng, 0)

    def one_call(i: int) -> None:
        call_id = store.begin_call(
            tool="Tool00", arguments={"i": i}, run_id="bench", sample_id=str(i % 50), turn=0, jsonrpc_id=i
        )
        store.finish_call(call_id, result=result)

    mine = _time_each(list(range(TRACE_CALLS)), one_call)

    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute("PRAGMA synchronous=NORMAL")  # same durability as the store
    text = json.dumps(result, ensure_ascii=False)

    def raw_call(i: int) -> None:
        cursor = raw.execute(
            "INSERT INTO calls (run_id, sample_id, turn, jsonrpc_id, seq, tool, arguments, status, t_req_ns,"
            " wall_time) VALUES ('raw', ?, 0, ?, ?, 'Tool00', ?, 'pending', ?, '2026-01-01T00:00:00Z')",
            (str(i % 50), str(i), i, json.dumps({"i": i}), time.time_ns()),
        )
        raw.execute(
            "UPDATE calls SET result = ?, status = 'ok', t_resp_ns = ? WHERE id = ?",
            (text, time.time_ns(), cursor.lastrowid),
        )

    baseline = _time_each(list(range(TRACE_CALLS)), raw_call)
    raw.close()
    return _row(
        "recordings.begin_call+finish_call", TRACE_CALLS, mine, "raw autocommit INSERT+UPDATE", baseline
    )


def run() -> list[dict[str, Any]]:
    """Measure lookups and trace writes; print a table; return one dict per measurement."""
    rng = random.Random(SEED)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.sqlite"
        with RecordingStore.open(path) as store:
            rows = _lookups(store, path, rng)
            rows.append(_trace_writes(SqliteTraceStore.sharing(store), path, rng))
    for row in rows:
        print(
            f"{row['bench']:<36} p50 {row['p50_us']:>8.1f} us  p99 {row['p99_us']:>8.1f} us | "
            f"{row['baseline']:<40} p50 {row['baseline_p50_us']:>7.1f} us  p99 {row['baseline_p99_us']:>7.1f} us"
            f" | ratio p50 {row['ratio_p50']}x p99 {row['ratio_p99']}x"
        )
    return rows


if __name__ == "__main__":
    run()
