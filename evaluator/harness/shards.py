"""Split a benchmark into N shards (``finmcp-eval run --shard I/N``): deterministic and stratified.

Every sample lands in exactly one shard. Samples are grouped into strata by (type, scenario); the
strata are taken in sorted order and the samples of each in the benchmark's own order, and the
k-th sample of that sequence goes to shard ``k mod N``. So every shard gets within one sample of
``len/N`` samples and within one of its share of each stratum, and the split depends only on the
references (no hash seed, machine or clock).

Indices are 0-based (``0/4`` .. ``3/4``), what Kubernetes Indexed Jobs give in
``$JOB_COMPLETION_INDEX`` and Slurm in ``$SLURM_ARRAY_TASK_ID`` with ``--array=0-3``; with
``base=1`` (``--shard-base 1``) they are 1-based (``1/4`` .. ``4/4``, Slurm ``--array=1-4``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol, TypeVar

from finmcp.evaluator.errors import EvalInputError

_SPEC = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


class _Stratified(Protocol):
    @property
    def type(self) -> str: ...
    @property
    def scenario(self) -> str: ...


T = TypeVar("T", bound=_Stratified)


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` (0-based) of ``count``."""

    index: int
    count: int

    @property
    def label(self) -> str:
        """``shard-I-of-N`` (0-based I), used in file names."""
        return f"shard-{self.index}-of-{self.count}"

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(spec: str, base: int = 0) -> Shard:
    """Parse ``I/N`` (``base`` 0: I in 0..N-1; ``base`` 1: I in 1..N) into a 0-based :class:`Shard`."""
    if base not in (0, 1):
        raise EvalInputError(f"--shard-base {base}: expected 0 or 1")
    match = _SPEC.match(spec or "")
    if not match:
        raise EvalInputError(f"--shard {spec!r}: expected I/N, e.g. 0/4 (0-based; --shard-base 1 for 1/4)")
    index, count = int(match[1]), int(match[2])
    if count < 1:
        raise EvalInputError(f"--shard {spec!r}: the number of shards must be >= 1")
    if not base <= index < count + base:
        hint = (
            "; for 1-based indices (Slurm --array=1-N) add --shard-base 1"
            if base == 0 and index == count
            else ""
        )
        raise EvalInputError(
            f"--shard {spec!r}: index {index} is out of range {base}..{count - 1 + base} "
            f"({'1' if base else '0'}-based){hint}"
        )
    return Shard(index - base, count)


def assign(refs: list[T], count: int) -> list[int]:
    """The 0-based shard of each reference, in the references' order."""
    if count < 1:
        raise EvalInputError(f"shards: the number of shards must be >= 1, not {count}")
    strata: dict[tuple[str, str], list[int]] = {}
    for position, ref in enumerate(refs):
        strata.setdefault((str(ref.type), str(ref.scenario)), []).append(position)
    shard_of = [0] * len(refs)
    k = 0
    for key in sorted(strata):
        for position in strata[key]:
            shard_of[position] = k % count
            k += 1
    return shard_of


def select(refs: list[T], shard: Shard) -> list[T]:
    """The references of ``shard``, in the references' order."""
    return [ref for ref, s in zip(refs, assign(refs, shard.count), strict=True) if s == shard.index]
