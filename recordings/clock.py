"""Timestamps as stored: ISO-8601 UTC text with microseconds and a ``Z`` suffix."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now_iso() -> str:
    """The current UTC time, e.g. ``2026-05-09T07:35:25.123456Z``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
