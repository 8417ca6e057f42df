"""Opening the PostgreSQL trace store from a ``postgresql://`` URL."""

from __future__ import annotations

from typing import Any

from finmcp.recordings.errors import RecordingsError
from finmcp.recordings.postgres.schema import migrate

URL_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(target: object) -> bool:
    """True for a ``postgresql://`` (or ``postgres://``) URL, False for a SQLite path."""
    return isinstance(target, str) and target.startswith(URL_SCHEMES)


def redacted_url(url: str) -> str:
    """The URL with any password replaced by ``***`` (for messages and logs)."""
    scheme, sep, rest = url.partition("://")
    userinfo, at, host = rest.rpartition("@")
    if not at or ":" not in userinfo:
        return url
    user = userinfo.split(":", 1)[0]
    return f"{scheme}{sep}{user}:***@{host}"


def connect(url: str, *, autocommit: bool = True, migrate_schema: bool = True, **options: Any) -> Any:
    """A psycopg connection to the trace store at ``url``, migrated to the current schema.

    Raises :class:`RecordingsError` with the (password-redacted) URL and the reason when psycopg is
    not installed or the server cannot be reached.
    """
    try:
        import psycopg
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise RecordingsError(
            "a postgresql:// trace store needs psycopg: pip install 'finmcp-kit[postgres]'"
        ) from exc
    try:
        conn = psycopg.connect(url, autocommit=autocommit, **options)
    except psycopg.Error as exc:
        raise RecordingsError(f"cannot connect to {redacted_url(url)}: {exc}".strip()) from exc
    if migrate_schema:
        try:
            migrate(conn)
        except BaseException:
            conn.close()
            raise
    return conn
