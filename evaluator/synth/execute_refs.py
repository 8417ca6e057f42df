"""Execute references' gold calls through an executor (the oracle path), each gold group as one group.

Used to check that the shipped benchmark is answered from its recordings by ``finmcp-server`` (and,
through ``finmcp-proxy``, that the proxy's trace then equals the references).
"""

from __future__ import annotations

from typing import Any

import anyio

from finmcp.evaluator.inputs.model import Reference
from finmcp.evaluator.synth.executor import Executor


async def execute_reference(ref: Reference, executor: Executor) -> list[list[list[dict[str, Any]]]]:
    """Issue every turn's gold groups in order; returns the results as ``[turn][group][call]``."""
    out: list[list[list[dict[str, Any]]]] = []
    group_no = 0
    for turn_index, turn in enumerate(ref.turns):
        groups: list[list[dict[str, Any]]] = []
        out.append(groups)
        if not turn.calls:
            continue
        async with executor.session(ref.id, turn_index) as session:
            for group in turn.calls:
                groups.append(await session.call_group([(c.tool, c.arguments) for c in group], group_no))
                group_no += 1
    return out


def execute_references(
    refs: list[Reference], executor: Executor
) -> dict[str, list[list[list[dict[str, Any]]]]]:
    """Execute ``refs`` one after another; results keyed by sample id."""

    async def main() -> dict[str, list[list[list[dict[str, Any]]]]]:
        async with executor.shared():
            return {ref.id: await execute_reference(ref, executor) for ref in refs}

    return anyio.run(main)
