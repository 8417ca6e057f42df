"""The project's source read as syntax trees: which modules import what (for the architecture tests)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("tool_specs", "recordings", "server", "proxy", "evaluator")
"""The five source folders; each installs as ``finmcp.<folder>`` (pyproject's package-dir mapping)."""
TOP = "finmcp"


@dataclass(frozen=True)
class Import:
    """One import statement's target: ``module`` (absolute), the ``names`` taken from it, whether it
    runs when the importing module is loaded (top level, outside ``if TYPE_CHECKING``), and whether it
    runs at all (anywhere but ``if TYPE_CHECKING``: a function-level import runs when called)."""

    module: str
    names: tuple[str, ...]
    at_load: bool
    line: int
    at_run: bool = True


def module_name(path: Path) -> str:
    """``server/sim/bake.py`` -> ``finmcp.server.sim.bake``; a package's ``__init__.py`` -> the package;
    ``bench/x.py`` and ``tests/...`` keep their folder as the top name (they are not installed)."""
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    if parts[0] in PACKAGES:
        parts.insert(0, TOP)
    return ".".join(parts)


def package_of(module: str) -> str | None:
    """The source folder of a project module (``finmcp.server.sim`` -> ``server``); None for any other."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == TOP and parts[1] in PACKAGES else None


def folder_of(module: str) -> Path:
    """Where a project module's source lives: ``finmcp.server.sim`` -> ``REPO/server/sim``."""
    return REPO.joinpath(*module.split(".")[1:])


def source_files(*folders: str) -> list[Path]:
    """Every ``.py`` file below the folders (default: the five packages)."""
    return sorted(p for folder in folders or PACKAGES for p in (REPO / folder).rglob("*.py"))


def _absolute(module: str | None, level: int, importer: str, is_package: bool) -> str:
    if level == 0:
        return module or ""
    base = importer.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, module] if module else base)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


@cache
def imports(path: Path) -> tuple[Import, ...]:
    """Every import in ``path`` (a project file), with relative imports made absolute."""
    return parse_imports(path, module_name(path))


def parse_imports(path: Path, importer: str) -> tuple[Import, ...]:
    """Every import in the file ``path`` of module ``importer``, with relative imports made absolute."""
    is_package = path.name == "__init__.py"
    found: list[Import] = []

    def visit(node: ast.AST, at_load: bool, at_run: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                found.extend(Import(a.name, (), at_load, child.lineno, at_run) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                module = _absolute(child.module, child.level, importer, is_package)
                names = tuple(a.name for a in child.names)
                found.append(Import(module, names, at_load, child.lineno, at_run))
            elif isinstance(child, ast.If) and _is_type_checking(child):
                visit(child, False, False)
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                visit(child, False, at_run)
            else:
                visit(child, at_load, at_run)

    visit(ast.parse(path.read_text(encoding="utf-8")), True, True)
    return tuple(found)


def project_imports(path: Path) -> Iterator[Import]:
    """The imports of project modules only."""
    for item in imports(path):
        if package_of(item.module) is not None:
            yield item
