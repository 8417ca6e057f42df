"""Every Qieman call of the official FinMCP-Bench sample files, sent to a real server process.

The recorded outputs are imported with :mod:`recordings.import_finmcp`; the server runs with
``--miss strict``, so each call is either replayed exactly or (when the sample holds no usable output,
e.g. a failed batch) answered with a clear "no recording" result. No call may be rejected as invalid.
"""

from __future__ import annotations

import json
from collections import defaultdict

import anyio
import mcp_types as types
import pytest
from mcp.client import Client

from finmcp.recordings import RecordingStore
from finmcp.recordings.canonical import args_key
from finmcp.recordings.import_finmcp import import_finmcp
from finmcp.server.service import SOURCE_KEY
from finmcp.tool_specs.inventory import load_inventory
from tests.support.finmcp_samples import FILES, official_calls
from tests.support.sdk import first_text


@pytest.fixture(scope="module")
def official(shared_dir, module_children, tmp_path_factory):
    inventory = load_inventory("qieman79")
    schemas = {t.name: t.input_schema for t in inventory.tools}
    path = tmp_path_factory.mktemp("official") / "recordings.sqlite"
    with RecordingStore.open(path) as store:
        for name in FILES:
            import_finmcp(
                store, shared_dir / "finmcp" / name, known_tools=set(schemas), input_schemas=schemas
            )
        recorded = {(r["tool"], r["args_key"]) for r in store.iter_responses()}
    calls, texts = official_calls(shared_dir, set(schemas))
    args = ["--inventory", "finmcp65", "--miss", "strict", "--recordings", str(path), "--latency", "none"]
    return module_children.server(args), calls, texts, recorded, schemas


@pytest.mark.shared
@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_every_official_qieman_call_is_accepted_and_answered(official, mode):
    proc, calls, texts, recorded, schemas = official
    assert len(calls) > 60
    sources: defaultdict[str, int] = defaultdict(int)

    async def main():
        async with Client(proc.url, mode=mode) as client:
            await client.list_tools()
            for tool, arguments in calls:
                # session.send_request: the raw answer, without the SDK client's outputSchema check
                result = await client.session.send_request(
                    types.CallToolRequest(params=types.CallToolRequestParams(name=tool, arguments=arguments)),
                    types.CallToolResult,
                )
                source = result.meta[SOURCE_KEY]
                sources[source] += 1
                text = first_text(result)
                if (tool, args_key(arguments, schemas[tool])) in recorded:
                    assert source == "replay" and not result.is_error, (tool, arguments, text)
                    assert text in texts[(tool, json.dumps(arguments, sort_keys=True))]
                    if result.structured_content is not None:  # JSON outputs also pass the SDK's own check
                        checked = await client.call_tool(tool, arguments)
                        assert checked.structured_content == result.structured_content
                else:
                    assert source == "miss" and text.startswith(f"No recording for these arguments: {tool}")

    anyio.run(main)
    assert sources["invalid"] == 0 and sources["replay"] > 50
