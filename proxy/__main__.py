"""``python -m proxy``: the same program as ``finmcp-proxy``."""

import sys

from proxy.cli import main

sys.exit(main())
