"""``python -m server`` is ``finmcp-server``."""

import sys

from server.cli import main

sys.exit(main())
