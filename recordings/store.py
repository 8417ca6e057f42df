"""``RecordingStore``: the one object server, proxy and evaluator use to reach a finmcp database."""

from __future__ import annotations

from recordings.responses import ResponsesMixin
from recordings.trace import TraceMixin
from recordings.trace_read import TraceReadMixin


class RecordingStore(ResponsesMixin, TraceMixin, TraceReadMixin):
    """A finmcp SQLite database: recorded responses plus logged traces.

    ``RecordingStore.open(path)`` creates or migrates the file (see :mod:`recordings.schema`) and
    is a context manager. One connection guarded by a re-entrant lock serves every thread of the
    process; writes commit immediately unless grouped with :meth:`transaction`.

    - responses: :meth:`put_response`, :meth:`get_response`, :meth:`get_response_by_key`,
      :meth:`iter_responses`, :meth:`count`;
    - traces (proxy): :meth:`ensure_run`, :meth:`start_session`, :meth:`update_session`,
      :meth:`end_session`, :meth:`log_message`, :meth:`begin_call`, :meth:`finish_call`,
      :meth:`set_groups`;
    - reading traces (evaluator, CLI): :meth:`calls`, :meth:`runs`, :meth:`sessions`, :meth:`messages`.
    """
