"""``python -m finmcp.proxy``: the same program as ``finmcp-proxy``."""

import sys

from finmcp.proxy.cli import main

sys.exit(main())
