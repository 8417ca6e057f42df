"""Reading input files and the record fields every reader shares.

:func:`read_records` reads a JSON document (a list, or an object with ``samples``) or a JSONL file,
optionally gzipped. :func:`sample_id`, :func:`parse_arguments` and :class:`Problems` are what the
reference and prediction readers of every format have in common.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from finmcp.evaluator.errors import EvalInputError, where


class Problems:
    """Collects the problems of one sample, each prefixed with the sample id and the field path."""

    def __init__(self, sample_id: object) -> None:
        self.sample_id = sample_id
        self.items: list[str] = []

    def add(self, field_path: str, message: str) -> None:
        """Record one problem of ``field_path``."""
        self.items.append(f"{where(self.sample_id, field_path)}: {message}")


def read_records(path: str | Path) -> tuple[list[Any], str]:
    """Read a JSON document (list, or object with 'samples') or a JSONL file, optionally gzipped;
    return (records, kind)."""
    path = Path(path)
    if not path.is_file():
        raise EvalInputError(f"file not found: {path}")
    raw = path.read_bytes()
    if path.suffix == ".gz":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise EvalInputError(f"{path}: not a valid gzip file: {exc}") from None
    text = raw.decode("utf-8-sig")
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise EvalInputError(f"{path}: not valid JSON: {exc}") from None
        return doc, "json"
    if stripped.startswith("{"):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError:
            doc = None
        if isinstance(doc, dict):
            return (doc["samples"] if isinstance(doc.get("samples"), list) else [doc]), "json"
    records: list[Any] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise EvalInputError(f"{path}: line {lineno}: not valid JSON: {exc}") from None
    return records, "jsonl"


def sample_id(rec: Any, index: int) -> str:
    """A record's sample id: its ``id`` (or ``task_id``) as text, else ``#<index>``."""
    if isinstance(rec, dict):
        for key in ("id", "task_id"):
            value = rec.get(key)
            if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value) != "":
                return str(value)
    return f"#{index}"


def parse_arguments(raw: Any) -> tuple[dict[str, Any], bool]:
    """Arguments given as an object or a JSON string; returns (arguments, malformed)."""
    if raw is None or raw == "":
        return {}, False
    if isinstance(raw, dict):
        return raw, False
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            return {}, True
        if isinstance(value, dict):
            return value, False
    return {}, True


def text(value: Any) -> str:
    """``value`` when it is a string, else ''."""
    return value if isinstance(value, str) else ""
