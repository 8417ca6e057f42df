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
