"""The harness's side of run fingerprints: build what a run is measured on, store it in ``runs.meta``.

A fingerprint (format :data:`evaluator.inputs.fingerprint.FINGERPRINT_VERSION`)::

    {"version": 1,
     "tools": "sha256:…",        # tools_fingerprint of the tools/list the agent was served
     "recordings": "sha256:…",   # RecordingStore.content_digest() of the recordings file, or None
     "seed": 0,                  # the world seed of the server the harness started (--spawn), or None
     "bench": {"name": "finmcp-sim", "sha256": "…"},   # sha256 of the references file's bytes
     "finmcp": "0.2.0",          # finmcp's installed version
     "agent": {"kind": "openai", "model": "…", "temperature": 0.0, "top_p": None, "max_tokens": None, …},
     "faults": "none",           # or the fault schedule's digest ("sha256:…") of a robustness run
     "fault_schedule": {...}}    # the schedule itself (robustness runs only)

``agent`` holds, for model agents, the model and the decoding settings the agent sends (``None``:
not sent, the endpoint's default); it is recorded and never compared (docs/harness.md).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from finmcp.evaluator.harness.options import AgentOptions
from finmcp.evaluator.inputs.fingerprint import FINGERPRINT_VERSION
from finmcp.recordings.errors import RecordingsError
from finmcp.recordings.plumbing.flags import installed_version
from finmcp.recordings.store import RecordingStore
from finmcp.recordings.tool_fingerprint import tools_fingerprint
from finmcp.recordings.trace_store import SqliteTraceStore


def bench_fingerprint(name: str) -> dict[str, Any]:
    """``{"name", "sha256"}`` of a benchmark: a shipped one's embedded references file, or the file ``name``."""
    from finmcp.evaluator.benchmarks import BENCHMARKS, data_path

    path = data_path(name, "references") if name in BENCHMARKS else Path(name)
    sha = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            sha.update(chunk)
    return {"name": Path(name).name if name not in BENCHMARKS else name, "sha256": sha.hexdigest()}


def recordings_fingerprint(path: Path | None) -> str | None:
    """The content digest of a recordings file (None without one)."""
    if path is None:
        return None
    with RecordingStore.open(path) as store:
        return store.content_digest()


def agent_fingerprint(agent: AgentOptions) -> dict[str, Any]:
    """The agent's kind; a noisy agent's noise and seed; a model agent's model and the decoding settings it sends."""
    out: dict[str, Any] = {"kind": agent.kind}
    if agent.kind == "noisy":
        out.update(noise=agent.noise, seed=agent.seed)
    elif agent.kind == "oracle" and agent.retry:
        out.update(retry=agent.retry)
    elif agent.kind in ("cmd", "python"):
        out.update(
            target=agent.target, max_calls=agent.max_calls, max_steps=agent.max_steps, top_k=agent.top_k
        )
    elif agent.kind == "openai":
        out.update(
            model=agent.llm_model,
            temperature=agent.temperature,
            top_p=None,  # never sent: the endpoint's default
            max_tokens=agent.max_tokens,
            max_calls=agent.max_calls,
            max_steps=agent.max_steps,
            top_k=agent.top_k,
            inject_tags=agent.inject_tags,
        )
    return out


class RunFingerprint:
    """What runs on one benchmark, recordings file and seed share; :meth:`complete` adds a run's
    tools (the ``tools/list`` its agent was served) and agent."""

    def __init__(self, bench: str, recordings: Path | None, seed: int | None, schedule: Any = None) -> None:
        self.base: dict[str, Any] = {
            "version": FINGERPRINT_VERSION,
            "tools": None,
            "recordings": recordings_fingerprint(recordings),
            "seed": seed,
            "bench": bench_fingerprint(bench),
            "finmcp": installed_version(),
            "faults": "none" if schedule is None else schedule.digest,
        }
        if schedule is not None:
            self.base["fault_schedule"] = dict(schedule.document)

    def complete(self, tools: list[Mapping[str, Any]], agent: AgentOptions) -> dict[str, Any]:
        """The whole fingerprint of a run: the digest of ``tools`` (its ``tools/list``), its agent."""
        return {**self.base, "tools": tools_fingerprint(tools), "agent": agent_fingerprint(agent)}


def store_fingerprint(db: str | Path, run_id: str, fingerprint: Mapping[str, Any]) -> None:
    """Set ``fingerprint`` in run ``run_id``'s ``runs.meta`` of the SQLite trace store ``db`` (other
    meta keys kept; the run row is created when missing)."""
    try:
        with SqliteTraceStore.open(db) as store:
            meta = store.run_meta(run_id)
            merged = {**(meta if isinstance(meta, Mapping) else {}), "fingerprint": dict(fingerprint)}
            store.ensure_run(run_id, merged)
    except RecordingsError as exc:
        from finmcp.evaluator.errors import EvalInputError

        raise EvalInputError(f"trace DB {db}: cannot store run {run_id!r}'s fingerprint: {exc}") from None
