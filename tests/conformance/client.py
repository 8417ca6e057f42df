"""The command the conformance suite's client scenarios run: ``python client.py [--proxy-db DB] URL``.

``conformance client --command "python client.py"`` starts one test server per scenario, appends its
URL and names the scenario in ``MCP_CONFORMANCE_SCENARIO``. With ``$FINMCP_CONFORMANCE_CLIENT_SERVICE``
(``host:port``, set by the tests) this script hands scenario, URL and ``--proxy-db`` to the tests'
:class:`tests.conformance.sdk_client.ClientService`, which plays it with the already imported mcp
SDK, and exits with its status; without it, it plays the scenario itself
(:func:`tests.conformance.sdk_client.play`). Only the standard library is imported on the first path.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from pathlib import Path

SERVICE_ENV = "FINMCP_CONFORMANCE_CLIENT_SERVICE"
TIMEOUT_S = 120.0  # not a speed limit: the suite's own timeout ends a scenario first


def main(argv: list[str] | None = None) -> int:
    """Play ``$MCP_CONFORMANCE_SCENARIO`` against the URL (through a proxy with ``--proxy-db``)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--proxy-db", help="start finmcp-proxy with this trace store in front of URL")
    parser.add_argument("url")
    args = parser.parse_args(argv)
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    service = os.environ.get(SERVICE_ENV)
    if not service:
        sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
        from tests.conformance.sdk_client import play

        play(scenario, args.url, args.proxy_db)
        return 0
    host, _, port = service.rpartition(":")
    request = {"scenario": scenario, "url": args.url, "proxy_db": args.proxy_db}
    with socket.create_connection((host, int(port)), timeout=TIMEOUT_S) as conn:
        conn.sendall(json.dumps(request).encode() + b"\n")
        answer = json.loads(conn.makefile("rb").readline())
    if answer.get("error"):
        print(answer["error"], file=sys.stderr)
    return int(answer["exit"])


if __name__ == "__main__":
    sys.exit(main())
