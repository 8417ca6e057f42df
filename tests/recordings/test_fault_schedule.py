"""Fault schedules (pure part): validation with clear errors, seeded placement independent of arguments,
transient/permanent memory, the rate limit's Retry-After, and the altered answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from finmcp.recordings.fault_answers import FAULT_KEY, altered_result, replacing_result, rpc_error
from finmcp.recordings.fault_schedule import (
    POSITION_META,
    SAMPLE_META,
    CallPlace,
    ScheduleError,
    ScheduleInjector,
    load_schedule,
    parse_schedule,
)

TOOLS = {"GetFundNav", "SearchFunds", "PlaceOrder"}


def _schedule(*rules: dict, seed: int = 1) -> dict:
    return {"version": 1, "seed": seed, "rules": list(rules)}


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ({"kind": "meltdown"}, "rules[0].kind: unknown fault kind 'meltdown'; expected one of rpc_error"),
        ({"kind": "empty", "probability": 1.5}, "rules[0].probability: probability 1.5 is out of range"),
        ({"kind": "empty", "probability": -0.1}, "rules[0].probability: probability -0.1 is out of range"),
        (
            {"kind": "empty", "tools": "GetStock*"},
            "rules[0].tools: 'GetStock*' names no tool of the inventory",
        ),
        ({"kind": "empty", "at": [-1]}, "rules[0].at[0]: -1 is less than the minimum of 0"),
        ({"kind": "empty", "often": True}, "rules[0]: Additional properties are not allowed ('often'"),
        (
            {"kind": "rate_limit", "retry_after": "soon"},
            "rules[0].retry_after: 'soon' is not of type 'number'",
        ),
    ],
)
def test_bad_rules_name_their_field(rule: dict, message: str) -> None:
    with pytest.raises(ScheduleError) as info:
        parse_schedule(_schedule({"kind": "is_error"}, rule) | {"rules": [rule]}, "s.json", TOOLS)
    assert str(info.value).startswith("s.json: " + message), str(info.value)


def test_missing_seed_bad_json_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ScheduleError, match=r"\(top level\): 'seed' is a required property"):
        parse_schedule({"rules": []})
    bad = tmp_path / "bad.json"
    bad.write_text('{"seed": 1,\n "rules": [\n  {"kind": "empty",}\n ]}', "utf-8")
    with pytest.raises(ScheduleError, match=r"bad.json: line 3 column 20: not JSON"):
        load_schedule(bad)
    with pytest.raises(ScheduleError, match="cannot read it"):
        load_schedule(tmp_path / "absent.json")


def _place(sample: str, position: int, turn: int = 0, member: int = 0) -> CallPlace:
    return CallPlace("run", sample, 0, turn, position, position, member)


def test_faults_are_drawn_from_seed_sample_and_position_not_arguments() -> None:
    schedule = parse_schedule(_schedule({"kind": "is_error", "probability": 0.5}), tools=TOOLS)
    picks = []
    for args in ("a", "b"):
        injector = ScheduleInjector(schedule)
        picks.append([injector.decide(_place(f"s{i}", p), "SearchFunds", f"{args}{i}{p}") is not None
                      for i in range(40) for p in range(3)])  # fmt: skip
    assert picks[0] == picks[1]
    assert 30 < sum(picks[0]) < 90
    other = parse_schedule(_schedule({"kind": "is_error", "probability": 0.5}, seed=2), tools=TOOLS)
    injector = ScheduleInjector(other)
    again = [
        injector.decide(_place(f"s{i}", p), "SearchFunds", "x") is not None
        for i in range(40)
        for p in range(3)
    ]
    assert again != picks[0]


def test_rules_select_positions_tools_samples_and_group_members() -> None:
    rule = {"kind": "empty", "at": [1], "tools": "Get*", "samples": ["s1"], "member": [1], "scope": "sample"}
    injector = ScheduleInjector(parse_schedule(_schedule(rule), tools=TOOLS))
    assert injector.decide(_place("s1", 1, member=1), "GetFundNav", "k1") is not None
    assert injector.decide(_place("s1", 1, member=0), "GetFundNav", "k2") is None
    assert injector.decide(_place("s1", 0, member=1), "GetFundNav", "k3") is None
    assert injector.decide(_place("s2", 1, member=1), "GetFundNav", "k4") is None
    assert injector.decide(_place("s1", 1, member=1), "SearchFunds", "k5") is None


def test_transient_passes_on_retry_permanent_keeps_failing() -> None:
    schedule = parse_schedule(
        _schedule({"kind": "rpc_error", "at": [0]}, {"kind": "is_error", "at": [1], "transient": False}),
        tools=TOOLS,
    )
    injector = ScheduleInjector(schedule)
    first = injector.decide(_place("s", 0), "SearchFunds", "k")
    assert first is not None and first.transient and not first.repeat
    assert injector.decide(_place("s", 2), "SearchFunds", "k") is None  # the retry succeeds
    permanent = injector.decide(_place("s", 1), "GetFundNav", "k")
    assert permanent is not None and not permanent.transient
    for position in (3, 4):
        again = injector.decide(_place("s", position), "GetFundNav", "k")
        assert again is not None and again.repeat and again.kind == "is_error"


def test_rate_limit_retry_must_wait_retry_after() -> None:
    now = [100.0]
    schedule = parse_schedule(_schedule({"kind": "rate_limit", "at": [0], "retry_after": 2}), tools=TOOLS)
    injector = ScheduleInjector(schedule, clock=lambda: now[0])
    assert injector.decide(_place("s", 0), "SearchFunds", "k") is not None
    now[0] += 1.0
    early = injector.decide(_place("s", 1), "SearchFunds", "k")
    assert early is not None and early.repeat and early.kind == "rate_limit"
    now[0] += 2.0
    assert injector.decide(_place("s", 2), "SearchFunds", "k") is None


def test_place_from_meta_and_counted_positions() -> None:
    injector = ScheduleInjector(parse_schedule(_schedule({"kind": "empty"}), tools=TOOLS))
    given = injector.place(
        {SAMPLE_META: "s9", "io.finmcp/turn": 2, POSITION_META: {"turn": 4, "sample": 7, "member": 1}}
    )
    assert (given.sample, given.turn, given.turn_position, given.sample_position, given.member) == (
        "s9",
        2,
        4,
        7,
        1,
    )
    counted = [injector.place({}, {"sample": "t", "turn": 1}) for _ in range(3)]
    assert [p.turn_position for p in counted] == [0, 1, 2]
    grouped = [injector.place({"io.finmcp/group": 0}, {"sample": "g"}).member for _ in range(2)]
    assert grouped == [0, 1]


def test_answers_are_marked_and_say_what_a_client_needs() -> None:
    schedule = parse_schedule(_schedule({"kind": "rate_limit", "retry_after": 0.5}), tools=TOOLS)
    fault = ScheduleInjector(schedule).decide(_place("s", 0), "SearchFunds", "k")
    assert fault is not None
    result = replacing_result(fault, "SearchFunds")
    assert result["isError"] and "Retry-After: 0.5 seconds (transient; retry)" in result["content"][0]["text"]
    assert result["_meta"][FAULT_KEY] == {
        "kind": "rate_limit", "transient": True, "position": {"turn": 0, "sample": 0, "member": 0},
        "schedule": schedule.digest, "rule": 0, "repeat": False, "retry_after": 0.5,
    }  # fmt: skip
    assert rpc_error(fault, "SearchFunds")["data"][FAULT_KEY]["kind"] == "rate_limit"


def test_altered_answers_truncated_empty_wrong_values() -> None:
    normal: dict[str, Any] = {"content": [{"type": "text", "text": json.dumps({"nav": "1.2345", "total": 2, "funds": [{"code": "000001", "r": 0.5}]})}],
              "structuredContent": {"nav": "1.2345", "total": 2, "funds": [{"code": "000001", "r": 0.5}]}, "isError": False}  # fmt: skip
    made = {}
    for kind in ("truncated", "empty", "wrong_values"):
        schedule = parse_schedule(_schedule({"kind": kind}), tools=TOOLS)
        fault = ScheduleInjector(schedule).decide(_place("s", 0), "SearchFunds", "k")
        assert fault is not None
        made[kind] = altered_result(fault, normal, schedule.seed)
        assert made[kind]["_meta"][FAULT_KEY]["kind"] == kind
    truncated = made["truncated"]["content"][0]["text"]
    assert normal["content"][0]["text"].startswith(truncated) and "structuredContent" not in made["truncated"]
    with pytest.raises(json.JSONDecodeError):
        json.loads(truncated)
    assert json.loads(made["empty"]["content"][0]["text"]) == {"nav": "1.2345", "total": 2, "funds": []}
    wrong = made["wrong_values"]["structuredContent"]
    assert wrong["funds"][0]["code"] == "000001"  # codes are not numbers
    assert (
        wrong["nav"] != "1.2345"
        and len(wrong["nav"]) == 6
        and wrong["total"] != 2
        and wrong["funds"][0]["r"] != 0.5
    )
    assert 0.5 <= float(wrong["nav"]) / 1.2345 <= 1.5
    assert json.loads(made["wrong_values"]["content"][0]["text"]) == wrong
