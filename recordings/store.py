"""``RecordingStore``: the recordings (the cassette): recorded answers, keyed by inventory, tool and arguments.

The trace store (what the proxy logs) is :class:`recordings.trace_store.SqliteTraceStore`; both live
in the same kind of SQLite file (one schema, :mod:`recordings.schema`) and share
:class:`recordings.connection.StoreConnection`, so one file may hold both (the proxy's record mode
writes answers into its trace file through :meth:`RecordingStore.sharing`).
"""

from __future__ import annotations

from finmcp.recordings.declarations import DeclarationsMixin
from finmcp.recordings.digest import recordings_digest
from finmcp.recordings.responses import ResponsesMixin


class RecordingStore(ResponsesMixin, DeclarationsMixin):
    """A finmcp recordings file: recorded answers and their sequences, and what recorded servers declared.

    ``RecordingStore.open(path)`` creates or migrates the file (see :mod:`recordings.schema`) and
    is a context manager. One connection guarded by a re-entrant lock serves every thread of the
    process; writes commit immediately unless grouped with :meth:`transaction`.

    :meth:`put_response`, :meth:`get_response`, :meth:`get_response_by_key`,
    :meth:`append_response_step`, :meth:`response_steps`, :meth:`iter_responses`, :meth:`count`,
    :meth:`content_digest`; :meth:`put_declaration`, :meth:`declaration`, :meth:`declared_servers`
    (:mod:`recordings.declarations`).
    """

    def content_digest(self) -> str:
        """``sha256:<hex>`` of what the recordings serve (:mod:`recordings.digest`): unchanged by a
        checkpoint or a re-import of the same answers, changed by any answer added, removed or altered."""
        return recordings_digest(self._conn, self._locked)
