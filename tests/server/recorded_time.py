"""One recorded ``GetCurrentTime`` answer the server tests replay (and compare byte for byte)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from finmcp.recordings import RecordingStore

TIME = {"currentTime": "2025-08-28 10:00:00", "date": "2025-08-28", "timestamp": 1756346400000}
TIME_TEXT = json.dumps(TIME, ensure_ascii=False, indent=2)  # written out here, not by the code under test
PROVENANCE = "imported:unit.json"


def text_result(text: str, structured: Any = None) -> dict[str, Any]:
    """A successful tool result with one text item (and structured content when given)."""
    return {"content": [{"type": "text", "text": text}], "structuredContent": structured, "isError": False}


def record_time(store: RecordingStore) -> None:
    """Record the ``GetCurrentTime`` answer under the qieman79 inventory (what finmcp65 replays)."""
    store.put_response("qieman79", "GetCurrentTime", {}, text_result(TIME_TEXT, TIME), PROVENANCE)


def time_recordings(path: Path) -> Path:
    """A recordings file holding only the ``GetCurrentTime`` answer."""
    with RecordingStore.open(path) as store:
        record_time(store)
    return path
