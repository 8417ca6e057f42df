"""The evaluator's import rules, read from the source: the scoring core (inputs, metrics, reports) never
imports the server or the proxy; the references reader knows nothing of the shipped benchmarks; the
scoring core imports upward only (inputs <- metrics <- reports)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

EVALUATOR = Path(__file__).resolve().parents[2] / "evaluator"
CORE = ("inputs", "metrics", "reports")


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports (top level and inside functions)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def package_files(package: str) -> list[Path]:
    files = sorted((EVALUATOR / package).rglob("*.py"))
    assert files, package
    return files


@pytest.mark.parametrize("package", CORE)
def test_scoring_core_never_imports_server_or_proxy(package: str) -> None:
    for path in package_files(package):
        bad = {m for m in imported_modules(path) if m.split(".")[0] in ("server", "proxy")}
        assert not bad, f"{path.relative_to(EVALUATOR.parent)} imports {sorted(bad)}"


def test_scoring_core_imports_point_one_way() -> None:
    for rank, package in enumerate(CORE):
        above = {f"evaluator.{p}" for p in CORE[rank + 1 :]} | {
            "evaluator.harness",
            "evaluator.agents",
            "evaluator.synth",
            "evaluator.benchmarks",
            "evaluator.cli",
        }
        for path in package_files(package):
            bad = {m for m in imported_modules(path) if any(m == a or m.startswith(a + ".") for a in above)}
            assert not bad, f"{path.relative_to(EVALUATOR.parent)} imports {sorted(bad)}"


def test_no_private_names_imported_across_evaluator_modules() -> None:
    for path in sorted(EVALUATOR.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("evaluator"):
                private = [a.name for a in node.names if a.name.startswith("_")]
                assert not private, (
                    f"{path.relative_to(EVALUATOR.parent)} imports {private} from {node.module}"
                )
