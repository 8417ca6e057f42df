"""Build the sdist and the wheel as a release does, from a clean copy of the checkout, and read them back.

The copy holds what git would ship (tracked files, and new ones not ignored), so a stray ``build/``,
``dist/``, ``.venv`` or ``*.egg-info`` of the developer's never reaches the build. ``python -m build``
builds the sdist first and the wheel from the unpacked sdist, in isolated environments whose build
requirements come from the package index (pip's cache): a file the sdist forgets breaks the wheel.
"""

from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

from tests.packaging.project import pyproject, wheel_stem
from tests.support.postgres import require_or_skip
from tests.support.source import PACKAGES, REPO, TOP

BUILD_TIMEOUT_S = 600


@dataclass(frozen=True)
class Dists:
    """The built sdist and wheel, and how long the build took."""

    sdist: Path
    wheel: Path
    seconds: float

    def wheel_names(self) -> list[str]:
        with zipfile.ZipFile(self.wheel) as archive:
            return archive.namelist()

    def wheel_text(self, name: str) -> str:
        with zipfile.ZipFile(self.wheel) as archive:
            return archive.read(name).decode("utf-8")

    def sdist_names(self) -> list[str]:
        """The sdist's members, without the ``finmcp_kit-VERSION/`` folder they all sit in."""
        with tarfile.open(self.sdist) as archive:
            names = archive.getnames()
        root = wheel_stem() + "/"
        assert all(name == root[:-1] or name.startswith(root) for name in names), names[:5]
        return [name[len(root) :] for name in names if name.startswith(root)]

    def entry_points(self) -> dict[str, str]:
        """The wheel's console scripts: command -> ``module:function``."""
        parser = configparser.ConfigParser()
        parser.read_string(self.wheel_text(f"{wheel_stem()}.dist-info/entry_points.txt"))
        return dict(parser["console_scripts"])


def checkout_files() -> list[str]:
    """What git would ship from the checkout: tracked files (still present) and new, unignored ones."""
    try:
        done = subprocess.run(
            ["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        require_or_skip("not a git checkout: the files to build from cannot be listed")
    return sorted({name for name in done.stdout.split("\0") if name and (REPO / name).is_file()})


def copy_checkout(dest: Path) -> Path:
    """Copy :func:`checkout_files` to ``dest`` (created); returns ``dest``."""
    for name in checkout_files():
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, target)
    return dest


def build(source: Path, outdir: Path) -> Dists:
    """``python -m build`` (sdist, then the wheel from it) of ``source`` into ``outdir``."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(outdir), str(source)],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, f"python -m build failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    (sdist,) = outdir.glob("*.tar.gz")
    (wheel,) = outdir.glob("*.whl")
    return Dists(sdist, wheel, time.monotonic() - started)


def package_data_files() -> list[str]:
    """Every checkout file the package-data patterns ship, as its path in the wheel (``finmcp/...``)."""
    found = set()
    for package, patterns in pyproject()["tool"]["setuptools"]["package-data"].items():
        folder = REPO.joinpath(*package.split(".")[1:])
        for pattern in patterns:
            found |= {f"{TOP}/{p.relative_to(REPO).as_posix()}" for p in folder.glob(pattern) if p.is_file()}
    return sorted(found)


def module_files() -> list[str]:
    """Every ``.py`` file of the five folders that the checkout ships, as its path in the wheel."""
    return [
        f"{TOP}/{name}"
        for name in checkout_files()
        if name.split("/")[0] in PACKAGES and name.endswith(".py")
    ]
