"""``python -m finmcp.server`` is ``finmcp-server``."""

import sys

from finmcp.server.cli import main

sys.exit(main())
