"""The proxy's fault-schedule pieces without processes: placing by tags, answers, the tools check, framing."""

from __future__ import annotations

import json

from finmcp.proxy.fault_injection import ORIGINAL_METHOD, ProxyFaults, tools_call
from finmcp.proxy.http_faults import _encode, _with_length
from finmcp.proxy.jsonrpc import parse_body
from finmcp.proxy.tags import Tags
from finmcp.recordings.fault_schedule import parse_schedule
from finmcp.recordings.plumbing.sse import Event, parse_events


def _faults(*rules: dict) -> ProxyFaults:
    return ProxyFaults(parse_schedule({"seed": 4, "rules": list(rules)}))


def _call(args: dict, meta: dict | None = None, rid: int = 1) -> bytes:
    params = {"name": "GetFund", "arguments": args, **({"_meta": meta} if meta else {})}
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}).encode()


def test_only_a_lone_tools_call_is_decided() -> None:
    assert tools_call(parse_body(_call({}))) is not None
    assert tools_call(parse_body(b"[" + _call({}) + b"," + _call({}, rid=2) + b"]")) is None  # a batch
    assert tools_call(parse_body(b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}')) is None


def test_place_comes_from_tags_and_counts_per_sample_and_turn() -> None:
    faults = _faults({"kind": "is_error", "at": [1], "samples": ["a"]})
    a, b = Tags(run="r", sample="a", turn=0), Tags(run="r", sample="b", turn=0)
    [first] = parse_body(_call({"x": 1}))
    [second] = parse_body(_call({"x": 2}))
    assert faults.decide(first, a) is None  # position 0
    assert faults.decide(first, b) is None  # another sample: its own count
    fault = faults.decide(second, a)  # position 1 of sample a
    assert fault is not None and fault.place.sample == "a" and fault.place.turn_position == 1
    [meta_placed] = parse_body(_call({"x": 3}, {"io.finmcp/sample": "a", "io.finmcp/position": {"turn": 1}}))
    assert faults.decide(meta_placed, Tags()) is not None  # _meta wins over the (absent) tags
    assert faults.injected == {"is_error": 2}


def test_replacing_body_carries_the_id_marker_and_the_era_result_type() -> None:
    faults = _faults({"kind": "rate_limit", "retry_after": 2})
    [call] = parse_body(_call({}))
    fault = faults.decide(call, Tags(sample="s"))
    assert fault is not None
    old = json.loads(faults.replacing_body(fault, call, "2025-11-25"))
    new = json.loads(faults.replacing_body(fault, call, "2026-07-28"))
    assert old["id"] == 1 and old["result"]["isError"] and "resultType" not in old["result"]
    assert new["result"]["resultType"] == "complete"
    assert old["result"]["_meta"]["io.finmcp/fault"]["kind"] == "rate_limit"
    rpc = _faults({"kind": "rpc_error"})
    fault = rpc.decide(call, Tags(sample="s"))
    assert fault is not None
    error = json.loads(rpc.replacing_body(fault, call))["error"]
    assert error["code"] == -32603 and error["data"]["io.finmcp/fault"]["kind"] == "rpc_error"


def test_altered_body_keeps_untouched_members_and_the_note_keeps_the_original() -> None:
    faults = _faults({"kind": "wrong_values"})
    [call] = parse_body(_call({}))
    fault = faults.decide(call, Tags(sample="s"))
    assert fault is not None
    result = {"content": [{"type": "text", "text": '{"nav": 1.25}'}], "structuredContent": {"nav": 1.25}}
    raw = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {**result, "resultType": "complete"}}).encode()
    [answer] = parse_body(raw)
    changed = json.loads(faults.altered_body(fault, answer) or b"")
    assert (
        changed["result"]["resultType"] == "complete"
        and changed["result"]["structuredContent"]["nav"] != 1.25
    )
    note = faults.original_note(fault, "GetFund", answer)
    assert note.kind == "note" and note.method == ORIGINAL_METHOD and note.id is None
    assert json.loads(note.raw)["response"] == json.loads(raw)
    [error] = parse_body(b'{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"no"}}')
    assert faults.altered_body(fault, error) is None  # an error passes unchanged


def test_tool_globs_are_checked_once_against_the_whole_first_listing() -> None:
    faults = _faults({"kind": "empty", "tools": "Get*"}, {"kind": "empty", "tools": "Nope*"})
    assert faults.check_tools({"tools": [{"name": "Ping"}], "nextCursor": "2"}) is None  # a first page
    note = faults.check_tools({"tools": [{"name": "GetFund"}]})
    assert note is not None and json.loads(note.raw)["finmcp_fault_schedule"]["unknown_tools"] == [
        "rules[1].tools 'Nope*'"
    ]
    assert faults.check_tools({"tools": []}) is None  # once per process
    assert faults.health()["unknown_tools"] == ["rules[1].tools 'Nope*'"]


def test_reframing_helpers() -> None:
    head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nContent-Length: 999\r\n\r\n"
    assert (
        _with_length(head, 12)
        == b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 12\r\n\r\n"
    )
    events = [Event("message", b'{"a":1}', "7", 500), Event("note", b"x\ny")]
    assert parse_events(b"".join(_encode(e) for e in events)) == events
