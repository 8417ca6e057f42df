"""``make bench``: run every ``bench/bench_*.py`` module's ``run()`` and print its rows.

Each benchmark measures its own baseline in the same run and reports ratios against it, so the
numbers compare like with like on whatever machine runs them.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import sys
import time
from pathlib import Path


def main() -> int:
    """Run all benchmarks (or those named on the command line) and print a JSON line per result."""
    here = Path(__file__).resolve().parent
    wanted = set(sys.argv[1:])
    names = sorted(m.name for m in pkgutil.iter_modules([str(here)]) if m.name.startswith("bench_"))
    if wanted:
        names = [n for n in names if n in wanted or n.removeprefix("bench_") in wanted]
    if not names:
        print("no benchmarks found", file=sys.stderr)
        return 0
    failures = 0
    for name in names:
        started = time.perf_counter()
        print(f"== {name}", flush=True)
        try:
            rows = importlib.import_module(f"bench.{name}").run()
        except Exception as exc:  # a broken benchmark must not hide the others
            failures += 1
            print(f"{name} failed: {exc!r}", file=sys.stderr)
            continue
        for row in rows or []:
            print(json.dumps(row, ensure_ascii=False))
        print(f"   ({time.perf_counter() - started:.1f} s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
