"""The proxy's defaults, in a module that loads nothing: the command line's parser reads them.

``finmcp-proxy --help`` builds its parsers from light modules only (tests/reliability/test_help_is_light.py
checks what it loads); the serving and shipping machinery import these values from here.
"""

from __future__ import annotations

DEFAULT_PORT = 8766
"""Where ``finmcp-proxy`` listens unless ``--port`` says otherwise."""
DEFAULT_BATCH_ROWS = 2000
"""``--ship-batch``: most outbox entries per shipment to PostgreSQL."""
DEFAULT_INTERVAL = 0.2
"""``--ship-interval``: seconds between shipments while the outbox is not full."""
DEFAULT_MAX_EVENT_BYTES = 64 * 1024 * 1024
"""``--max-event-bytes``: the largest SSE event the proxy forwards (it holds an event's bytes until
its end; a longer one stops the stream, and its requests get an error)."""
DEFAULT_MAX_STREAM_MESSAGES = 10_000
"""``--max-stream-messages``: most messages (SSE events with data) on one POST's response stream;
past it the proxy stops the stream, and the requests still unanswered get an error."""
