"""``--help`` of the three programs loads none of the serving machinery, so it answers at once.

Each program builds its parsers from light modules (flags, options, defaults) and imports the MCP SDK,
Starlette/uvicorn, the inventories, the world and the stores only when a command runs. Checked on
what a fresh interpreter has imported after printing every help page, not on a stopwatch: a heavy
import creeping back into a parser module fails here on any machine, loaded or not.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY_PACKAGES = (
    "mcp",
    "mcp_types",
    "starlette",
    "uvicorn",
    "pydantic",
    "pydantic_core",
    "anyio",
    "httpx",
    "httpx2",
    "httpcore",
    "httptools",
    "uvloop",
    "jsonschema",
    "sqlite_utils",
    "sqlite3",
    "asyncio",
    "ssl",
    "psycopg",
    "pyarrow",
    "faker",
    "ray",
)
"""Third-party and standard-library packages that cost tens to hundreds of milliseconds to import."""
HEAVY_PROJECT = (
    "finmcp.server.serve",
    "finmcp.server.app",
    "finmcp.server.service",
    "finmcp.server.sim",
    "finmcp.server.world",
    "finmcp.tool_specs.inventory",
    "finmcp.proxy.serve",
    "finmcp.proxy.http_proxy",
    "finmcp.proxy.shipper",
    "finmcp.recordings.store",
    "finmcp.recordings.trace_store",
    "finmcp.evaluator.viewer.app",
    "finmcp.evaluator.harness.demo",
    "finmcp.evaluator.metrics",
    "finmcp.evaluator.reports",
)
"""Project modules that load the SDK, the inventories, the world or a store."""
HELP_PAGES = {
    "finmcp.server.cli": [
        [],
        ["serve"],
        ["inventories"],
        ["tools"],
        ["graph"],
        ["recordings"],
        ["recordings", "bake"],
    ],
    "finmcp.proxy.cli": [[], ["serve"], ["sessions"], ["show"], ["export"], ["audit"], ["flush"]],
    "finmcp.evaluator.cli": [[], ["score"], ["compare"], ["export"], ["run"], ["demo"], ["synth"], ["view"]],
}
PROBE = """
import contextlib, io, json, sys
from {module} import main
for words in {pages!r}:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            status = main([*words, "--help"])
        except SystemExit as exc:
            status = exc.code
    assert status in (0, None) and out.getvalue().startswith("usage: "), (words, status, out.getvalue()[:200])
print(json.dumps(sorted(sys.modules)))
"""


@pytest.mark.parametrize("module", HELP_PAGES)
def test_help_imports_none_of_the_heavy_machinery(module: str) -> None:
    code = PROBE.format(module=module, pages=HELP_PAGES[module])
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout)
    heavy = [
        name
        for name in loaded
        if name.split(".")[0] in HEAVY_PACKAGES
        or any(name == p or name.startswith(p + ".") for p in HEAVY_PROJECT)
    ]
    assert not heavy, f"{module} --help imported {heavy}"


def test_the_probe_sees_a_heavy_import() -> None:
    """The check itself: a command that runs (not --help) does load the machinery it needs."""
    code = "import sys\nfrom finmcp.server.cli import main\nmain(['tools', '--inventory', 'finmcp65'])\n"
    code += "print('finmcp.tool_specs.inventory' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("True")
