"""The shipper: drains a proxy's SQLite outbox into the PostgreSQL trace store, off the proxy's path.

The proxy stays local-first: a call's row is committed to its SQLite file before its response is
forwarded, whatever PostgreSQL is doing. With ``--ship-to URL`` that file is also an outbox
(:mod:`recordings.outbox`), and a :class:`Shipper` on a thread of its own, with its own SQLite and
psycopg connections, moves what changed to PostgreSQL every ``interval`` seconds in batches of up to
``batch_rows`` entries (:mod:`recordings.postgres.ingest`: COPY into staging, one idempotent insert
per table and the origin's progress, in one transaction), then deletes the shipped entries locally.

PostgreSQL unreachable: the proxy does not notice (nothing on its path waits for the shipper), the
outbox grows, and the shipper retries with backoff (``RETRY_FIRST`` doubling up to ``RETRY_MAX``
seconds), logging one line when shipping pauses and one when it resumes. Everything in the outbox
ships once PostgreSQL is back. One shipper per file (:func:`recordings.outbox.shipper_lock`); a second
process on the same file waits in ``standby`` and takes over when the first exits.

The URL's password never leaves this module: logs, ``/healthz`` and stored rows name the target with
the password replaced (:func:`safe_url`), and error texts are scrubbed of it.
"""

from __future__ import annotations

import contextlib
import logging
import re
import sqlite3
import threading
import time
from collections import deque
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from finmcp.proxy.defaults import DEFAULT_BATCH_ROWS, DEFAULT_INTERVAL
from finmcp.recordings.errors import RecordingsError
from finmcp.recordings.outbox import (
    Backlog,
    ShipperLockBusy,
    acknowledge,
    backlog,
    install_outbox,
    open_outbox,
    read_batch,
    shipper_lock,
)
from finmcp.recordings.postgres.connection import connect, redacted_url
from finmcp.recordings.postgres.ingest import Ingest
from finmcp.recordings.redact import redact_url

log = logging.getLogger("finmcp.proxy.shipper")

RETRY_FIRST = 0.25
RETRY_MAX = 2.0
HEARTBEAT = 1.0
"""Seconds between ``origins`` heartbeats while nothing needs shipping."""
CONNECT_TIMEOUT = 5
LAG_SAMPLES = 20_000


def safe_url(url: str) -> str:
    """The URL as shown anywhere: password (userinfo or ``?password=``) replaced."""
    return redact_url(redacted_url(url))


def url_secrets(url: str) -> list[str]:
    """The password of ``url`` as it may appear in an error text (raw and percent-decoded)."""
    found: list[str] = []
    with contextlib.suppress(ValueError):
        parts = urlsplit(url)
        userinfo = parts.netloc.rpartition("@")[0]
        if ":" in userinfo:
            raw = userinfo.split(":", 1)[1]
            found += [raw, unquote(raw)]
        found += [v for k, v in parse_qsl(parts.query) if k.lower() in ("password", "passwd")]
    return [s for s in found if s]


class Shipper:
    """Ships the outbox at ``db`` to ``url``: :meth:`start` a thread, or :meth:`drain` in the foreground."""

    def __init__(
        self,
        db: str,
        url: str,
        *,
        label: str,
        batch_rows: int = DEFAULT_BATCH_ROWS,
        interval: float = DEFAULT_INTERVAL,
        retry_max: float = RETRY_MAX,
    ) -> None:
        if batch_rows < 1:
            raise ValueError(f"shipping batch size must be at least 1 (got {batch_rows})")
        if interval <= 0:
            raise ValueError(f"shipping interval must be positive (got {interval})")
        self.db = db
        self.url = url
        self.target = safe_url(url)
        self.label = label
        self.batch_rows = batch_rows
        self.interval = interval
        self.retry_max = retry_max
        self._secrets = url_secrets(url)
        self._status_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._drain_deadline = 0.0
        self._pg: Any = None
        self._ingest: Ingest | None = None
        self._local: sqlite3.Connection | None = None
        self._down_since = 0.0
        self._delay = RETRY_FIRST
        self._last_beat = 0.0
        self.origin: str | None = None
        self.state = "starting"  # starting | shipping | down | standby | stopped
        self.waiting = Backlog()
        self.shipped_rows = 0
        self.batches = 0
        self.last_error: str | None = None
        self.lags: deque[float] = deque(maxlen=LAG_SAMPLES)

    # ---------------------------------------------------------------- running

    def start(self) -> None:
        """Ship on a daemon thread until :meth:`stop`."""
        self._thread = threading.Thread(target=self._thread_main, name="finmcp-shipper", daemon=True)
        self._thread.start()

    def stop(self, drain_timeout: float = 5.0) -> None:
        """Ship what is left for up to ``drain_timeout`` seconds (unless PostgreSQL is down), then stop."""
        self._drain_deadline = time.monotonic() + drain_timeout
        self._stop.set()
        if self._thread is not None:
            self._thread.join(drain_timeout + CONNECT_TIMEOUT + 5)
            self._thread = None
        if self.waiting.rows:
            log.warning(
                "%d rows remain in the outbox %s; they ship when a proxy with --ship-to runs on it again,"
                " or with: finmcp-proxy flush --db %s --ship-to URL",
                self.waiting.rows,
                self.db,
                self.db,
            )

    def drain(self, timeout: float) -> int:
        """Ship in the foreground until the outbox is empty or ``timeout`` passed; the rows left."""
        deadline = time.monotonic() + timeout
        self._stop.set()
        self._drain_deadline = deadline
        while True:
            try:
                with shipper_lock(self.db):
                    self._serve(forever=False)
                    return self.waiting.rows
            except ShipperLockBusy:
                self._set_state("standby", "another process ships this outbox; waiting for it to exit")
                if time.monotonic() >= deadline:
                    return max(self.waiting.rows, 1)
                time.sleep(min(0.5, self.interval * 2))

    def _thread_main(self) -> None:
        while True:
            try:
                with shipper_lock(self.db):
                    self._serve(forever=True)
                    return
            except ShipperLockBusy:
                self._set_state("standby", "another process ships this outbox; taking over when it exits")
                if self._stop.wait(1.0):
                    return
            except Exception as exc:  # a bug must not kill the thread silently: say so, then retry
                log.warning(
                    "shipper: unexpected %s: %s (retrying)", type(exc).__name__, self._scrub(str(exc))
                )
                if self._stop.wait(self.retry_max):
                    return

    def _serve(self, forever: bool) -> None:
        """Ship until stopped (``forever``) or until empty/past the drain deadline."""
        try:
            self._local = open_outbox(self.db)
            self.origin = install_outbox(self._local)
            self.waiting = backlog(self._local)
            while True:
                stopping = self._stop.is_set()
                if stopping and (
                    time.monotonic() >= self._drain_deadline or (forever and self.state == "down")
                ):
                    return
                more = self._cycle()
                if stopping and not more and self.state == "shipping":
                    return
                if more and self.state == "shipping":
                    continue
                pause = self._delay if self.state == "down" else self.interval
                if stopping:
                    time.sleep(min(pause, max(0.0, self._drain_deadline - time.monotonic())))
                elif self._stop.wait(pause):
                    continue
        finally:
            self._close_pg()
            if self._local is not None:
                self._local.close()
                self._local = None
            if self.state != "down":
                self.state = "stopped"

    def _cycle(self) -> bool:
        """One step: connect if needed, ship one batch (or heartbeat); True when more waits to ship now."""
        assert self._local is not None
        try:
            if self._ingest is None:
                self._connect()
            assert self._ingest is not None
            batch = read_batch(self._local, self.batch_rows)
            if batch is None:
                waiting = Backlog()
                if time.monotonic() - self._last_beat >= HEARTBEAT:
                    self._ingest.heartbeat(waiting)
                    self._last_beat = time.monotonic()
                self._shipping(waiting)
                return False
            shipped = self._ingest.ship(batch)
            done = time.time()
            self._last_beat = time.monotonic()
            with self._status_lock:
                self.shipped_rows += shipped
                self.batches += 1
                self.lags.extend(done - q for q in batch.queued)
            self._shipping(batch.after)
            try:
                acknowledge(self._local, batch.last_seq)
            except sqlite3.OperationalError as exc:  # locked for long: shipped again later (idempotent)
                log.warning("shipper: could not clear shipped entries yet: %s", exc)
            return batch.entries >= self.batch_rows
        except sqlite3.Error as exc:
            log.warning("shipper: reading the outbox %s failed: %s (retrying)", self.db, exc)
            self._close_pg()
            self._down(exc)
            return False
        except Exception as exc:  # psycopg.Error, RecordingsError (connect), a dropped socket
            self._close_pg()
            self._down(exc)
            return False

    # ---------------------------------------------------------------- PostgreSQL connection

    def _connect(self) -> None:
        self._pg = connect(
            self.url,
            application_name="finmcp-shipper",
            connect_timeout=CONNECT_TIMEOUT,
            keepalives=1,
            keepalives_idle=10,
        )
        # a batch is deleted from the outbox once PostgreSQL acknowledged it: the acknowledgement must
        # mean durable, whatever the server's default (synchronous_commit=off loses recent commits in
        # a crash, and with them rows the outbox no longer holds)
        self._pg.execute("SET synchronous_commit TO on")
        assert self.origin is not None
        self._ingest = Ingest(self._pg, self.origin, self.label)

    def _close_pg(self) -> None:
        self._ingest = None
        if self._pg is not None:
            with contextlib.suppress(Exception):
                self._pg.close()
            self._pg = None

    # ---------------------------------------------------------------- state and status

    def _shipping(self, waiting: Backlog) -> None:
        with self._status_lock:
            self.waiting = waiting
        if self.state == "shipping":
            return
        if self.state == "down":
            log.warning(
                "shipping to %s resumed after %.1f s; %d rows still waiting",
                self.target,
                time.monotonic() - self._down_since,
                waiting.rows,
            )
        else:
            log.info("shipping %s to %s as origin %s (%s)", self.db, self.target, self.origin, self.label)
        self.state = "shipping"
        self.last_error = None
        self._delay = RETRY_FIRST

    def _down(self, exc: BaseException) -> None:
        reason = self._scrub(" ".join(str(exc).split()) or type(exc).__name__)
        if isinstance(exc, RecordingsError):
            reason = reason.replace(redacted_url(self.url), self.target)
        if self._local is not None:
            with contextlib.suppress(sqlite3.Error):
                waiting = backlog(self._local)
                with self._status_lock:
                    self.waiting = waiting
        if self.state != "down":
            self._down_since = time.monotonic()
            log.warning(
                "shipping to %s paused: %s; %d rows wait in the outbox (retrying with backoff)",
                self.target,
                reason,
                self.waiting.rows,
            )
            self._delay = RETRY_FIRST
        else:
            self._delay = min(self._delay * 2, self.retry_max)
        self.state = "down"
        self.last_error = reason

    def _set_state(self, state: str, message: str) -> None:
        if self.state != state:
            log.warning("shipping %s: %s", self.db, message)
            self.state = state

    def _scrub(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    def status(self) -> dict[str, Any]:
        """The shipping fields of ``/healthz``."""
        now = time.time()
        with self._status_lock:
            waiting = self.waiting
            lags = sorted(self.lags)
            shipped, batches = self.shipped_rows, self.batches
        return {
            "target": self.target,
            "origin": self.origin,
            "state": self.state,
            "outbox_pending_rows": waiting.rows,
            "pending_runs": list(waiting.runs),
            "lag_seconds": round(waiting.lag_seconds(now), 3),
            "shipped_rows": shipped,
            "batches": batches,
            "shipped_lag_ms": _percentiles(lags),
            "last_error": self.last_error,
        }


def _percentiles(sorted_lags: list[float]) -> dict[str, float | None]:
    """p50/p99 of recent shipping lags (seconds in, milliseconds out)."""
    if not sorted_lags:
        return {"p50": None, "p99": None}
    last = len(sorted_lags) - 1

    def at(q: float) -> float:
        return round(sorted_lags[min(last, int(q * len(sorted_lags)))] * 1000, 1)

    return {"p50": at(0.50), "p99": at(0.99)}


def is_ship_target(value: str) -> bool:
    """Whether ``value`` names a PostgreSQL server (``postgresql://`` or ``postgres://``)."""
    return bool(re.match(r"^postgres(?:ql)?://", value))
