"""The layout's rules, read from the source (docs/architecture.md explains them).

- imports point one way: ``tool_specs`` <- ``recordings`` <- {``server``, ``proxy``, ``evaluator``}; the
  server and the proxy never import each other; of the evaluator only synthesis uses the server (its
  seeded world, in process);
- ``recordings/plumbing`` is self-contained: it imports no other project module;
- the scoring core (``evaluator/inputs`` <- ``metrics`` <- ``reports``) imports upward only and never the
  server, the proxy, the harness, the agents or synthesis;
- no import cycle between modules, counting function-level imports too (only ``if TYPE_CHECKING:``
  blocks aside): a module that imports another inside a function still depends on it at run time;
- no private name imported across modules; no private attribute of a standard-library module
  (``re._parser`` and the like);
- no module above 700 lines; the mcp SDK's private state is read in ``server/sdk_private.py`` only
  (checked at start-up by ``server/sdk_check.py``).
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

from tests.support.source import (
    PACKAGES,
    REPO,
    folder_of,
    imports,
    module_name,
    package_of,
    parse_imports,
    project_imports,
    source_files,
)

MAY_IMPORT = {
    "tool_specs": set(),
    "recordings": {"tool_specs"},
    "server": {"tool_specs", "recordings"},
    "proxy": {"tool_specs", "recordings"},
    "evaluator": {"tool_specs", "recordings"},
}
EVALUATOR_MAY_USE_SERVER = ("finmcp.evaluator.synth", "finmcp.evaluator.grounding")
"""The evaluator's parts that read the seeded world: synthesis, and grounded answers (true values)."""
SCORING_CORE = ("finmcp.evaluator.inputs", "finmcp.evaluator.metrics", "finmcp.evaluator.reports")
NOT_FOR_SCORING = (
    "server",
    "proxy",
    "finmcp.evaluator.harness",
    "finmcp.evaluator.agents",
    "finmcp.evaluator.synth",
    "finmcp.evaluator.cli",
)


def _within(module: str, prefixes: tuple[str, ...] | list[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def _rel(path: Path) -> str:
    return str(path.relative_to(REPO))


@pytest.mark.parametrize("package", PACKAGES)
def test_imports_point_one_way(package: str) -> None:
    bad = []
    for path in source_files(package):
        importer = module_name(path)
        for item in project_imports(path):
            top = package_of(item.module)
            if top == package or top in MAY_IMPORT[package]:
                continue
            if top == "server" and _within(importer, EVALUATOR_MAY_USE_SERVER):
                continue
            bad.append(f"{_rel(path)}:{item.line} imports {item.module}")
    assert not bad, "\n".join(bad)


def test_every_project_import_names_the_installed_package() -> None:
    """The five folders install as ``finmcp.<folder>``: ``import server`` works from a checkout only (and
    would load a second copy of the module, or another project's ``server``), so nothing may write it."""
    bad = [
        f"{_rel(path)}:{item.line} imports {item.module}"
        for path in source_files(*PACKAGES, "bench", "tests")
        for item in imports(path)
        if item.module.split(".")[0] in PACKAGES
    ]
    assert not bad, "\n".join(bad)


def test_plumbing_imports_no_other_project_module() -> None:
    bad = [
        f"{_rel(path)}:{item.line} imports {item.module}"
        for path in source_files("recordings/plumbing")
        for item in project_imports(path)
        if not _within(item.module, ["finmcp.recordings.plumbing"])
    ]
    assert not bad, "\n".join(bad)


def test_scoring_core_imports_upward_only() -> None:
    bad = []
    for rank, layer in enumerate(SCORING_CORE):
        above = [*SCORING_CORE[rank + 1 :], *NOT_FOR_SCORING]
        for path in source_files(str(folder_of(layer))):
            for item in project_imports(path):
                if _within(item.module, above):
                    bad.append(f"{_rel(path)}:{item.line} imports {item.module}")
    assert not bad, "\n".join(bad)


def _import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports, at load time or inside a function (not the
    ``if TYPE_CHECKING:`` ones); ``from pkg import mod`` names ``pkg.mod``."""
    files = {module_name(p): p for p in source_files()}
    graph: dict[str, set[str]] = {m: set() for m in files}
    for module, path in files.items():
        for item in project_imports(path):
            if not item.at_run:
                continue
            targets = {f"{item.module}.{n}" for n in item.names if f"{item.module}.{n}" in files}
            graph[module] |= targets or ({item.module} if item.module in files else set())
        graph[module].discard(module)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycles_between_modules() -> None:
    cycles = _cycles(_import_graph())
    assert not cycles, "modules that import each other (at load or in a function): " + "; ".join(
        " <-> ".join(c) for c in cycles
    )


def test_function_level_imports_count_and_type_checking_ones_do_not(tmp_path: Path) -> None:
    source = tmp_path / "mod.py"
    source.write_text(
        "from typing import TYPE_CHECKING\nimport os\nif TYPE_CHECKING:\n    import json\n"
        "def f():\n    import sys\n    if TYPE_CHECKING:\n        import re\n",
        "utf-8",
    )
    found = {i.module: (i.at_load, i.at_run) for i in parse_imports(source, "mod")}
    assert found == {
        "typing": (True, True),
        "os": (True, True),
        "json": (False, False),
        "sys": (False, True),
        "re": (False, False),
    }


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_private_name_is_imported_across_modules() -> None:
    bad = [
        f"{_rel(path)}:{item.line} imports {name} from {item.module}"
        for path in source_files(*PACKAGES, "bench")
        for item in project_imports(path)
        for name in item.names
        if name.startswith("_") and not name.startswith("__")
    ]
    assert not bad, "\n".join(bad)


def test_no_private_attribute_of_a_project_module() -> None:
    bad = []
    for path in source_files(*PACKAGES, "bench"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        modules = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules |= {a.asname or a.name for a in node.names if package_of(a.name)}
            elif isinstance(node, ast.ImportFrom) and package_of(node.module or ""):
                modules |= {
                    a.asname or a.name
                    for a in node.names
                    if (folder_of(node.module) / f"{a.name}.py").is_file()
                }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in modules
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                bad.append(f"{_rel(path)}:{node.lineno} uses {node.value.id}.{node.attr}")
    assert not bad, "\n".join(bad)


def test_no_private_attribute_of_a_standard_library_module() -> None:
    bad = []
    for path in source_files(*PACKAGES, "bench"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        stdlib = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                stdlib |= {
                    a.asname or a.name for a in node.names if a.name.split(".")[0] in sys.stdlib_module_names
                }
            elif (
                isinstance(node, ast.ImportFrom)
                and (node.module or "").split(".")[0] in sys.stdlib_module_names
            ):
                bad += [
                    f"{_rel(path)}:{node.lineno} imports {a.name} from {node.module}"
                    for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")
                ]
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in stdlib
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                bad.append(f"{_rel(path)}:{node.lineno} uses {node.value.id}.{node.attr}")
    assert not bad, "\n".join(bad)


TRACE_TABLES = (
    "calls",
    "messages",
    "sessions",
    "runs",
    "origins",
    "ship_outbox",
    "ship_origin",
    "finmcp_schema",
    "answers",
)
"""The trace schema's tables: SQLite's (and the outbox's) and PostgreSQL's."""
TRACE_SQL = re.compile(
    r"\b(?:FROM|UPDATE|INTO|JOIN|TABLE)\s+\"?(?:" + "|".join(TRACE_TABLES) + r")\b\"?", re.IGNORECASE
)
TRACE_STORE_OWNERS = (
    "finmcp.recordings.schema",
    "finmcp.recordings.connection",
    "finmcp.recordings.trace",
    "finmcp.recordings.trace_store",
    "finmcp.recordings.trace_store_api",
    "finmcp.recordings.trace_pages",
    "finmcp.recordings.outbox",
    "finmcp.recordings.answers",
    "finmcp.recordings.postgres",
)
"""The trace store's modules: the only ones that write SQL against the trace schema."""


def trace_sql(path: Path) -> list[str]:
    """``line: text`` of each string in ``path`` (docstrings aside) that holds SQL on a trace table."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    hits = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
        and TRACE_SQL.search(node.value)
    ]
    return [f"{node.lineno}: {str(node.value).strip()[:80]}" for node in sorted(hits, key=lambda n: n.lineno)]


def test_only_the_trace_store_writes_sql_against_the_trace_schema() -> None:
    bad = [
        f"{_rel(path)}:{hit}"
        for path in source_files()
        if not _within(module_name(path), TRACE_STORE_OWNERS)
        for hit in trace_sql(path)
    ]
    assert not bad, (
        "SQL on the trace schema outside recordings' trace store (add a store method):\n" + "\n".join(bad)
    )


def test_the_trace_sql_finder_finds_sql(tmp_path: Path) -> None:
    sample = tmp_path / "m.py"
    sample.write_text(
        '"""Rows come FROM calls (a docstring: ignored)."""\n'
        'A = "SELECT count(*) FROM calls WHERE run_id = ?"\n'
        'B = f"UPDATE calls SET run_id = {1}"\n'
        'C = "select 1 from origins"\n'
        'D = "INSERT INTO responses VALUES (?)"\n',
        encoding="utf-8",
    )
    assert [hit.split(":")[0] for hit in trace_sql(sample)] == ["2", "3", "4"]


MAX_MODULE_LINES = 700
"""docs/architecture.md: no hand-written module above 700 lines (tables are data files, not code)."""


def test_no_module_is_above_the_size_limit() -> None:
    sizes = {_rel(path): len(path.read_text(encoding="utf-8").splitlines()) for path in source_files()}
    assert {path: n for path, n in sizes.items() if n > MAX_MODULE_LINES} == {}


def _mcp_sdk_private_attributes() -> set[str]:
    """Every private attribute the mcp SDK sets or reads on its own objects (``self._name``)."""
    import mcp

    names = set()
    for path in Path(mcp.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                names.add(node.attr)
    return names


SDK_PRIVATE_STATE_READER = "server/sdk_private.py"
"""The one module that reads the mcp SDK's private state (checked at start-up by server/sdk_check.py)."""


def _imports_mcp(tree: ast.Module) -> bool:
    """Whether a module imports the mcp SDK (only such a module can hold its objects' private state)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "mcp" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "mcp":
            return True
    return False


def _sdk_private_reads(tree: ast.Module, private: set[str]) -> list[tuple[int, str]]:
    """(line, name) of each read of one of the SDK's ``private`` names in a module that imports mcp."""
    if not _imports_mcp(tree):
        return []
    return [
        (node.lineno, node.attr)
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr in private
        and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
    ]


def test_the_mcp_sdk_private_state_is_read_in_one_module() -> None:
    private = _mcp_sdk_private_attributes()
    assert {"_server_instances", "_requests_in_flight", "_idle_timeout", "_serialize"} <= private
    bad = [
        f"{_rel(path)}:{line} reads .{name}"
        for path in source_files(*PACKAGES, "bench")
        if _rel(path) != SDK_PRIVATE_STATE_READER
        for line, name in _sdk_private_reads(ast.parse(path.read_text(encoding="utf-8")), private)
    ]
    assert not bad, "\n".join(bad)


def test_the_sdk_private_finder_finds_reads_only_where_mcp_is_imported() -> None:
    private = {"_server_instances", "_lock"}
    reader = "from mcp.server import x\ndef f(m):\n    return m._server_instances\n"
    assert _sdk_private_reads(ast.parse(reader), private) == [(3, "_server_instances")]
    own_lock = "import threading\ndef f(share):\n    return share._lock\n"
    assert _sdk_private_reads(ast.parse(own_lock), private) == []


def _namespace_takers(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, name) of each function with a parameter annotated ``argparse.Namespace``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            params = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
            if any(p.annotation is not None and "Namespace" in ast.unparse(p.annotation) for p in params):
                found.append((node.lineno, node.name))
    return found


def test_engines_take_typed_options_not_the_parsed_namespace() -> None:
    """Only a command line reads the parsed flags: a ``cli``/``*_cli`` module, or a ``*_options`` function
    that turns them into a typed options object; every engine takes that object."""
    bad = [
        f"{_rel(path)}:{line} {name}"
        for path in source_files()
        if not path.stem.endswith("cli")
        for line, name in _namespace_takers(ast.parse(path.read_text(encoding="utf-8")))
        if not name.endswith("_options")
    ]
    assert not bad, "functions outside a CLI that take argparse.Namespace:\n" + "\n".join(bad)


def test_the_namespace_finder_finds_one(tmp_path: Path) -> None:
    tree = ast.parse("import argparse\ndef run(args: argparse.Namespace) -> int:\n    return 0\n")
    assert _namespace_takers(tree) == [(2, "run")]
