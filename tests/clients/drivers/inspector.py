"""The MCP Inspector CLI (``mcp-inspector --cli``) through finmcp-proxy: one CLI process per request.

``python inspector.py --bin PATH/mcp-inspector --calls JSON (--url URL | --stdio CMD ARGS...)``.

Over stdio the driver runs the program ``mcp-inspector --cli`` spawns (``cli/build/index.js`` beside
the ``mcp-inspector`` script) as ``node index.js CMD --method M -- ARGS``: the ``--cli`` wrapper passes
the server's command line on without the ``--``, so the CLI parses the server's own flags and takes
any that share an Inspector option's name (finmcp-proxy's ``--transport stdio`` becomes the
Inspector's, and the proxy starts as an HTTP listener the CLI cannot talk to). Each
call's arguments go as ``--tool-arg key=value`` (the CLI converts each value by the tool's input schema,
so ``size=3`` arrives as the integer 3; a tool it cannot find keeps the strings). The CLI prints a result
as JSON and exits non-zero on a JSON-RPC error. Standard library only (runs with any Python).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from common import emit, outcome, parse


def main() -> None:
    argv = sys.argv[1:]
    at = argv.index("--bin")
    binary = argv[at + 1]
    args = parse(argv[:at] + argv[at + 2 :])
    if args.url:
        program, target_before, target_after = [binary, "--cli"], [args.url, "--transport", "http"], []
    else:
        inner = Path(binary).resolve().parent / "index.js"
        program, target_before, target_after = ["node", str(inner)], [args.stdio[0]], ["--", *args.stdio[1:]]

    def inspector(*method: str) -> subprocess.CompletedProcess[str]:
        command = [*program, *target_before, *method, *target_after]
        return subprocess.run(command, capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL)

    listed = inspector("--method", "tools/list")
    if listed.returncode != 0:
        sys.exit(f"tools/list failed: {listed.stderr[-1000:]}")
    outcomes = []
    for tool, arguments in args.calls:
        pairs: list[str] = [f"{key}={_text(value)}" for key, value in arguments.items()]
        done = inspector(
            "--method", "tools/call", "--tool-name", tool, *(["--tool-arg", *pairs] if pairs else [])
        )
        if done.returncode != 0:
            outcomes.append(outcome(tool, True, (done.stdout + done.stderr).strip()[-500:], raised=True))
            continue
        result = json.loads(done.stdout)
        error = result["content"][0]["text"] if result.get("isError") else None
        outcomes.append(outcome(tool, bool(result.get("isError")), error))
    emit(len(json.loads(listed.stdout)["tools"]), outcomes)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


if __name__ == "__main__":
    main()
