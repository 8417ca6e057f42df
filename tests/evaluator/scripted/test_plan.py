"""The scripted model's plan, walked statelessly from the conversation a request carries."""

from __future__ import annotations

import json
from typing import Any

import pytest

from finmcp.evaluator.agents.base import seeded_rng
from finmcp.evaluator.agents.noisy import NoiseRates, perturb
from finmcp.evaluator.benchmarks import load_benchmark
from finmcp.evaluator.inputs.model import Reference
from finmcp.evaluator.scripted.plan import Reply, Script, ScriptError, Where, exposed_name, gold_calls
from finmcp.evaluator.scripted.wire import chat_conversation, responses_conversation


@pytest.fixture(scope="module")
def refs() -> dict[str, Reference]:
    return {r.id: r for r in load_benchmark("finmcp-sim")}


def tools(names: list[str], prefix: str = "") -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": prefix + n, "parameters": {"type": "object"}}}
        for n in names
    ]


def play(
    script: Script,
    where: Where,
    messages: list[dict[str, Any]],
    offered: list[dict[str, Any]],
    answer_first: int | None = None,
) -> list[Reply]:
    """Drive the script like a framework loop: send back a result for every call (or only the first
    ``answer_first`` of the first step), until the final text."""
    replies = []
    messages = list(messages)
    for _ in range(20):
        reply = script.reply(where, chat_conversation({"messages": messages, "tools": offered}))
        replies.append(reply)
        if not reply.calls:
            return replies
        calls = reply.calls if answer_first is None or len(replies) > 1 else reply.calls[:answer_first]
        messages.append(
            {
                "role": "assistant",
                "tool_calls": [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                    for c in calls
                ],
            }
        )
        messages += [{"role": "tool", "tool_call_id": c.id, "content": "ok"} for c in calls]
    raise AssertionError("the script never answered")


def test_oracle_plays_the_gold_groups_then_the_reply(refs: dict[str, Reference]) -> None:
    ref = refs["sim-multi-0001"]
    names = sorted({c.tool for g in ref.turns[0].calls for c in g})
    script = Script(list(refs.values()))
    replies = play(script, Where(ref.id, 0), [{"role": "user", "content": ref.turns[0].user}], tools(names))
    steps = [[(c.name, json.loads(c.arguments)) for c in r.calls] for r in replies[:-1]]
    assert steps == [[(c.tool, c.arguments) for c in g] for g in ref.turns[0].calls]
    assert [len(r.calls) for r in replies] == [3, 2, 0] and replies[-1].text == ref.turns[0].assistant
    assert replies[0].calls[0].id == "call_fm_t0_0" and replies[1].calls[1].id == "call_fm_t0_4"


def test_a_step_run_partly_is_finished_before_the_next(refs: dict[str, Reference]) -> None:
    ref = refs["sim-multi-0001"]
    script = Script(list(refs.values()))
    replies = play(
        script, Where(ref.id, 0), [{"role": "user", "content": ref.turns[0].user}], [], answer_first=1
    )
    assert [len(r.calls) for r in replies] == [3, 2, 2, 0]  # the two calls left of step 1, then step 2


def test_prefixed_and_sanitised_tool_names_map_back() -> None:
    offered = ["mcp__finmcp__SearchFunds", "finmcp_GetFundInfo", "Search_funds_x", "get.time"]
    assert exposed_name("SearchFunds", offered) == "mcp__finmcp__SearchFunds"
    assert exposed_name("GetFundInfo", offered) == "finmcp_GetFundInfo"
    assert exposed_name("get.time", ["tools_get_time"]) == "tools_get_time"
    assert (
        exposed_name("fund-equity-position", ["fund_equity_position"]) == "fund_equity_position"
    )  # mcpadapt
    assert exposed_name("fund-equity-position", ["mcp_fund_equity_position"]) == "mcp_fund_equity_position"
    assert exposed_name("Funds", ["SearchFunds"]) == "Funds"  # a longer name is another tool
    assert exposed_name("Absent", offered) == "Absent"


def test_multi_turn_history_and_untagged_requests_find_their_turn(refs: dict[str, Reference]) -> None:
    ref = next(r for r in refs.values() if r.type == "multi_turn" and len(r.turns) >= 3 and r.turns[1].calls)
    script = Script(list(refs.values()))
    history = [
        {"role": "user", "content": ref.turns[0].user},
        {"role": "assistant", "content": ref.turns[0].assistant},
    ]
    messages = [*history, {"role": "user", "content": f"New task:\n{ref.turns[1].user}"}]
    tagged = script.reply(Where(ref.id, 1), chat_conversation({"messages": messages}))
    by_turn_text = script.reply(Where(ref.id), chat_conversation({"messages": messages}))
    assert tagged.turn == by_turn_text.turn == 1 and tagged.calls == by_turn_text.calls
    assert [c.name for c in tagged.calls] == [c.tool for c in ref.turns[1].calls[0]]
    untagged = script.reply(
        Where(), chat_conversation({"messages": [{"role": "user", "content": ref.turns[1].user}]})
    )
    assert untagged.turn == 1 and untagged.calls == tagged.calls


def test_text_serialised_calls_and_final_answer_tool(refs: dict[str, Reference]) -> None:
    ref = refs["sim-single-0001"]
    script = Script(list(refs.values()))
    offered = tools([ref.turns[0].calls[0][0].tool, "final_answer"])
    first = script.reply(
        Where(ref.id, 0),
        chat_conversation({"messages": [{"role": "user", "content": ref.turns[0].user}], "tools": offered}),
    )
    text_calls = [  # smolagents writes its calls and observations as text
        {"role": "user", "content": ref.turns[0].user},
        {"role": "assistant", "content": f"Calling tools:\n[{{'id': '{first.calls[0].id}'}}]"},
        {"role": "user", "content": "Observation:\nok"},
    ]
    final = script.reply(Where(ref.id, 0), chat_conversation({"messages": text_calls, "tools": offered}))
    assert [c.name for c in final.calls] == ["final_answer"]
    assert json.loads(final.calls[0].arguments) == {"answer": ref.turns[0].assistant}


def test_responses_input_items_are_read_like_chat(refs: dict[str, Reference]) -> None:
    ref = refs["sim-multi-0001"]
    script = Script(list(refs.values()))
    first = script.reply(
        Where(ref.id, 0), responses_conversation({"input": ref.turns[0].user, "instructions": "x"})
    )
    items: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "input_text", "text": ref.turns[0].user}]}
    ]
    for c in first.calls:
        items += [{"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.arguments}]
        items += [{"type": "function_call_output", "call_id": c.id, "output": "ok"}]
    second = script.reply(Where(ref.id, 0), responses_conversation({"input": items}))
    assert [c.id for c in second.calls] == ["call_fm_t0_3", "call_fm_t0_4"]


def test_noisy_plays_the_noisy_agents_perturbation(refs: dict[str, Reference]) -> None:
    rates = NoiseRates.parse("0.5")
    script = Script(list(refs.values()), "noisy", rates, seed=7)
    changed = 0
    for ref in [r for r in refs.values() if r.type == "multi_tool"][:15]:
        replies = play(
            script, Where(ref.id, 0, trial=1), [{"role": "user", "content": ref.turns[0].user}], []
        )
        played = [[(c.name, json.loads(c.arguments)) for c in r.calls] for r in replies[:-1]]
        steps = perturb(gold_calls(ref, 0, {}), rates, seeded_rng(7, ref.id, 1, 0), script.tool_names)
        assert played == [[(c.tool, c.arguments) for c in s] for s in steps]
        changed += played != [[(c.tool, c.arguments) for c in g] for g in ref.turns[0].calls]
    assert changed >= 5


def test_requests_that_match_no_task_are_refused(refs: dict[str, Reference]) -> None:
    script = Script(list(refs.values()))
    convo = chat_conversation({"messages": [{"role": "user", "content": "hello"}]})
    with pytest.raises(ScriptError, match="unknown sample 'nope'") as unknown:
        script.reply(Where("nope", 0), convo)
    assert unknown.value.status == 404
    with pytest.raises(ScriptError, match="turn 9 out of range"):
        script.reply(Where("sim-single-0001", 9), convo)
    with pytest.raises(ScriptError, match="no task matches this request"):
        script.reply(Where(), convo)
    bad: Any
    for bad in (
        {"messages": []},
        {"messages": [{"content": "x"}]},
        [1],
        {"messages": [{"role": "user"}], "tools": 3},
    ):
        with pytest.raises(ScriptError):
            chat_conversation(bad)
    with pytest.raises(ScriptError, match="previous_response_id"):
        responses_conversation({"input": "x", "previous_response_id": "resp_1"})


def test_the_command_refuses_bad_flags_before_serving(capsys: pytest.CaptureFixture[str]) -> None:
    from finmcp.evaluator.cli import main

    assert main(["model", "--policy", "noisy", "--noise", "drop=2", "--port", "0"]) == 2
    assert "--noise 'drop=2': drop=2.0 is not in [0, 1]" in capsys.readouterr().err
    assert main(["model", "--bench", "nope.json", "--port", "0"]) == 2
    assert "file not found: nope.json" in capsys.readouterr().err
    assert main(["model", "--policy", "greedy"]) == 2
