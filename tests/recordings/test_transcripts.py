"""finmcp.recordings.transcripts: one representation of a call's outcome for exports, the trace reader and agents."""

from __future__ import annotations

import json

import pytest

from finmcp.recordings.transcripts import (
    ChatCall,
    ChatTurn,
    call_id,
    chat_messages,
    failure,
    observation,
    result_text,
)

TEXT = {
    "content": [{"type": "text", "text": "a"}, {"type": "image", "data": "x"}, {"text": "b"}],
    "isError": False,
}
TOOL_ERROR_TEXT = "fundCode: required argument is missing"
TOOL_ERROR = {"content": [{"type": "text", "text": TOOL_ERROR_TEXT}], "isError": True}
SILENT_TOOL_ERROR = {"content": [], "isError": True}
RPC_ERROR = {"code": -32602, "message": "Unknown tool: NoSuchTool"}


def test_result_text_joins_text_blocks_else_structured_content() -> None:
    assert result_text(TEXT) == "a\nb"
    assert result_text({"content": [], "structuredContent": {"基金": 1}}) == '{\n  "基金": 1\n}'
    assert result_text({"content": [{"type": "image", "data": "x"}]}) == ""
    assert result_text(None) == ""


@pytest.mark.parametrize(
    ("result", "error", "status", "finmcp", "fintoolbench"),
    [
        (TEXT, None, "ok", "a\nb", "a\nb"),
        # FinMCP-Bench's inference keeps an isError result's text; FinToolBench's agent stores {"error": ...}
        (TOOL_ERROR, None, "tool_error", TOOL_ERROR_TEXT, {"error": TOOL_ERROR_TEXT}),
        (TOOL_ERROR, None, None, TOOL_ERROR_TEXT, {"error": TOOL_ERROR_TEXT}),
        # an error with no text is still an error to FinToolBench's evaluator (a falsy "error" is not)
        (SILENT_TOOL_ERROR, None, "tool_error", "", {"error": "tool error"}),
        # a call that raised: "[error] message" (the inference script's marker), {"error": message}
        (None, RPC_ERROR, "rpc_error", "[error] Unknown tool: NoSuchTool", {"error": "Unknown tool: NoSuchTool"}),
        (None, {"code": None, "message": "upstream closed"}, "transport_error", "[error] upstream closed",
         {"error": "upstream closed"}),
        (None, None, "transport_error", "[error] transport_error", {"error": "transport_error"}),
        (None, {"code": None, "message": ""}, "cancelled", "[error] cancelled", {"error": "cancelled"}),
        (None, "McpError: timed out", None, "[error] McpError: timed out", {"error": "McpError: timed out"}),
    ],
)  # fmt: skip
def test_observation_per_benchmark(result, error, status, finmcp, fintoolbench) -> None:
    assert observation(result, error, status, style="finmcp") == finmcp
    ftb = observation(result, error, status, style="fintoolbench")
    assert (json.loads(ftb) if isinstance(fintoolbench, dict) else ftb) == fintoolbench
    assert (failure(result, error, status) is None) == (finmcp == fintoolbench)


def test_unknown_style_is_refused() -> None:
    with pytest.raises(ValueError, match="finmcp, fintoolbench"):
        observation(TEXT, style="openai")


def test_chat_messages_shape() -> None:
    calls = [ChatCall(call_id("s", 0, 0, i), "T", {"k": "值"}, f"out{i}") for i in range(2)]
    messages = chat_messages([ChatTurn("q", [calls], "reply"), ChatTurn("###STOP###")], index=True)
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool", "assistant", "user"]
    assert messages[1]["tool_calls"][1] == {
        "id": calls[1].id, "type": "function", "index": 1, "function": {"name": "T", "arguments": '{"k": "值"}'}
    }  # fmt: skip
    assert messages[3] == {"role": "tool", "tool_call_id": calls[1].id, "content": "out1"}
    assert messages[4] == {"role": "assistant", "content": "reply"}
    assert call_id("s", 0, 0, 0).startswith("call_") and len(call_id("s", 0, 0, 0)) == 27
    assert "index" not in chat_messages([ChatTurn("q", [calls])])[1]["tool_calls"][0]
