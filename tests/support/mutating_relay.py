"""A stdio relay that launches a real MCP server and applies one named mutation to what it relays.

``python -m tests.support.mutating_relay [--mutation NAME] [--tool TOOL] -- CMD ARGS...`` reads
JSON-RPC lines from its stdin, passes them to CMD's stdin, and passes CMD's lines back, changing
the ``tools/list`` answer or the ``tools/call`` results by the mutation (the drift audit's mutation
corpus, tests/thirdparty/test_drift_audit.py). In every mode the relayed tools are annotated
``readOnlyHint: true`` (as their authors could have), so the unchanged relay is the baseline.

Mutations (on ``--tool``, default ``get_current_time``):
``none``; ``remove-tool``; ``param-type`` (the first required parameter becomes an integer);
``required-param`` (a new required parameter ``format``); ``description``; ``destructive``
(``readOnlyHint: false, destructiveHint: true``); ``output-schema`` (a new optional output property; a required one the answers lack
would make the SDK client reject every answer);
``value-drift`` (``day_of_week`` answered as ``Someday``); ``volatile`` (a new per-call
``request_id`` UUID in every answer).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import uuid
from typing import Any

MUTATIONS = (
    "none",
    "remove-tool",
    "param-type",
    "required-param",
    "description",
    "destructive",
    "output-schema",
    "value-drift",
    "volatile",
)


def mutate_tools(tools: list[dict[str, Any]], mutation: str, target: str) -> list[dict[str, Any]]:
    """The relayed ``tools/list`` tools."""
    out = []
    for tool in tools:
        tool = json.loads(json.dumps(tool))
        tool["annotations"] = {**(tool.get("annotations") or {}), "readOnlyHint": True}
        if tool.get("name") == target:
            if mutation == "remove-tool":
                continue
            schema = tool.setdefault("inputSchema", {"type": "object"})
            props = schema.setdefault("properties", {})
            if mutation == "param-type":
                first = (schema.get("required") or list(props))[0]
                props[first] = {**props[first], "type": "integer"}
            elif mutation == "required-param":
                props["format"] = {"type": "string", "description": "output format"}
                schema["required"] = [*(schema.get("required") or []), "format"]
            elif mutation == "description":
                tool["description"] = str(tool.get("description", "")) + " (now with more detail)"
            elif mutation == "destructive":
                tool["annotations"] = {**tool["annotations"], "readOnlyHint": False, "destructiveHint": True}
            elif mutation == "output-schema":
                output = tool.get("outputSchema") or {"type": "object", "properties": {}}
                output.setdefault("properties", {})["utc_offset"] = {"type": "string"}
                tool["outputSchema"] = output
        out.append(tool)
    return out


def _rewrite_text(content: list[Any], change: Any) -> list[Any]:
    blocks = []
    for block in content:
        if isinstance(block, dict) and isinstance(block.get("text"), str):
            try:
                value = json.loads(block["text"])
            except ValueError:
                value = None
            if isinstance(value, dict):
                block = {**block, "text": json.dumps(change(value), indent=2)}
        blocks.append(block)
    return blocks


def mutate_result(result: dict[str, Any], mutation: str) -> dict[str, Any]:
    """A relayed ``tools/call`` result."""
    if mutation == "value-drift":

        def change(value: dict[str, Any]) -> dict[str, Any]:
            return {k: ("Someday" if k == "day_of_week" else v) for k, v in value.items()}
    elif mutation == "volatile":
        request_id = str(uuid.uuid4())

        def change(value: dict[str, Any]) -> dict[str, Any]:
            return {**value, "request_id": request_id}
    else:
        return result
    out = dict(result)
    if isinstance(out.get("structuredContent"), dict):
        out["structuredContent"] = change(out["structuredContent"])
    if isinstance(out.get("content"), list):
        out["content"] = _rewrite_text(out["content"], change)
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    cut = argv.index("--") if "--" in argv else len(argv)
    p = argparse.ArgumentParser(prog="mutating_relay")
    p.add_argument("--mutation", choices=MUTATIONS, default="none")
    p.add_argument("--tool", default="get_current_time")
    args = p.parse_args(argv[:cut])
    command = argv[cut + 1 :]
    if not command:
        p.error("expected the server command after --")
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    methods: dict[str, str] = {}
    lock = threading.Lock()

    def upward() -> None:
        assert child.stdin is not None
        for line in sys.stdin.buffer:
            try:
                msg = json.loads(line)
            except ValueError:
                msg = None
            if isinstance(msg, dict) and "method" in msg and "id" in msg:
                with lock:
                    methods[json.dumps(msg["id"])] = msg["method"]
            child.stdin.write(line)
            child.stdin.flush()
        child.stdin.close()

    threading.Thread(target=upward, daemon=True).start()
    out = sys.stdout.buffer
    for line in child.stdout:
        try:
            msg = json.loads(line)
        except ValueError:
            msg = None
        if isinstance(msg, dict) and "id" in msg and isinstance(msg.get("result"), dict):
            with lock:
                method = methods.pop(json.dumps(msg["id"]), None)
            if method == "tools/list" and isinstance(msg["result"].get("tools"), list):
                msg["result"]["tools"] = mutate_tools(msg["result"]["tools"], args.mutation, args.tool)
            elif method == "tools/call":
                msg["result"] = mutate_result(msg["result"], args.mutation)
            line = (json.dumps(msg) + "\n").encode()
        out.write(line)
        out.flush()
    return child.wait()


if __name__ == "__main__":
    sys.exit(main())
