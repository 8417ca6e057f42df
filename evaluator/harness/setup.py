"""What a run needs besides the agent: references, their inventory, recordings and gold outputs."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from finmcp.evaluator.errors import EvalInputError
from finmcp.evaluator.inputs.model import Reference


@dataclass
class Bench:
    """A benchmark ready to run: references, inventory name or file, and an optional recordings file."""

    name: str
    refs: list[Reference]
    inventory_name: str
    inventory: Any
    recordings: Path | None
    format: str = "finmcp"
    """The references' format (``finmcp``, ``finmcp_official``, ``fintoolbench``)."""


def load_bench(
    bench: str,
    workdir: Path,
    inventory: str | None = None,
    recordings: str | None = None,
    limit: int | None = None,
    samples: list[str] | None = None,
) -> Bench:
    """``finmcp-sim`` (shipped; its recordings are installed under ``workdir``) or a references file.

    A references file runs on ``inventory``, else on the one its references name, else on the smallest
    built-in holding every tool they call (:mod:`evaluator.harness.inventory_choice`; said on stderr)."""
    from finmcp.evaluator.benchmarks import BENCHMARKS, install_recordings, load_benchmark
    from finmcp.evaluator.harness.inventory_choice import choose_inventory, inferred_line
    from finmcp.tool_specs.inventory import load_inventory

    fmt = "finmcp"
    if bench in BENCHMARKS:
        refs = load_benchmark(bench)
        inv_name = inventory or BENCHMARKS[bench]["inventory"]
        if recordings:
            rec_path: Path | None = Path(recordings)
        else:
            workdir.mkdir(parents=True, exist_ok=True)
            rec_path = workdir / f"{bench}.recordings.sqlite"
            install_recordings(rec_path, bench).close()
    else:
        from finmcp.evaluator.inputs.references import load_references

        if not Path(bench).is_file():
            raise EvalInputError(
                f"--bench {bench!r}: not a shipped benchmark ({', '.join(BENCHMARKS)}) nor a file"
            )
        loaded = load_references(bench)
        refs, fmt = loaded.samples, loaded.format
        choice = choose_inventory(refs, inventory)
        if choice.how == "inferred":
            print(inferred_line(choice, Path(bench).name), file=sys.stderr)
        inv_name = choice.name
        rec_path = Path(recordings) if recordings else None
    if rec_path is not None and not rec_path.is_file():
        raise EvalInputError(f"--recordings {rec_path}: file not found")
    try:
        inv = load_inventory(inv_name)
    except Exception as exc:
        raise EvalInputError(f"--inventory {inv_name}: {exc}") from None
    unknown = sorted({c.tool for r in refs for t in r.turns for g in t.calls for c in g} - set(inv.names))
    if unknown:
        raise EvalInputError(f"--bench {bench}: tools not in inventory {inv_name}: {unknown[:10]}")
    if samples:
        wanted = set(samples)
        missing = sorted(wanted - {r.id for r in refs})
        if missing:
            raise EvalInputError(f"--sample: not in {bench}: {missing[:10]}")
        refs = [r for r in refs if r.id in wanted]
    if limit is not None:
        if limit < 1:
            raise EvalInputError("--limit must be >= 1")
        refs = stratified_slice(refs, limit)
    return Bench(bench, refs, inv_name, inv, rec_path, fmt)


def stratified_slice(refs: list[Reference], n: int) -> list[Reference]:
    """``n`` references spread evenly over each sample type (in file order), in file order."""
    if n >= len(refs):
        return list(refs)
    by_type: dict[str, list[Reference]] = {}
    for r in refs:
        by_type.setdefault(r.type, []).append(r)
    quota = {t: n * len(v) // len(refs) for t, v in by_type.items()}
    remainders = sorted(by_type, key=lambda t: -((n * len(by_type[t])) % len(refs)))  # largest remainder
    for t in remainders[: n - sum(quota.values())]:
        quota[t] += 1
    chosen: set[str] = set()
    for t, items in by_type.items():
        k = quota[t]
        chosen.update(items[(i * len(items)) // k].id for i in range(k))
    return [r for r in refs if r.id in chosen]
