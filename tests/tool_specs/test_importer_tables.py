"""The FinToolBench importer's tables are data files that parse, ship as package data and stay data."""

from __future__ import annotations

import tomllib
from fnmatch import fnmatch
from pathlib import Path

import pytest

from finmcp.tool_specs.importers.fintoolbench import tables

REPO = Path(__file__).resolve().parents[2]
PACKAGE_DIR = REPO / "tool_specs" / "importers" / "fintoolbench"
DATA_FILES = sorted(p.name for p in (PACKAGE_DIR / "data").iterdir())


def test_every_data_file_is_declared_package_data():
    config = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))
    globs = config["tool"]["setuptools"]["package-data"]["finmcp.tool_specs.importers.fintoolbench"]
    assert DATA_FILES
    for name in DATA_FILES:
        assert any(fnmatch(f"data/{name}", g) for g in globs), (
            f"{name} is not shipped (pyproject package-data)"
        )


@pytest.mark.parametrize("name", [n for n in DATA_FILES if n.endswith(".tsv")])
def test_tsv_tables_have_a_header_and_full_rows(name):
    text = (PACKAGE_DIR / "data" / name).read_text("utf-8")
    lines = [line for line in text.split("\n") if line and not line.startswith("#")]
    width = len(lines[0].split("\t"))
    assert width >= 2
    assert all(len(line.split("\t")) == width for line in lines[1:]), name
    assert len(tables.tsv(name)) == len(lines) - 1
    assert "\r" not in text


def test_a_short_row_is_reported_by_file_and_line(monkeypatch):
    monkeypatch.setattr(tables, "_text", lambda name: "# comment\na\tb\nx\ty\nonly-one\n")
    tables.tsv.cache_clear()
    try:
        with pytest.raises(ValueError, match=r"bad\.tsv: line 4 has 1 cells, expected 2"):
            tables.tsv("bad.tsv")
    finally:
        tables.tsv.cache_clear()


def test_a_pair_table_of_another_width_is_reported(monkeypatch):
    monkeypatch.setattr(tables, "_text", lambda name: "a\tb\tc\nx\ty\tz\n")
    tables.tsv.cache_clear()
    try:
        with pytest.raises(ValueError, match=r"wide\.tsv: expected 2 columns, got 3"):
            tables.tsv_map("wide.tsv")
    finally:
        tables.tsv.cache_clear()


def test_no_packed_table_strings_left_in_the_importer_code():
    for path in PACKAGE_DIR.glob("*.py"):
        assert "||" not in path.read_text("utf-8"), path.name
