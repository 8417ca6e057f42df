"""Schema 7: ``model_exchanges``, one row per request an agent sent through the proxy's model door.

Written by the proxy (``proxy/model_door.py``) through :mod:`recordings.model_exchanges`, read by the
evaluator's report (tokens, cost, model time) and by :func:`recordings.model_exchanges.final_answers`.

Columns: the tags (``run_id``, ``sample_id``, ``trial``, ``turn``; NULL when the request had none),
``api`` (``chat`` | ``responses`` | ``messages`` | ``other``), ``method``, ``path`` (after the tags),
``model``, ``stream`` (0/1), ``status`` (``open`` while the answer is on its way, then ``ok`` |
``http_error`` | ``upstream_error`` | ``cut`` | ``cancelled``), ``http_status``, ``request`` and
``request_headers`` (redacted), ``answer`` (redacted: the JSON answer, a stream assembled into the
answer it stands for, or the raw text when it is not what the API promises), ``input_tokens``,
``output_tokens``, ``cached_tokens`` (as the upstream reported them; NULL with ``usage_note`` saying
why when it did not), ``finish_reason``, ``tool_calls`` (JSON list of ``{id, name, arguments}``),
``final_text`` (the text of an answer that asked for no tool), ``error``, ``t_req_ns`` (monotonic),
``wall_time``, ``ttft_ms`` (request arrival to the first answer byte), ``duration_ms``.
"""

from __future__ import annotations

from sqlite_utils import Database

MODEL_EXCHANGES_DDL = (
    """CREATE TABLE "model_exchanges" (
   "id" INTEGER PRIMARY KEY,
   "run_id" TEXT,
   "sample_id" TEXT,
   "trial" INTEGER,
   "turn" INTEGER,
   "api" TEXT NOT NULL,
   "method" TEXT NOT NULL,
   "path" TEXT NOT NULL,
   "model" TEXT,
   "stream" INTEGER NOT NULL DEFAULT 0,
   "status" TEXT NOT NULL,
   "http_status" INTEGER,
   "request" TEXT,
   "request_headers" TEXT,
   "answer" TEXT,
   "input_tokens" INTEGER,
   "output_tokens" INTEGER,
   "cached_tokens" INTEGER,
   "usage_note" TEXT,
   "finish_reason" TEXT,
   "tool_calls" TEXT,
   "final_text" TEXT,
   "error" TEXT,
   "t_req_ns" INTEGER NOT NULL,
   "wall_time" TEXT NOT NULL,
   "ttft_ms" REAL,
   "duration_ms" REAL
)""",
    """CREATE INDEX "model_exchanges_run_sample"
    ON "model_exchanges" ("run_id", "sample_id", "trial", "turn")""",
)


def create_model_exchanges(db: Database) -> None:
    """Migration 7: the model door's table."""
    for statement in MODEL_EXCHANGES_DDL:
        db.execute(statement)
