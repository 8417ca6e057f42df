"""The correlation rules of :mod:`finmcp.proxy.logical_calls` on wire shapes of both eras."""

from __future__ import annotations

import json
from typing import Any

import pytest

from finmcp.proxy.logical_calls import Correlator, link_hops, task_handle

TASK = {"taskId": "t1", "status": "working", "createdAt": "x", "lastUpdatedAt": "x", "ttl": None}


def _rows(*messages: tuple[str, str, dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for direction, kind, obj in messages:
        rows.append(
            {
                "direction": direction,
                "kind": kind,
                "method": obj.get("method"),
                "jsonrpc_id": obj.get("id"),
                "body": json.dumps(obj),
            }
        )
    return rows


def _req(rid: int, method: str, params: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    return "c2s", "request", {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


def _res(rid: int, result: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    return "s2c", "response", {"jsonrpc": "2.0", "id": rid, "result": result}


def test_2025_11_25_task_handle_without_result_type_is_followed():
    # 2025-11-25: a task-augmented tools/call answers CreateTaskResult ({"task": ...}, no resultType)
    rows = _rows(
        _req(1, "tools/call", {"name": "t", "arguments": {}, "task": {"ttl": 1000}}),
        _res(1, {"task": TASK}),
        _req(2, "tasks/get", {"taskId": "t1"}),
        _res(2, {**TASK, "status": "completed"}),
        _req(3, "tasks/result", {"taskId": "t1"}),
        _res(3, {"content": [{"type": "text", "text": "ok"}]}),
        _req(4, "tools/call", {"name": "t", "arguments": {}}),
        _res(4, {"content": []}),
    )
    assert link_hops(rows) == {1: [2, 3], 4: []}


def test_task_handle_shapes():
    assert task_handle({"task": TASK}) == "t1"
    assert task_handle({"task": TASK, "resultType": "task"}) == "t1"
    assert task_handle({"task": TASK, "content": []}) is None  # a result that happens to have "task"
    assert task_handle({"resultType": "complete", "task": TASK}) is None
    assert task_handle({"content": []}) is None


def test_input_required_without_request_state_matches_tool_and_arguments():
    correlator: Correlator[str] = Correlator()
    correlator.first("s", "1", "call-1", "ask", {"x": 1})
    answer = correlator.answer("s", "1", {"result": {"resultType": "input_required", "inputRequests": {}}})
    assert answer is not None and answer.verdict == "parked"
    assert (
        correlator.hop("s", "2", "tools/call", {"name": "ask", "arguments": {"x": 2}, "inputResponses": {}})
        is None
    )
    assert (
        correlator.hop("s", "2", "tools/call", {"name": "ask", "arguments": {"x": 1}, "inputResponses": {}})
        == "call-1"
    )
    final = correlator.answer("s", "2", {"result": {"content": [], "isError": True}})
    assert final is not None and final.verdict == "final" and final.result == {"content": [], "isError": True}
    assert correlator.open_calls == 0


def test_request_state_is_per_session():
    correlator: Correlator[str] = Correlator()
    correlator.first("a", "1", "call-a", "ask", {})
    correlator.answer("a", "1", {"result": {"resultType": "input_required", "requestState": "tok"}})
    assert correlator.hop("b", "1", "tools/call", {"name": "ask", "requestState": "tok"}) is None
    assert correlator.hop("a", "9", "tools/call", {"name": "ask", "requestState": "tok"}) == "call-a"


def test_task_failed_error_and_session_end():
    correlator: Correlator[str] = Correlator()
    correlator.first("s", "1", "c1", "t", {})
    correlator.answer("s", "1", {"result": {"task": TASK, "resultType": "task"}})
    assert correlator.hop("s", "2", "tasks/get", {"taskId": "t1"}) == "c1"
    failed = correlator.answer("s", "2", {"result": {**TASK, "status": "failed", "statusMessage": "boom"}})
    assert failed is not None and failed.verdict == "final" and "boom" in failed.rpc_error["message"]
    assert correlator.hop("s", "3", "tasks/get", {"taskId": "t1"}) is None  # closed

    correlator.first("s", "4", "c4", "t", {})
    correlator.answer("s", "4", {"result": {"task": {**TASK, "taskId": "t4"}}})
    assert correlator.hop("s", "5", "tasks/get", {"taskId": "t4"}) == "c4"
    error = correlator.answer("s", "5", {"error": {"code": -32602, "message": "unknown task"}})
    assert error is not None and error.verdict == "final" and error.rpc_error["code"] == -32602

    correlator.first("s", "6", "c6", "t", {})
    correlator.answer("s", "6", {"result": {"task": {**TASK, "taskId": "t6"}}})
    assert correlator.drop_session("s") == ["c6"]
    assert correlator.open_calls == 0


def test_unfollowed_answers_and_odd_params():
    correlator: Correlator[str] = Correlator()
    assert correlator.answer("s", "1", {"result": {}}) is None  # never a first request or a hop
    assert correlator.hop("s", "1", "tasks/get", None) is None
    assert correlator.hop("s", "1", "tools/call", {"name": {"odd": 1}, "inputResponses": {}}) is None
    assert correlator.hop("s", "1", "tasks/get", {"taskId": 5}) is None


def test_link_hops_takes_one_session():
    rows = _rows(_req(1, "tools/call", {"name": "t", "arguments": {}}), _req(1, "tools/call", {"name": "t"}))
    rows[0]["session_key"], rows[1]["session_key"] = "a", "b"
    with pytest.raises(ValueError, match="one session"):
        link_hops(rows)


def test_open_calls_are_bounded_oldest_given_up():
    correlator: Correlator[str] = Correlator(limit=2)
    for n in range(1, 4):
        correlator.first("s", str(n), f"c{n}", "t", {"n": n})
        answer = correlator.answer("s", str(n), {"result": {"task": {**TASK, "taskId": f"t{n}"}}})
        assert answer is not None and answer.verdict == "parked"
    assert answer.evicted == ["c1"] and correlator.open_calls == 2
    assert correlator.hop("s", "9", "tasks/get", {"taskId": "t1"}) is None  # given up: not linked
    # a poll makes a task the newest: the next eviction takes t3, not t2
    assert correlator.hop("s", "10", "tasks/get", {"taskId": "t2"}) == "c2"
    assert correlator.answer("s", "10", {"result": {**TASK, "taskId": "t2"}}) is not None
    correlator.first("s", "11", "c11", "ask", {})
    answer = correlator.answer("s", "11", {"result": {"resultType": "input_required", "inputRequests": {}}})
    assert answer is not None and answer.evicted == ["c3"]
    assert correlator.drop_session("s") == ["c2", "c11"] and correlator.open_calls == 0
