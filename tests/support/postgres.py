"""A throwaway PostgreSQL cluster for the tests: initdb in a temporary folder, loopback only.

PostgreSQL refuses to run as root, so when the tests run as root (CI does) the cluster's files belong
to ``nobody`` and ``initdb``/``pg_ctl`` run as that user. The cluster listens on 127.0.0.1 and a
socket in its own folder, trusts local connections (a test cluster, never a shared one) and runs with
``fsync=off`` (durability against an OS crash is not what the tests measure; a killed or immediately
stopped server is still recovered from its WAL).

Where PostgreSQL is not installed the tests that need it skip with a reason, except under
``FINMCP_CI=1``, where CI promised to provide it and a skip would hide a missing install step: there
they fail instead (:func:`require_or_skip`).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import NoReturn

import pytest

from tests.support.net import free_port

RUN_AS = "nobody"


def in_ci() -> bool:
    """True when CI runs the suite (``FINMCP_CI=1``): needed services must be there, not skipped."""
    return os.environ.get("FINMCP_CI", "") not in ("", "0")


def require_or_skip(reason: str) -> NoReturn:
    """Skip with ``reason``, or fail under CI, where a skipped service test is a missing install step."""
    if in_ci():
        pytest.fail(f"{reason} (FINMCP_CI=1: CI must provide it; .ci/run installs it)", pytrace=False)
    pytest.skip(reason)


def postgres_bin_dir() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl`` (newest installed major version), or None."""
    env = os.environ.get("FINMCP_PG_BIN")
    candidates = [env] if env else []
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_major, reverse=True)
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(str(Path(on_path).parent))
    for folder in candidates:
        if folder and (Path(folder) / "initdb").exists() and (Path(folder) / "pg_ctl").exists():
            return Path(folder)
    return None


def _major(folder: str) -> int:
    try:
        return int(Path(folder).parent.name)
    except ValueError:
        return 0


class PostgresCluster:
    """One PostgreSQL server in a temporary folder; :meth:`stop`/:meth:`start` for outage tests."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir
        self.root = Path(tempfile.mkdtemp(prefix="finmcp-pg-"))
        self.data = self.root / "data"
        self.socket_dir = self.root / "sock"
        self.log = self.root / "server.log"
        self.port = free_port()
        self._as_root = os.geteuid() == 0
        self._initdb()

    # -- lifecycle -------------------------------------------------------------------------------

    def _run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        command = [str(self.bin_dir / argv[0]), *argv[1:]]
        user = pwd.getpwnam(RUN_AS) if self._as_root else None
        result = subprocess.run(
            command,
            capture_output=True,
            text=True,
            cwd=self.root,
            timeout=120,
            check=False,
            user=user.pw_uid if user else None,
            group=user.pw_gid if user else None,
            extra_groups=[] if user else None,
        )
        if check and result.returncode != 0:
            log = self.log.read_text(errors="replace") if self.log.exists() else ""
            raise RuntimeError(f"{' '.join(argv)} failed ({result.returncode}):\n{result.stderr}\n{log}")
        return result

    def _initdb(self) -> None:
        self.socket_dir.mkdir()
        if self._as_root:
            user = pwd.getpwnam(RUN_AS)
            for path in (self.root, self.socket_dir):
                os.chown(path, user.pw_uid, user.pw_gid)
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync")

    def start(self) -> None:
        """Start (or restart) the server and wait until it accepts connections."""
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.socket_dir} -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "start")

    def stop(self, mode: str = "fast") -> None:
        """``pg_ctl stop -m MODE`` (``immediate`` is a crash: no shutdown checkpoint)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop", check=False)

    def destroy(self) -> None:
        """Stop the server and remove its folder."""
        self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)

    # -- databases -------------------------------------------------------------------------------

    def url(self, database: str = "postgres") -> str:
        """A ``postgresql://`` URL for ``database`` over loopback TCP."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str | None = None) -> str:
        """Create an empty database and return its URL (each test gets its own)."""
        name = name or f"t_{uuid.uuid4().hex[:12]}"
        self.psql(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def psql(self, sql: str, database: str = "postgres") -> str:
        """Run one SQL statement through ``psql`` and return its unaligned output."""
        psql = self.bin_dir / "psql"
        if not psql.exists():
            psql = Path(shutil.which("psql") or "psql")
        result = subprocess.run(
            [str(psql), "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql, self.url(database)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(f"psql {sql!r} failed: {result.stderr}")
        return result.stdout.strip()

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Wait until a new connection succeeds (after :meth:`start`)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.psql("SELECT 1")
                return
            except RuntimeError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)


def start_cluster() -> PostgresCluster:
    """A started cluster, or a skip (a failure under CI) when PostgreSQL or psycopg is missing."""
    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        require_or_skip(
            "PostgreSQL (initdb, pg_ctl) is not installed; set FINMCP_PG_BIN or install postgresql"
        )
    assert bin_dir is not None
    try:
        import psycopg  # noqa: F401
    except ImportError:
        require_or_skip("psycopg is not installed (pip install -e '.[postgres]')")
    cluster = PostgresCluster(bin_dir)
    cluster.start()
    return cluster
