"""Benchmarks shipped with finmcp (``finmcp-sim``): references and their recordings, as package data.

``load_benchmark("finmcp-sim")`` returns validated :class:`evaluator.inputs.model.Reference` objects;
``install_recordings(path)`` builds a recordings SQLite file (for ``finmcp-server --recordings``) from
the shipped responses JSONL. ``open_references(source)`` is how the command lines read ``--bench`` /
``--bench``: a shipped benchmark by name (when no file of that name exists) or a references file.
This package depends on the references reader, never the other way round.
"""

from __future__ import annotations

import gzip
import io
import json
from importlib import resources
from pathlib import Path
from typing import Any

from finmcp.evaluator.errors import EvalInputError
from finmcp.evaluator.inputs.model import Reference, ReferenceSet
from finmcp.evaluator.inputs.references import load_references, parse_references

BENCHMARKS = {
    "finmcp-sim": {
        "references": "finmcp_sim.jsonl.gz",
        "recordings": "finmcp_sim.recordings.jsonl.gz",
        "manifest": "finmcp_sim.manifest.json",
        "inventory": "finmcp65",
    }
}


def _entry(name: str) -> dict[str, str]:
    if name not in BENCHMARKS:
        raise EvalInputError(f"unknown benchmark {name!r}; shipped: {', '.join(BENCHMARKS)}")
    return BENCHMARKS[name]


def data_path(name: str, kind: str) -> Path:
    """Path of one shipped file of a benchmark (``references``, ``recordings`` or ``manifest``)."""
    return Path(str(resources.files("finmcp.evaluator.benchmarks").joinpath(_entry(name)[kind])))


def load_records(name: str = "finmcp-sim") -> list[dict[str, Any]]:
    """The raw reference records (dicts in the project's format), in file (id) order."""
    text = gzip.decompress(data_path(name, "references").read_bytes()).decode("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def load_benchmark(name: str = "finmcp-sim") -> list[Reference]:
    """The benchmark's references, validated against its inventory's tool names."""
    from finmcp.tool_specs.inventory import load_inventory

    inventory = load_inventory(_entry(name)["inventory"])
    refs = parse_references(load_records(name), f"benchmark {name}", inventory.names, inventory.name)
    return refs.samples


def is_shipped(source: str | Path) -> bool:
    """True when ``source`` names a shipped benchmark and no file of that name exists."""
    return isinstance(source, str) and source in BENCHMARKS and not Path(source).exists()


def open_references(source: str | Path, **validation: Any) -> ReferenceSet:
    """References of a shipped benchmark named ``source`` (see :func:`is_shipped`), else of the file
    ``source``; ``validation`` (``known_tools``, ``inventory_name``, ``skip_invalid``) as for
    :func:`evaluator.inputs.references.load_references`."""
    if is_shipped(source):
        return parse_references(load_records(str(source)), str(source), **validation)
    return load_references(source, **validation)


def recordings_text(name: str = "finmcp-sim") -> str:
    """The shipped responses JSONL (decompressed)."""
    return gzip.decompress(data_path(name, "recordings").read_bytes()).decode("utf-8")


def install_recordings(path: str | Path, name: str = "finmcp-sim") -> Any:
    """Create (or update) the SQLite recordings file ``path`` from the shipped JSONL; returns the open store."""
    from finmcp.recordings.jsonl import import_jsonl
    from finmcp.recordings.store import RecordingStore

    store = RecordingStore.open(path)
    import_jsonl(store, io.StringIO(recordings_text(name)))
    return store


def manifest(name: str = "finmcp-sim") -> dict[str, Any]:
    """The build manifest (seed, counts, sha256 of the shipped files)."""
    return json.loads(data_path(name, "manifest").read_text("utf-8"))
