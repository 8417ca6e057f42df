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
DEFAULT_MAX_ANSWER = 16 * 1024 * 1024
"""``--max-answer``: bytes of one non-SSE upstream answer the proxy keeps for the trace. A ``tools/call``
answer over it is refused (502); any other is forwarded whole and stored as its first bytes, its
length and its SHA-256."""
DEFAULT_HEAD_TIMEOUT = 10.0
"""``--head-timeout``: seconds a client has to send a whole request head (from its connection's accept,
or from the request's first byte on a kept-alive connection); then 408 and close."""
DEFAULT_BODY_TIMEOUT = 30.0
"""``--body-timeout``: seconds a client has to send a whole request body once its head is read; then
408 and close."""
DEFAULT_IDLE_TIMEOUT = 75.0
"""``--idle-timeout``: seconds a kept-alive client connection may wait between requests; then it is closed."""
DEFAULT_MAX_CONNECTIONS = 1024
"""``--max-connections``: client connections open at once; one more is answered 503 and closed."""
DEFAULT_MAX_BUFFERED = 64 * 1024 * 1024
"""``--max-buffered``: request bytes buffered across all client connections (heads and bodies not yet
forwarded); the connection whose bytes pass it is answered 503 and closed."""
DEFAULT_MAX_EVENT_BYTES = 64 * 1024 * 1024
"""``--max-event-bytes``: the largest SSE event the proxy forwards (it holds an event's bytes until
its end; a longer one stops the stream, and its requests get an error)."""
DEFAULT_MAX_STREAM_MESSAGES = 10_000
"""``--max-stream-messages``: most messages (SSE events with data) on one POST's response stream;
past it the proxy stops the stream, and the requests still unanswered get an error."""
