"""The PostgreSQL trace store's schema: migrations, versions, the calls contract."""

from __future__ import annotations

import threading

import pytest

from finmcp.recordings.errors import SchemaError, SchemaVersionError
from finmcp.recordings.postgres.connection import connect, is_postgres_url, redacted_url
from finmcp.recordings.postgres.schema import PG_CALLS_COLUMNS, SCHEMA_VERSION, current_version, migrate
from finmcp.recordings.schema import CALLS_COLUMNS
from tests.support.postgres import PostgresCluster


def test_urls_are_told_from_paths_and_passwords_never_shown() -> None:
    assert is_postgres_url("postgresql://u@h/db") and is_postgres_url("postgres://h/db")
    assert not is_postgres_url("traces.db") and not is_postgres_url(None)
    assert redacted_url("postgresql://alice:s3cret@db:5432/t") == "postgresql://alice:***@db:5432/t"
    assert redacted_url("postgresql://alice@db/t") == "postgresql://alice@db/t"


def test_a_new_database_is_migrated_and_calls_keep_the_evaluators_columns(postgres_url: str) -> None:
    with connect(postgres_url) as conn:
        assert current_version(conn) == SCHEMA_VERSION
        columns = [
            name
            for (name,) in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'calls' "
                "ORDER BY ordinal_position"
            )
        ]
        assert columns == list(PG_CALLS_COLUMNS)
        assert set(CALLS_COLUMNS) <= set(columns)
        assert migrate(conn) == SCHEMA_VERSION  # idempotent


def test_concurrent_openers_migrate_once(postgres_url: str) -> None:
    errors: list[BaseException] = []

    def open_once() -> None:
        try:
            connect(postgres_url).close()
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=open_once) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with connect(postgres_url) as conn:
        assert conn.execute("SELECT count(*) FROM finmcp_schema").fetchone()[0] == 1


def test_a_newer_schema_and_a_foreign_database_are_refused(
    postgres_cluster: PostgresCluster, postgres_url: str
) -> None:
    with connect(postgres_url) as conn:
        conn.execute("UPDATE finmcp_schema SET version = %s", (SCHEMA_VERSION + 1,))
    with pytest.raises(SchemaVersionError, match="newer than this finmcp"):
        connect(postgres_url)
    foreign = postgres_cluster.create_database()
    postgres_cluster.psql("CREATE TABLE accounts (id int)", database=foreign.rsplit("/", 1)[1])
    with pytest.raises(SchemaError, match="accounts"):
        connect(foreign)
