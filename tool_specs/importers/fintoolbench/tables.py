"""Read the importer's tables: the TSV and JSON files in ``data/`` that ship with the package.

TSV files: ``#`` lines are comments, the first other line names the columns, every row has exactly
that many tab-separated cells (an empty cell is an empty string). JSON files hold structured tables
(families, glossary sections, name rules). Every table is read once per process.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

_PACKAGE = "finmcp.tool_specs.importers.fintoolbench"


def _text(name: str) -> str:
    return (resources.files(_PACKAGE) / "data" / name).read_text("utf-8")


@cache
def tsv(name: str) -> tuple[tuple[str, ...], ...]:
    """The rows of ``data/<name>`` (header and comments dropped); ValueError naming a malformed row."""
    header: list[str] | None = None
    rows: list[tuple[str, ...]] = []
    for number, line in enumerate(_text(name).split("\n"), start=1):
        if not line or line.startswith("#"):
            continue
        cells = tuple(line.split("\t"))
        if header is None:
            header = list(cells)
        elif len(cells) != len(header):
            raise ValueError(
                f"{name}: line {number} has {len(cells)} cells, expected {len(header)} ({header})"
            )
        else:
            rows.append(cells)
    return tuple(rows)


def tsv_pairs(name: str) -> tuple[tuple[str, str], ...]:
    """The rows of a two-column TSV table as pairs; ValueError when it has another width."""
    pairs: list[tuple[str, str]] = []
    for row in tsv(name):
        if len(row) != 2:
            raise ValueError(f"{name}: expected 2 columns, got {len(row)}")
        pairs.append((row[0], row[1]))
    return tuple(pairs)


def tsv_map(name: str) -> dict[str, str]:
    """A two-column TSV table as a dict (first column -> second), file order kept."""
    return dict(tsv_pairs(name))


@cache
def _json(name: str) -> Any:
    return json.loads(_text(name))


def json_table(name: str, section: str) -> Any:
    """One top-level section of ``data/<name>`` (callers must not mutate it)."""
    return _json(name)[section]
