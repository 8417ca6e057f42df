"""Importing tool outputs from FinMCP-Bench sample files."""

from __future__ import annotations

import json
import random
from collections import defaultdict

import pytest

from finmcp.recordings import RECORDING_META_KEY, RecordingStore
from finmcp.recordings.errors import InvalidValueError
from finmcp.recordings.import_finmcp import FAILURE_MARKER, import_finmcp, output_result
from tests.support.finmcp_samples import sample_calls


def call(call_id, name, arguments):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def assistant(*calls):
    return {"role": "assistant", "content": "", "tool_calls": list(calls)}


def tool_msg(call_id, content, **extra):
    message = {"role": "tool", "content": content, **extra}
    if call_id is not None:
        message["tool_call_id"] = call_id
    return message


def write(tmp_path, samples, name="samples.json"):
    path = tmp_path / name
    path.write_text(json.dumps(samples, ensure_ascii=False), encoding="utf-8")
    return path


def text_of(store, tool, arguments, inventory="qieman79"):
    got = store.get_response(inventory, tool, arguments)
    return None if got is None else got["content"][0]["text"]


@pytest.fixture
def store():
    with RecordingStore.open(":memory:") as opened:
        yield opened


def test_pairs_by_id_even_when_results_are_out_of_order(store, tmp_path):
    samples = [
        {
            "id": 7,
            "messages": [
                {"role": "user", "content": "q"},
                assistant(
                    call("c1", "GetFundDiagnosis", '{"fundNameOrCode": "000001"}'),
                    call("c2", "GetFundDiagnosis", '{"fundNameOrCode": "000002"}'),
                ),
                tool_msg("c2", '{\n  "code": "000002"\n}'),
                tool_msg("c1", '{\n  "code": "000001"\n}'),
                {"role": "assistant", "content": "done", "tool_calls": None},
            ],
        }
    ]
    report = import_finmcp(store, write(tmp_path, samples))
    assert (report.imported, report.skipped) == (2, [])
    assert text_of(store, "GetFundDiagnosis", {"fundNameOrCode": "000001"}) == '{\n  "code": "000001"\n}'
    got = store.get_response("qieman79", "GetFundDiagnosis", {"fundNameOrCode": "000002"})
    assert got["structuredContent"] == {"code": "000002"}
    assert got["_meta"][RECORDING_META_KEY]["provenance"] == "imported:samples.json"


def test_falls_back_to_order_without_ids(store, tmp_path):
    samples = [
        {
            "messages": [
                assistant(
                    call(None, "SearchFunds", {"keyword": "a"}), call(None, "SearchFunds", {"keyword": "b"})
                ),
                tool_msg(None, "first"),
                tool_msg(None, "second"),
            ]
        }
    ]
    report = import_finmcp(store, write(tmp_path, samples), inventory="inv")
    assert report.imported == 2
    assert text_of(store, "SearchFunds", {"keyword": "a"}, "inv") == "first"
    assert text_of(store, "SearchFunds", {"keyword": "b"}, "inv") == "second"
    assert store.get_response("inv", "SearchFunds", {"keyword": "a"})["structuredContent"] is None


def test_skips_are_reported_with_reasons(store, tmp_path):
    samples = [
        {
            "id": "s",
            "messages": [
                assistant(call("a", "getFundRecentPerformance", '{"fundCode": "1"}')),
                tool_msg("a", "{}"),
                assistant(
                    call("b", "SearchFunds", '{"keyword": "x"}'), call("c", "SearchFunds", '{"keyword": "y"}')
                ),
                tool_msg(None, FAILURE_MARKER),
                assistant(call("d", "SearchFunds", "{not json")),
                tool_msg("d", "{}"),
                assistant(call("e", "SearchFunds", '["x"]')),
                tool_msg("e", "{}"),
                assistant(call("f", "SearchFunds", '{"keyword": "z"}')),
                tool_msg("f", "[error] McpError: timeout"),
                assistant(call("g", "SearchFunds", '{"keyword": "w"}')),
                {"role": "user", "content": "no result came back"},
                tool_msg("zz", "{}"),
                assistant(call("h", "SearchFunds", '{"keyword": "v"}')),
                tool_msg("h", "{}", name="GetFundDiagnosis"),
            ],
        }
    ]
    report = import_finmcp(store, write(tmp_path, samples), known_tools={"SearchFunds", "GetFundDiagnosis"})
    reasons = [(item.tool, item.reason) for item in report.skipped]
    assert reasons == [
        ("getFundRecentPerformance", "tool not in known_tools (legacy or foreign name)"),
        ("SearchFunds", "call failed (调用失败 marker)"),
        ("SearchFunds", "call failed (调用失败 marker)"),
        ("SearchFunds", "arguments are not valid JSON"),
        ("SearchFunds", "arguments are not a JSON object"),
        ("SearchFunds", "client-side error text ([error] ...)"),
        ("SearchFunds", "call has no result"),
        (None, "tool message without a call"),
        ("SearchFunds", "result names tool 'GetFundDiagnosis', call is 'SearchFunds'"),
    ]
    assert report.imported == 0 and store.count() == 0
    assert report.total == 9
    assert "9 skipped" in report.summary()


def test_legacy_names_are_imported_without_known_tools(store, tmp_path):
    samples = [
        {"messages": [assistant(call(None, "getPortfolioDetail", {"code": "ZH1"})), tool_msg(None, {"a": 1})]}
    ]
    report = import_finmcp(store, write(tmp_path, samples))
    assert report.imported == 1
    got = store.get_response("qieman79", "getPortfolioDetail", {"code": "ZH1"})
    assert got["structuredContent"] == {"a": 1}
    assert json.loads(got["content"][0]["text"]) == {"a": 1}


def test_json_output_supersedes_prose_but_not_the_reverse(store, tmp_path):
    prose = [
        {
            "messages": [
                assistant(call("1", "GetStrategyRiskInfo", '{"strategyCode": "ZH1"}')),
                tool_msg("1", "\n\n风险等级中低"),
            ]
        }
    ]
    raw = [
        {
            "messages": [
                assistant(call("2", "GetStrategyRiskInfo", '{"strategyCode": "ZH1"}')),
                tool_msg("2", '{"riskLevel": 2}'),
            ]
        }
    ]
    other_json = [
        {
            "messages": [
                assistant(call("3", "GetStrategyRiskInfo", '{"strategyCode": "ZH1"}')),
                tool_msg("3", '{"riskLevel": 3}'),
            ]
        }
    ]
    assert import_finmcp(store, write(tmp_path, prose, "prose.json")).imported == 1
    report = import_finmcp(store, write(tmp_path, raw, "raw.json"))
    assert (report.imported, report.replaced_prose) == (1, 1)
    again = import_finmcp(store, write(tmp_path, prose, "prose.json"))
    assert again.skip_reasons() == {"conflict: a different output is already recorded for these arguments": 1}
    later = import_finmcp(store, write(tmp_path, other_json, "other.json"))
    assert later.imported == 0 and len(later.skipped) == 1
    assert text_of(store, "GetStrategyRiskInfo", {"strategyCode": "ZH1"}) == '{"riskLevel": 2}'
    assert import_finmcp(store, write(tmp_path, raw, "raw.json")).identical == 1


@pytest.mark.parametrize(
    ("text", "structured"),
    [
        ('{"a": 1}', {"a": 1}),
        ("[1, 2]", {"result": [1, 2]}),
        ("3.5", {"result": 3.5}),
        ("null", {"result": None}),
        ("无数据", None),
        ("NaN", None),
        ("", None),
    ],
)
def test_output_result_shapes(text, structured):
    assert output_result(text) == {
        "content": [{"type": "text", "text": text}],
        "structuredContent": structured,
        "isError": False,
    }


def test_bad_files_fail_clearly(store, tmp_path):
    with pytest.raises(InvalidValueError, match="cannot read FinMCP samples"):
        import_finmcp(store, tmp_path / "missing.json")
    with pytest.raises(InvalidValueError, match="expected a JSON list"):
        import_finmcp(store, write(tmp_path, {"id": 1}))
    with pytest.raises(InvalidValueError, match=r"sample 3: messages is not a list"):
        import_finmcp(store, write(tmp_path, [{"id": 3, "messages": "x"}]))


# ---------------------------------------------------------------- the real sample files


def qieman_names(shared_dir):
    facts = json.loads((shared_dir / "finmcp" / "qieman_tools_facts.json").read_text(encoding="utf-8"))
    return {record["name"] for record in facts}


def recorded_pairs(path, known):
    """(tool, arguments, text) of every Qieman call with its result, found independently by id."""
    pairs = sample_calls(path, known)
    assert all(text is not None for _, _, text in pairs), "a call without its result"
    return pairs


def shuffle_keys(value, rng):
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {k: shuffle_keys(v, rng) for k, v in items}
    if isinstance(value, list):
        return [shuffle_keys(v, rng) for v in value]
    return value


@pytest.mark.shared
def test_demo_infer_outputs_replay_exactly(shared_dir, store):
    path = shared_dir / "finmcp" / "demo_infer.json"
    known = qieman_names(shared_dir)
    report = import_finmcp(store, path, known_tools=known)
    pairs = recorded_pairs(path, known)
    assert report.total == len(pairs) > 0
    assert report.imported == store.count() > 0
    rng = random.Random(0)
    for tool, arguments, text in pairs:
        got = store.get_response("qieman79", tool, shuffle_keys(arguments, rng))
        assert got is not None, (tool, arguments)
        assert got["content"] == [{"type": "text", "text": text}]
        parsed = json.loads(text)
        assert got["structuredContent"] == (parsed if isinstance(parsed, dict) else {"result": parsed})
        assert got["_meta"][RECORDING_META_KEY]["provenance"] == "imported:demo_infer.json"


@pytest.mark.shared
def test_both_sample_files_replay_their_outputs(shared_dir, store):
    known = qieman_names(shared_dir)
    files = [shared_dir / "finmcp" / name for name in ("demo_infer.json", "train_data_demo.json")]
    reports = [import_finmcp(store, path, known_tools=known) for path in files]
    pairs = [pair for path in files for pair in recorded_pairs(path, known)]
    texts = defaultdict(set)
    for tool, arguments, text in pairs:
        texts[(tool, store.canonical(tool, arguments).key)].add(text)
    legacy = reports[1].skip_reasons()["tool not in known_tools (legacy or foreign name)"]
    assert legacy == 7  # the XiaoGu-named calls of the two app-log samples
    assert sum(r.total for r in reports) == len(pairs) + legacy
    assert store.count() == len(texts)
    rng = random.Random(1)
    differing = 0
    for tool, arguments, text in pairs:
        got = store.get_response("qieman79", tool, shuffle_keys(arguments, rng))["content"][0]["text"]
        candidates = texts[(tool, store.canonical(tool, arguments).key)]
        if len(candidates) == 1:
            assert got == text
        else:  # the same call recorded with different outputs (JSON vs prose paraphrase): JSON is kept
            assert got in candidates
            json.loads(got)
            differing += got != text
    conflicts = sum(
        r.skip_reasons()["conflict: a different output is already recorded for these arguments"]
        for r in reports
    )
    superseded = sum(r.replaced_prose for r in reports)
    assert differing == conflicts + superseded > 0
