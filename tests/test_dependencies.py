"""Every third-party package the code imports is declared in pyproject.toml (runtime or dev extra)."""

from __future__ import annotations

import importlib.metadata
import re
import sys
import tomllib

from tests.support.source import PACKAGES, REPO, imports, source_files

OWN = {"finmcp", "bench", "tests"}
# the client matrix's drivers import the clients' packages, which live in their own environments
# (tests/clients/provision.py pins them), not in this project's
DRIVERS = REPO / "tests" / "clients" / "drivers"
AGENT_DRIVERS = REPO / "tests" / "agents" / "drivers"  # the agent matrix's, likewise


def declared(requirements: list[str]) -> set[str]:
    return {
        re.split(r"[<>=!~;\[ ]", r, maxsplit=1)[0].strip().lower().replace("_", "-") for r in requirements
    }


def imported(folders: tuple[str, ...], *, at_load: bool | None = None) -> dict[str, str]:
    """Top-level names of the non-stdlib, non-project modules imported in ``folders`` -> a file importing it.

    ``at_load``: only the imports run when the module loads (True) or only those inside functions (False).
    """
    found: dict[str, str] = {}
    for path in source_files(*folders):
        if path.is_relative_to(DRIVERS) or path.is_relative_to(AGENT_DRIVERS):
            continue
        for item in imports(path):
            if at_load is not None and item.at_load != at_load:
                continue
            top = item.module.split(".")[0]
            if top and top not in OWN and top not in sys.stdlib_module_names:
                found.setdefault(top, str(path.relative_to(REPO)))
    return found


def test_every_import_is_declared():
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    runtime = declared(project["dependencies"])
    extras = project["optional-dependencies"]
    dev = runtime | declared(extras["dev"])
    # an optional extra (postgres, parquet, ...) may be imported by package code only inside a function,
    # which says what to install when it is missing
    optional = runtime | {name for extra, reqs in extras.items() if extra != "dev" for name in declared(reqs)}
    distributions = importlib.metadata.packages_distributions()
    helpers = {path.stem for path in (REPO / "tests").rglob("*.py")}  # test helpers imported by bare name
    missing = []
    checks: tuple[tuple[tuple[str, ...], set[str], bool | None], ...] = (
        (PACKAGES + ("bench",), runtime, True),
        (PACKAGES + ("bench",), optional, False),
        (("tests",), dev, None),
    )
    for folders, allowed, at_load in checks:
        for top, where in imported(folders, at_load=at_load).items():
            if folders == ("tests",) and top in helpers:
                continue
            names = {d.lower().replace("_", "-") for d in distributions.get(top, [top])}
            if not names & allowed:
                missing.append(f"{top} ({', '.join(sorted(names))}) imported in {where}")
    assert not missing, "imported but not declared in pyproject.toml:\n" + "\n".join(missing)
