"""Build the shipped ``fintool760`` inventory from the published FinToolBench manifest.

Usage::

    python -m finmcp.tool_specs.importers.fintoolbench.build --manifest /path/to/tools.jsonl [--output PATH]

The output is gzip-compressed JSON with sorted keys and a zero gzip timestamp, so the same manifest
always gives the same bytes.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path
from typing import Any

from finmcp.tool_specs.errors import InventoryError
from finmcp.tool_specs.importers.fintoolbench.manifest import load_manifest

INVENTORY = "fintool760"
DEFAULT_OUTPUT = Path(__file__).resolve().parents[2] / "data" / "fintool760.json.gz"
DESCRIPTION = (
    "FinToolBench's 760 tools (akshare and RapidAPI). Names, parameter names, types, required lists and "
    "financial tags are exactly those of the published manifest (tools_all_annotated.jsonl). Titles, "
    "tool and parameter descriptions are finmcp's own text built from those facts; output schemas wrap "
    'the result as {"result": ...} with concrete typed columns: the source\'s where it names them, else a '
    "finmcp family template (meta output_columns_source); consumes/produces are finmcp's entity types."
)


def build_document(manifest: str | Path) -> dict[str, Any]:
    """The inventory document for ``manifest``: name, description and every tool's record, in order."""
    specs = load_manifest(manifest, keep_text=False)
    return {"inventory": INVENTORY, "description": DESCRIPTION, "tools": [s.to_record() for s in specs]}


def document_bytes(document: dict[str, Any]) -> bytes:
    """Reproducible bytes: sorted-key compact JSON, gzip with mtime 0 and no file name."""
    text = json.dumps(document, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n"
    return gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)


def build(manifest: str | Path, output: str | Path = DEFAULT_OUTPUT) -> Path:
    """Build and write the inventory file; returns its path."""
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_bytes(document_bytes(build_document(manifest)))
    return output


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(
        prog="python -m finmcp.tool_specs.importers.fintoolbench.build", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--manifest", required=True, help="the FinToolBench tools JSONL manifest")
    parser.add_argument("--output", default=str(DEFAULT_OUTPUT), help="where to write the .json.gz")
    args = parser.parse_args(argv)
    try:
        path = build(args.manifest, args.output)
    except InventoryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
