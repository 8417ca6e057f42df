"""Reference loading: the three formats, and clear errors naming the sample and the field."""

from __future__ import annotations

import json

import pytest

from finmcp.evaluator.errors import EvalInputError
from finmcp.evaluator.inputs.references import load_references, parse_references
from finmcp.tool_specs.inventory import load_inventory
from tests.evaluator.eval_support import official_sample


def own(sample_id="s1", **over):
    sample = {
        "id": sample_id,
        "type": "multi_tool",
        "scenario": "市场分析与研究",
        "sub_scenario": "宏观经济",
        "inventory": "finmcp65",
        "turns": [
            {
                "user": "q",
                "calls": [
                    [{"tool": "SearchFunds", "arguments": {"keyword": "红利"}}],
                    [{"tool": "GetCurrentTime"}],
                ],
                "assistant": "a",
            }
        ],
    }
    sample.update(over)
    return sample


def errors_of(records, **kw) -> str:
    with pytest.raises(EvalInputError) as info:
        parse_references(records, "refs.json", **kw)
    return str(info.value)


def test_own_format_loads_groups_and_derives_difficulty():
    refs = parse_references([own()], "refs.json")
    ref = refs.samples[0]
    assert refs.format == "own"
    assert [[c.tool for c in g] for g in ref.turns[0].calls] == [["SearchFunds"], ["GetCurrentTime"]]
    assert ref.turns[0].calls[1][0].arguments == {}
    assert (ref.difficulty, ref.task, ref.level1) == ("easy", "multi_tool", "市场分析与研究")


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"type": "chat"}, "sample 's1': field 'type': must be one of single_tool, multi_tool, multi_turn"),
        ({"scenario": ""}, "sample 's1': field 'scenario': missing"),
        ({"turns": []}, "sample 's1': field 'turns': missing or not a non-empty list"),
        (
            {"turns": [{"user": "q", "calls": [[{"arguments": {}}]]}]},
            "field 'turns[0].calls[0][0].tool': missing",
        ),
        (
            {"turns": [{"user": "q", "calls": [[]]}]},
            "field 'turns[0].calls[0]': a group must be a non-empty list",
        ),
        (
            {"turns": [{"user": "q", "calls": [[{"tool": "A", "arguments": "x=1"}]]}]},
            "field 'turns[0].calls[0][0].arguments': must be an object",
        ),
        ({"turns": [{"calls": []}]}, "field 'turns[0].user': missing or not a string"),
        ({"difficulty": "extreme"}, "field 'difficulty': must be one of easy, medium, hard"),
    ],
)
def test_own_format_errors_name_sample_and_field(change, expected):
    assert expected in errors_of([own(**change)])


def test_missing_id_and_duplicate_ids_are_reported():
    sample = own()
    del sample["id"]
    assert "sample '#0': field 'id': missing" in errors_of([sample])
    assert "sample 's1': field 'id': duplicate id (also record #0)" in errors_of([own(), own()])


def test_unknown_tool_names_against_a_given_inventory():
    message = errors_of([own()], known_tools={"SearchFunds"}, inventory_name="finmcp65")
    assert (
        "sample 's1': field 'turns[0].calls[1][0].tool': unknown tool 'GetCurrentTime' "
        "(not in inventory 'finmcp65')" in message
    )
    # without an inventory the same names are accepted
    assert parse_references([own()], "refs.json").samples


def test_unknown_tool_names_against_the_real_inventory():
    names = load_inventory("finmcp65").names
    bad = own(turns=[{"user": "q", "calls": [[{"tool": "NoSuchTool"}]], "assistant": ""}])
    assert "unknown tool 'NoSuchTool'" in errors_of([bad], known_tools=names, inventory_name="finmcp65")


def test_official_format_errors_name_sample_and_field():
    sample = official_sample(5, [[["A"]]])
    del sample["scenery"]
    assert "sample '5': field 'scenery': missing" in errors_of([sample])
    sample = official_sample(6, [[["A"]]])
    sample["diff_level"] = {"turns": 1}
    assert "sample '6': field 'diff_level.level': missing" in errors_of([sample])
    sample = official_sample(7, [[["A"]]])
    sample["messages"][1]["tool_calls"][0]["function"]["arguments"] = "{not json"
    assert "sample '7': field 'messages[1].tool_calls[0].function.arguments'" in errors_of([sample])
    sample = official_sample(8, [[["A"]]])
    del sample["messages"][1]["tool_calls"][0]["function"]["name"]
    assert "sample '8': field 'messages[1].tool_calls[0].function.name': missing" in errors_of([sample])


def test_skip_invalid_drops_bad_samples_like_the_official_script():
    bad = official_sample(2, [[["A"]]])
    del bad["scenery"]
    refs = parse_references([official_sample(1, [[["A"]]]), bad], "x", skip_invalid=True)
    assert [r.id for r in refs.samples] == ["1"]
    assert refs.skipped[0]["id"] == "2" and "scenery" in refs.skipped[0]["reason"]


def test_official_demo_groups_turns_and_tool_list(shared_dir, demo_samples):
    refs = load_references(shared_dir / "finmcp" / "demo_infer.json")
    by_id = refs.by_id()
    assert refs.format == "finmcp_official" and not refs.warnings  # tool_list equals the message groups
    s202 = by_id["202"]
    assert s202.type == "multi_tool" and s202.task == "multi_step" and s202.difficulty == "medium"
    assert [len(g) for g in s202.turns[0].calls] == [1, 1, 1, 1, 1, 1]
    assert s202.turns[0].calls[1][0].arguments == {"strategyCode": "ZH013136"}
    s602 = by_id["602"]
    assert s602.type == "multi_turn" and s602.level1 == "PlatformTechnicalSupport"
    assert [sum(len(g) for g in t.calls) for t in s602.turns] == [0, 2, 2, 2, 0, 1, 0, 0]
    assert by_id["603"].turns[-1].user == "###STOP###"


def test_tool_list_that_disagrees_with_messages_is_a_warning(demo_samples):
    demo_samples[2]["tool_list"] = [["GetUserAssetView"]]
    refs = parse_references(demo_samples, "demo")
    assert refs.warnings == [
        "sample '201': field 'tool_list': differs from the groups in messages (messages used)"
    ]


def test_fintoolbench_questions(shared_dir):
    refs = load_references(shared_dir / "fintoolbench" / "questions_sample.jsonl")
    assert refs.format == "fintoolbench" and len(refs.samples) == 12
    first, fourth = refs.samples[0], refs.samples[3]
    assert first.id == "financebench_0" and first.type == "single_tool" and not first.args_known
    assert fourth.id == "openfindata_release_3" and fourth.type == "multi_tool"
    assert [c.tool for c in fourth.turns[0].calls[0]] == [
        "fund_info_index_em",
        "fund_open_fund_rank_em",
        "amac_fund_info",
    ]
    assert first.ground_truth == "93.86" and first.scenario == "metrics-generated"


def test_fintoolbench_question_errors(tmp_path):
    path = tmp_path / "q.jsonl"
    lines = [
        {"dataset_name": "d", "question": "q", "answer": "1", "select_tools": ["a", "b"], "tool_nums": 3},
        {"dataset_name": "d", "question": "", "answer": "1", "select_tools": []},
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines), encoding="utf-8")
    with pytest.raises(EvalInputError) as info:
        load_references(path)
    message = str(info.value)
    assert "sample 'd_0': field 'tool_nums': 3 != len(select_tools) = 2" in message
    assert "sample 'd_1': field 'question': missing" in message
    assert "sample 'd_1': field 'select_tools': missing or not a non-empty list" in message


def test_file_errors(tmp_path):
    with pytest.raises(EvalInputError, match="file not found"):
        load_references(tmp_path / "nope.json")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1}\n{oops\n', encoding="utf-8")
    with pytest.raises(EvalInputError, match="line 2: not valid JSON"):
        load_references(bad)
    unknown = tmp_path / "u.json"
    unknown.write_text(json.dumps([{"id": 1, "foo": 2}]), encoding="utf-8")
    with pytest.raises(EvalInputError, match="not a reference sample"):
        load_references(unknown)
