"""The task format: every task of a run validates against the shipped JSON Schema, carries exactly the
gold history finmcp's own agents get and the harness's tagged URLs, and on FinToolBench names the BM25
top-K tools that ``--agent openai --top-k`` would offer, in a URL that asks for just those."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import jsonschema
import pytest

from finmcp.evaluator.agents.bm25 import ToolRetriever
from finmcp.evaluator.agents.history import RecordedOutputs, gold_messages
from finmcp.evaluator.harness.session import tagged_url
from finmcp.evaluator.harness.setup import load_bench
from finmcp.evaluator.inputs.model import Call, Reference, Turn
from finmcp.evaluator.tasks.build import Offer, make_task, model_url, run_tasks
from finmcp.evaluator.tasks.model import TASK_FORMAT, Limits, Task, TaskFormatError, schema
from finmcp.tool_specs.inventory import load_inventory

PROXY = "http://127.0.0.1:8766/mcp"


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory):
    return load_bench("finmcp-sim", tmp_path_factory.mktemp("bench"), limit=12)


def test_every_task_of_a_run_validates_and_carries_what_the_harness_gives(bench) -> None:
    outputs = RecordedOutputs(str(bench.recordings), bench.inventory)
    tools = list(bench.inventory.mcp_tools)
    try:
        tasks = list(run_tasks(bench.refs, "my run", PROXY, tools, outputs, Limits(20, None), trials=2))
        validator = jsonschema.Draft202012Validator(schema())
        assert len(tasks) == 2 * sum(len(r.turns) for r in bench.refs)
        for task in tasks:
            data = task.to_dict()
            validator.validate(data)
            assert Task.from_json(task.to_json()) == task
            ref = next(r for r in bench.refs if r.id == task.sample)
            assert task.messages == gold_messages(ref, task.turn, outputs)  # what finmcp's agents get
            assert task.messages[-1] == {"role": "user", "content": task.user}
            assert task.mcp_url == tagged_url(PROXY, "my run", ref.id, task.turn, task.trial)
            assert task.model_url == task.mcp_url.removesuffix("/mcp") + "/v1"
            assert task.tools is None and task.benchmark == "finmcp" and task.format == TASK_FORMAT
        multi = [t for t in tasks if t.turn == 2]
        assert multi and all(any(m["role"] == "tool" for m in t.messages) for t in multi)
    finally:
        outputs.close()


def test_model_url_sits_beside_the_tags() -> None:
    assert model_url("http://127.0.0.1:1/r/a/s/b/k/1/t/0/fintool760/mcp?tools=X") == (
        "http://127.0.0.1:1/r/a/s/b/k/1/t/0/v1"
    )


def test_fintoolbench_tasks_offer_the_top_k_and_their_url_lists_only_those() -> None:
    inventory = load_inventory("fintool760")
    tools = list(inventory.mcp_tools)
    question = "What was the closing price of Apple stock yesterday?"
    ref = Reference(
        "ftb-1", "single_tool", "s", [Turn(question, [[Call(tools[0]["name"], {})]])], source="fintoolbench"
    )
    url = tagged_url("http://127.0.0.1:1/fintool760/mcp", "r", "ftb-1", 0)
    task = make_task(ref, 0, 0, "r", url, gold_messages(ref, 0), Offer(tools), Limits(20, 5))
    expected = [t["name"] for t in ToolRetriever(tools).top(question, 20)]
    assert task.tools == expected and task.benchmark == "fintoolbench" and task.limits.max_steps == 5
    parts = urlsplit(task.mcp_url)
    assert parts.path == "/r/r/s/ftb-1/t/0/fintool760/mcp"
    assert parse_qs(parts.query)["tools"] == [",".join(expected)]
    wider = make_task(ref, 0, 0, "r", url, gold_messages(ref, 0), Offer(tools), Limits(), top_k=800)
    assert wider.tools is None and wider.mcp_url == url  # K above the tool count: every tool


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "a task is a JSON object"),
        ({"format": "finmcp-task/9"}, "expected 'finmcp-task/1'"),
        ({"format": TASK_FORMAT, "run": "r"}, "without field 'sample'"),
    ],
)
def test_a_bad_task_is_named(data, message) -> None:
    with pytest.raises(TaskFormatError, match=message):
        Task.from_dict(data)


def test_the_schema_ships_in_the_package() -> None:
    import finmcp.evaluator.tasks as package

    assert (Path(package.__file__).parent / "finmcp-task-1.schema.json").is_file()
    assert schema()["properties"]["format"] == {"const": TASK_FORMAT}
