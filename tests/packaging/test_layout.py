"""pyproject's package layout matches the folders: every package is listed, every data pattern ships a file.

The five source folders install as ``finmcp.<folder>`` through a package-dir mapping, and setuptools
cannot discover subpackages through it, so pyproject lists each one; a folder left out would be missing
from the wheel (and only the wheel test, minutes later, would say so). Data files ship only through
``[tool.setuptools.package-data]`` (``include-package-data = false``).
"""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

from tests.packaging.project import pyproject, version
from tests.support.postgres import require_or_skip
from tests.support.source import PACKAGES, REPO, TOP, source_files

NOT_SHIPPED = {
    "tool_specs/data/qieman79_notes.md": "a maintainer's notes on the inventory (docs/inventories.md links it)",
}
"""Files in the source folders that are neither code nor package data, and why."""

_VERSION_ASSIGNMENT = re.compile(r"^\s*__version__\s*(?::[^=]*)?=", re.M)


def setuptools_config() -> dict:
    return pyproject()["tool"]["setuptools"]


def package_folder(package: str) -> Path:
    """``finmcp.tool_specs.importers`` -> ``REPO/tool_specs/importers`` (through the package-dir mapping)."""
    parts = package.split(".")
    assert parts[0] == TOP and parts[1] in PACKAGES, package
    return REPO.joinpath(*parts[1:])


def packages_on_disk() -> set[str]:
    """``finmcp.<dotted folder>`` of every folder under the five that has an ``__init__.py``."""
    found = set()
    for folder in PACKAGES:
        for init in (REPO / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(REPO)
            found.add(".".join([TOP, *relative.parts]))
    return found


def tracked_files(*folders: str) -> list[str]:
    """The files git tracks under ``folders`` (paths relative to the checkout)."""
    try:
        done = subprocess.run(
            ["git", "-C", str(REPO), "ls-files", "-z", "--", *folders],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        require_or_skip("not a git checkout: the tracked files cannot be listed")
    return [name for name in done.stdout.split("\0") if name]


def test_package_dir_maps_each_folder_under_finmcp():
    assert setuptools_config()["package-dir"] == {f"{TOP}.{folder}": folder for folder in PACKAGES}


def test_packages_are_exactly_the_folders_with_an_init():
    listed = setuptools_config()["packages"]
    assert len(listed) == len(set(listed)), "a package is listed twice"
    on_disk = packages_on_disk()
    assert set(listed) == on_disk, (
        f"missing from pyproject: {sorted(on_disk - set(listed))}; "
        f"listed without an __init__.py: {sorted(set(listed) - on_disk)}"
    )
    assert listed == sorted(listed), "keep [tool.setuptools] packages sorted"


def test_only_package_data_ships_as_data():
    assert setuptools_config()["include-package-data"] is False


def test_every_package_data_pattern_matches_a_file():
    data = setuptools_config()["package-data"]
    assert set(data) <= set(setuptools_config()["packages"]), "package-data names an unlisted package"
    for package, patterns in data.items():
        folder = package_folder(package)
        for pattern in patterns:
            matched = [path for path in folder.glob(pattern) if path.is_file()]
            assert matched, f"{package}: package-data pattern {pattern!r} matches no file under {folder}"


def test_every_data_file_in_the_folders_ships_or_says_why_not():
    data = setuptools_config()["package-data"]
    shipped = {
        path.relative_to(REPO).as_posix()
        for package, patterns in data.items()
        for pattern in patterns
        for path in package_folder(package).glob(pattern)
    }
    tracked = tracked_files(*PACKAGES)
    unshipped = [
        name
        for name in tracked
        if not name.endswith(".py") and name not in shipped and name not in NOT_SHIPPED
    ]
    assert not unshipped, f"add a package-data pattern or a NOT_SHIPPED reason for: {unshipped}"
    assert set(NOT_SHIPPED) <= set(tracked), "NOT_SHIPPED names a file that is gone"


def test_the_version_lives_in_pyproject_only():
    current = version()
    assert re.fullmatch(r"\d+\.\d+\.\d+", current), current
    for path in source_files(*PACKAGES, "bench"):
        text = path.read_text(encoding="utf-8")
        assert not _VERSION_ASSIGNMENT.search(text), (
            f"{path}: a __version__ literal (read installed_version())"
        )
        literals = [
            node.lineno
            for node in (ast.walk(ast.parse(text)) if current in text else ())
            if isinstance(node, ast.Constant) and node.value == current
        ]
        assert not literals, (
            f"{path}:{literals}: the version {current} written out (read installed_version())"
        )


def test_the_version_finder_finds_an_assignment():
    assert _VERSION_ASSIGNMENT.search('x = 1\n__version__ = "1.2.3"\n')
    assert _VERSION_ASSIGNMENT.search('__version__: str = "1.2.3"\n')
    assert not _VERSION_ASSIGNMENT.search("print(finmcp.__version__)\n")


_METADATA_FUNCTIONS = ("version", "distribution", "metadata", "files", "requires")


def _metadata_function(func: ast.expr) -> bool:
    """``metadata.version`` (any of importlib.metadata's by-name readers), or ``version`` imported bare."""
    if isinstance(func, ast.Attribute):
        owner = func.value
        named = isinstance(owner, ast.Name) and owner.id == "metadata"
        dotted = isinstance(owner, ast.Attribute) and owner.attr == "metadata"
        return func.attr in _METADATA_FUNCTIONS and (named or dotted)
    return isinstance(func, ast.Name) and func.id in ("version", "distribution")


def own_metadata_reads(tree: ast.AST) -> list[int]:
    """Lines calling ``metadata.version``/``metadata.distribution``/... with a literal name of ours.

    finmcp's own metadata is read under ``DISTRIBUTION`` (finmcp-kit): the literal ``"finmcp"`` names
    another project on the index, and is found in no installed environment of ours.
    """
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and _metadata_function(node.func)
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
        and node.args[0].value.lower().replace("_", "-").startswith("finmcp")
    ]


def test_finmcp_s_own_metadata_is_read_under_the_distribution_s_name():
    found = {
        str(path.relative_to(REPO)): lines
        for path in source_files(*PACKAGES, "bench")
        if (lines := own_metadata_reads(ast.parse(path.read_text(encoding="utf-8"))))
    }
    assert found == {}, f"read metadata.version(DISTRIBUTION) (finmcp.recordings.plumbing.flags): {found}"


def test_the_metadata_read_finder_finds_one():
    tree = ast.parse('from importlib import metadata\nx = 1\nv = metadata.version("finmcp")\n')
    assert own_metadata_reads(tree) == [3]
    assert own_metadata_reads(ast.parse('importlib.metadata.distribution("finmcp_kit")\n')) == [1]
    others = 'metadata.version("mcp")\nmetadata.version(DISTRIBUTION)\nresources.files("finmcp.server")\n'
    assert own_metadata_reads(ast.parse(others)) == []
