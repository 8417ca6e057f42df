"""Hostile input: fuzzed tool arguments, malformed JSON-RPC, odd HTTP, tags and paths chosen to hurt.

- hypothesis over ``ToolService.call`` (in process, fast): any JSON arguments to any tool name give a
  result or a clear error naming the tool, never another exception;
- a smaller hypothesis run over HTTP against a real server process;
- raw HTTP abuse (bad JSON, batches, empty and oversized bodies, wrong ``Content-Type``, missing or
  wrong protocol headers) to the server and through the proxy: a 4xx with a readable error, and
  both processes stay healthy;
- run/sample tags with SQL metacharacters and ``../`` are stored verbatim and never become paths;
  exports write exactly the file asked for and nothing else;
- lone surrogates (JSON ``"\\ud800"``) wherever a client writes text: answered and logged, both sides.
"""

from __future__ import annotations

import json
import os
from urllib.parse import quote

import anyio
import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from finmcp.recordings import RecordingStore
from finmcp.server.latency import parse_latency
from finmcp.server.service import SOURCE_KEY, ToolService
from finmcp.server.testing import SchemaSimulator
from finmcp.server.validation import MAX_ARGUMENT_DEPTH
from finmcp.tool_specs.inventory import load_inventory
from tests.support import strategies
from tests.support.processes import health
from tests.support.rpc import JSON_HEADERS, modern_headers, tool_call
from tests.support.scripts import run_script
from tests.support.stdio_lines import StdioLines
from tests.support.traces import read_calls, wait_calls, wait_messages

INVENTORY = load_inventory("finmcp65")
TOOL_NAMES = [t.name for t in INVENTORY.tools]

long_texts = st.text(alphabet=st.characters(codec="utf-8"), min_size=1000, max_size=5000)
json_values = strategies.json_values(strategies.json_scalars(2**70, 40, long_texts), key_size=12)
argument_objects = st.dictionaries(st.text(max_size=20), json_values, max_size=6)


@pytest.fixture(scope="module")
def service():
    simulator = SchemaSimulator(INVENTORY)
    return ToolService(INVENTORY, simulate=simulator.simulate, latency=parse_latency("none", seed=0))


def check_result(result: dict, name: str) -> None:
    assert isinstance(result["content"], list) and isinstance(result["isError"], bool)
    if result["_meta"][SOURCE_KEY] == "invalid":
        assert result["isError"] and result["content"][0]["text"].startswith(f"Invalid arguments for {name}")


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(TOOL_NAMES), arguments=argument_objects)
def test_fuzzed_arguments_never_crash_the_service(service, name, arguments):
    result = anyio.run(service.call, name, arguments)
    check_result(result, name)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(TOOL_NAMES), arguments=json_values)
def test_non_object_arguments_are_refused_clearly(service, name, arguments):
    result = anyio.run(service.call, name, arguments)
    check_result(result, name)
    if not isinstance(arguments, dict) and arguments is not None:
        assert result["isError"]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.text(max_size=60).filter(lambda n: n not in TOOL_NAMES))
def test_unknown_tool_names_get_an_invalid_params_error_naming_them(service, name):
    with pytest.raises(MCPError) as caught:
        anyio.run(service.call, name, {})
    assert caught.value.error.code == INVALID_PARAMS and repr(name) in caught.value.error.message


@pytest.mark.parametrize("depth", [MAX_ARGUMENT_DEPTH + 1, 900, 20_000])
def test_deep_nesting_is_refused_with_a_clear_error(service, depth):
    value: object = "x"
    for _ in range(depth):
        value = [value] if depth % 2 else {"k": value}
    result = anyio.run(service.call, "SearchFunds", {"keyword": "a", "extra": value})
    assert result["isError"] and "nested deeper than" in result["content"][0]["text"]
    ok = anyio.run(service.call, "SearchFunds", {"keyword": "a", "extra": [[["shallow"]]]})
    assert not ok["isError"]


# ---------------------------------------------------------------- over HTTP


@pytest.fixture(scope="module")
def server(module_children):
    return module_children.server(["--latency", "none", "--max-body", "200000"])


@pytest.fixture(scope="module")
def proxy(server, module_children, tmp_path_factory):
    db = tmp_path_factory.mktemp("hostile") / "runs.sqlite"
    proc = module_children.proxy(["--upstream", server.url, "--db", str(db), "--max-body", "200000"])
    proc.db = db
    return proc


def call_message(name: str, arguments: object, rid: int = 1) -> dict:
    return tool_call(name, arguments, rid, client="fuzz")


def call_headers(name: str = "GetCurrentTime") -> dict[str, str]:
    return modern_headers("tools/call", name)


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(TOOL_NAMES), arguments=argument_objects)
def test_fuzzed_arguments_over_http_get_answers_never_5xx(server, name, arguments):
    body = json.dumps(call_message(name, arguments))
    response = httpx2.post(server.url, content=body, headers=call_headers(name), timeout=10)
    assert response.status_code == 200, response.text[:300]
    answer = response.json()
    assert answer["id"] == 1 and ("result" in answer or "error" in answer)
    if "error" in answer:
        assert answer["error"]["code"] != -32603, answer  # never an anonymous internal error


VALID = json.dumps(call_message("GetCurrentTime", {})).encode()
ABUSE = {
    "not json": (b"{not json", call_headers()),
    "empty body": (b"", call_headers()),
    "json scalar": (b"42", call_headers()),
    "json null": (b"null", call_headers()),
    "empty batch": (b"[]", call_headers()),
    "batch of two": (b"[" + VALID + b"," + VALID + b"]", call_headers()),
    "no jsonrpc member": (json.dumps({"id": 1, "method": "tools/call"}).encode(), call_headers()),
    "method not a string": (json.dumps({"jsonrpc": "2.0", "id": 1, "method": 5}).encode(), call_headers()),
    "params not an object": (
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": [1]}).encode(),
        call_headers(),
    ),
    "invalid utf-8": (b'{"jsonrpc":"2.0","id":1,"method":"\xff\xfe"}', call_headers()),
    "text/plain": (VALID, {**call_headers(), "Content-Type": "text/plain"}),
    "no content type": (VALID, {k: v for k, v in call_headers().items() if k != "Content-Type"}),
    "accepts only html": (VALID, {**call_headers(), "Accept": "text/html"}),
    "no protocol header": (VALID, {k: v for k, v in call_headers().items() if k != "MCP-Protocol-Version"}),
    "unknown protocol version": (VALID, {**call_headers(), "MCP-Protocol-Version": "1999-01-01"}),
    "Mcp-Method disagrees": (VALID, {**call_headers(), "Mcp-Method": "tools/list"}),
    "Mcp-Name disagrees": (VALID, {**call_headers(), "Mcp-Name": "SearchFunds"}),
    "handshake call without session": (
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "X"}}).encode(),
        JSON_HEADERS,
    ),
    "oversized body": (b'{"x":"' + b"a" * 300_000 + b'"}', call_headers()),
}


def readable_error(response: httpx2.Response) -> str:
    """The error text of a rejection (JSON-RPC error message or the server's JSON ``error``)."""
    body = response.json()
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return body["error"]["message"]
    return body["error"]


@pytest.mark.parametrize("case", sorted(ABUSE))
@pytest.mark.parametrize("via", ["server", "proxy"])
def test_malformed_requests_get_a_clear_4xx_and_nothing_breaks(server, proxy, case, via):
    body, headers = ABUSE[case]
    url = (
        server.url if via == "server" else proxy.tagged("abuse", case.replace(" ", "-").replace("/", "-"), 0)
    )
    response = httpx2.post(url, content=body, headers=headers, timeout=10)
    assert 400 <= response.status_code < 500, (case, response.status_code, response.text[:300])
    assert readable_error(response).strip(), case
    assert health(server)["status"] == "ok" and health(proxy)["status"] == "ok"
    good = httpx2.post(url, content=VALID, headers=call_headers(), timeout=10)
    assert good.status_code == 200 and good.json()["result"]["isError"] is False


def test_proxy_forwards_a_very_deep_body(proxy):
    depth = 995
    arguments = "[" * depth + '"x"' + "]" * depth
    body = json.dumps(call_message("GetCurrentTime", {})).replace("{}", '{"x":' + arguments + "}", 1)
    response = httpx2.post(
        proxy.tagged("deep-body", "s", 0), content=body, headers=call_headers(), timeout=10
    )
    assert response.status_code < 500 and "internal proxy error" not in response.text


def test_deep_arguments_through_the_proxy_are_answered_and_logged(proxy):
    depth = 900  # deep enough to overflow recursive code, still a body the JSON parser accepts
    arguments = "[" * depth + '"x"' + "]" * depth
    body = json.dumps(call_message("GetCurrentTime", {}, rid=9)).replace("{}", '{"x":' + arguments + "}", 1)
    response = httpx2.post(
        proxy.tagged("deep-args", "s", 0), content=body, headers=call_headers(), timeout=10
    )
    assert response.status_code == 200
    assert "nested deeper than" in response.json()["result"]["content"][0]["text"]
    calls = wait_calls(proxy.db, "deep-args", 1)  # committed before the answer was forwarded
    assert [(c["jsonrpc_id"], c["status"]) for c in calls] == [(9, "tool_error")]


# ---------------------------------------------------------------- tags and paths


NASTY_TAGS = [
    "'; DROP TABLE calls; --",
    '" OR 1=1 --',
    "../../../../tmp/finmcp-escape",
    "..\\..\\windows",
    "run%00null",
    "名字 with spaces",
]


@pytest.mark.slow
def test_nasty_tags_are_stored_verbatim_and_never_used_as_paths(proxy, tmp_path):
    for index, tag in enumerate(NASTY_TAGS):
        url = f"{proxy.base}/r/{quote(tag, safe='')}/s/{quote(tag, safe='')}/t/0/mcp"
        response = httpx2.post(url, content=VALID, headers=call_headers(), timeout=10)
        assert response.status_code == 200, (tag, response.text)
        headers = {**call_headers(), "X-Finmcp-Run": f"hdr-{index}", "X-Finmcp-Sample": quote(tag)}
        assert httpx2.post(proxy.url, content=VALID, headers=headers, timeout=10).status_code == 200
    for index, tag in enumerate(NASTY_TAGS):  # call rows are committed before the answers are sent
        (call,) = read_calls(proxy.db, tag)
        assert (call["run_id"], call["sample_id"], call["status"]) == (tag, tag, "ok")
        (call,) = read_calls(proxy.db, f"hdr-{index}")
        assert (call["sample_id"], call["status"]) == (quote(tag), "ok")  # header tags are taken as sent
    with RecordingStore.open(proxy.db) as store:
        tables = {r[0] for r in store.db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"calls", "messages", "sessions", "runs"} <= tables
    assert not os.path.exists("/tmp/finmcp-escape")

    # export each nasty run: exactly the named file appears, nothing else anywhere under tmp_path
    out_dir = tmp_path / "exports"
    out_dir.mkdir()
    for index, tag in enumerate(NASTY_TAGS):
        for fmt in ("jsonl", "finmcp", "fintoolbench"):
            out = out_dir / f"{index}.{fmt}"
            done = run_script(
                "finmcp-proxy", "export", "--db", str(proxy.db), "--run", tag, "--format", fmt, "--output", str(out),
                cwd=tmp_path,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
            assert out.is_file()
        lines = (out_dir / f"{index}.jsonl").read_text(encoding="utf-8").splitlines()
        assert json.loads(lines[0])["run_id"] == tag and json.loads(lines[0])["sample_id"] == tag
    created = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    expected = ["exports", *sorted(f"exports/{i}.{f}" for i in range(len(NASTY_TAGS)) for f in
                                   ("jsonl", "finmcp", "fintoolbench"))]  # fmt: skip
    assert created == expected
    assert not os.path.exists("/tmp/finmcp-escape")


def test_export_paths_go_exactly_where_the_user_asked(tmp_path):
    """A CLI writes where its user points it, ``../`` included; the server export refuses a missing db."""
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    rec = tmp_path / "rec.sqlite"
    with RecordingStore.open(rec) as store:
        store.put_response("qieman79", "GetCurrentTime", {}, {"content": [], "isError": False}, "imported:x")
    done = run_script(
        "finmcp-server",
        "recordings",
        "export",
        "--recordings",
        str(rec),
        "--output",
        "../../x.jsonl",
        cwd=work,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "x.jsonl").is_file() and json.loads((tmp_path / "x.jsonl").read_text())["tool"]
    missing = run_script(
        "finmcp-server",
        "recordings",
        "export",
        "--recordings",
        "../nope.sqlite",
        "--output",
        "y.jsonl",
        cwd=work,
    )
    assert missing.returncode == 2 and "no such file" in missing.stderr
    assert not (work / "y.jsonl").exists() and not (tmp_path / "a" / "nope.sqlite").exists()


def test_escaped_lone_surrogates_in_arguments_are_still_logged(server, proxy_process, tmp_path):
    db = tmp_path / "runs.sqlite"
    proxy = proxy_process(["--upstream", server.url, "--db", str(db)])  # teardown: no write failure
    body = json.dumps(call_message("SearchFunds", {"keyword": "\ud800"}, rid=3))  # ensure_ascii: "\\ud800"
    response = httpx2.post(
        proxy.tagged("surrogate", "s", 0), content=body, headers=call_headers("SearchFunds")
    )
    assert response.status_code == 200 and response.json()["id"] == 3  # the client is answered
    (call,) = read_calls(db, "surrogate")  # committed before the answer was forwarded
    assert call["jsonrpc_id"] == 3 and call["arguments"] == {"keyword": "\ud800"}  # as the client sent it
    assert health(proxy)["write_failures"] == 0
    exported = run_script(
        "finmcp-proxy", "export", "--db", str(db), "--run", "surrogate", "--format", "jsonl"
    )
    assert exported.returncode == 0 and "\\ud800" in exported.stdout, exported.stderr  # kept as its escape


def test_lone_surrogates_anywhere_a_client_writes_are_logged(server, proxy_process, tmp_path):
    """Tool names, ids, methods, client names, _meta tags and batches: every call and message row is written."""
    db = tmp_path / "runs.sqlite"
    proxy = proxy_process(["--upstream", server.url, "--db", str(db)])  # teardown: no write failure
    lone = "\ud800"
    client = f"fuzz{lone}"
    odd_call = tool_call(f"Search{lone}", {"keyword": lone}, f"id{lone}", client=client)
    odd_call["params"]["_meta"]["io.finmcp/sample"] = lone
    bodies = [
        odd_call,
        {**tool_call("SearchFunds", {"keyword": lone}, 5, client=client), "method": f"tools/{lone}"},
        [tool_call("SearchFunds", {"keyword": lone}, 6, client=client), tool_call("GetCurrentTime", {}, 7)],
    ]
    url = proxy.tagged("lone", "s", 0)
    for body in bodies:
        response = httpx2.post(url, content=json.dumps(body), headers=call_headers("SearchFunds"))
        assert response.status_code < 500, response.text  # the upstream's answer, whatever it is
    calls = wait_calls(db, "lone", 3, settled=True)
    assert sorted(str(c["jsonrpc_id"]) for c in calls) == ["6", "7", f"id{lone}"]
    assert {c["sample_id"] for c in calls} == {"s", "\\ud800"}  # a text column keeps the escape as text
    assert [c["arguments"] for c in calls if c["jsonrpc_id"] == 6] == [{"keyword": lone}]
    requests = wait_messages(db, "lone", lambda m: m["direction"] == "c2s", 4)  # written behind the traffic
    assert len(requests) == 4 and "tools/\\ud800" in [m["method"] for m in requests]
    assert health(proxy)["write_failures"] == 0 and health(proxy)["status"] == "ok"


def test_stdio_side_survives_a_batch_holding_a_lone_surrogate(server, tmp_path):
    db = tmp_path / "runs.sqlite"
    lone = "\ud800"
    batch = [tool_call("GetCurrentTime", {"x": lone}, 1), tool_call("GetCurrentTime", {}, 2)]
    with StdioLines(["--upstream", server.url], db, "--run", "lone-stdio", hang_guard=30) as proxy:
        proxy.send(batch)
        proxy.send(tool_call("GetCurrentTime", {}, 3))
        answer: dict = {}
        while answer.get("id") != 3:  # the pump goes on after the batch
            answer = proxy.read()
    assert answer["result"]["isError"] is False
    calls = wait_calls(db, "lone-stdio", 3, settled=True)
    assert [c["arguments"] for c in calls if c["jsonrpc_id"] == 1] == [{"x": lone}]
