"""``python -m finmcp.evaluator``: the same program as ``finmcp-eval``."""

import sys

from finmcp.evaluator.cli import main

sys.exit(main())
