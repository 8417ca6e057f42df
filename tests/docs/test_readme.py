"""Every command and code block of README.md runs as written (how: tests/docs/runner.py).

Servers and proxies listen on free loopback ports (the only rewrite besides the placeholders the README
declares), the files commands name are made in a temporary folder (the one file from outside, the
official ``demo_infer.json``, comes from ``../shared``; the tour makes ``demo_eval.json`` from a run),
the Python block runs against the README's proxy, and the MCP host configuration's
command is launched over stdio. ``make demo`` and ``make test`` are out of scope: they are the demo
and the suite themselves, so the README marks them parse-only (``make -n``: the targets exist), as it
marks the ``--agent openai`` command, which needs an LLM endpoint (its flags are parsed). Inline
code in prose and tables names commands and flags (synopses such as ``--transport http|stdio|sse``)
and is not run: what a reader should type is in a block.

The other tests here show the runner fails on what does not run, and check every README command line
against its program's parser without running it (fast, without ``../shared``).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from pathlib import Path

import pytest

from tests.docs.markdown import Block, MarkdownError, code_blocks
from tests.docs.runner import SHELL_LANGS, DocumentError, DocumentRun, Inputs
from tests.support.processes import Children
from tests.support.source import REPO
from tests.thirdparty.servers import TIME

README = REPO / "README.md"
PROXY_DOC = REPO / "docs" / "proxy.md"


def blocks_of(path: Path) -> list[Block]:
    return code_blocks(path.read_text(encoding="utf-8"))


def official_inputs(shared: Path) -> Inputs:
    """The one file the README's commands name that comes from outside: the FinMCP-Bench release's
    ``demo_infer.json`` (the tour makes everything else, ``demo_eval.json`` included)."""
    infer = shared / "finmcp" / "demo_infer.json"

    def demo_infer(path: Path) -> None:
        shutil.copyfile(infer, path)

    return {"demo_infer.json": demo_infer}


def tool_outputs(messages: list[dict]) -> list[str]:
    """The contents of the ``tool`` messages of an official sample's messages, in order."""
    return [m["content"] for m in messages if m["role"] == "tool"]


def assert_tour_numbers(folder: Path) -> None:
    """What the tour's prose says of its results: the slice's official macro F1 counted over all 613
    samples and over its 20, and the official file made from a strict replay of the real outputs."""
    report = json.loads((folder / "report" / "report.json").read_text("utf-8"))
    assert report["official"]["overall"]["macro_F1"] == 0.0326
    assert report["coverage"]["missing_predictions"] == 593
    assert (
        json.loads((folder / "report-20" / "report.json").read_text("utf-8"))["official"]["overall"]["N"]
        == 20
    )
    samples = json.loads((folder / "demo_eval.json").read_text("utf-8"))  # made by the tour's export
    assert len(samples) == 6 and sum(len(tool_outputs(s["messages_pred"])) for s in samples) == 24
    for sample in samples:  # the strict server answered every call with the file's own output
        assert tool_outputs(sample["messages_pred"]) == tool_outputs(sample["messages"]), sample["id"]


def assert_own_agents(db: Path) -> None:
    """The three "Bring your own agent" runs stored an answer per task: the program's (stdout), the
    function's, and the imported file's."""
    from finmcp.recordings.answers import answers_of

    for run, start, source in (
        ("my-cli", "65 tools, turn ", "harness"),
        ("my-fn", "sample ", "harness"),
        ("my-own", "sample ", "import:answers.jsonl"),
    ):
        answers = answers_of(db, run)
        assert len({a.sample_id for a in answers}) == 3, run
        for answer in answers:
            assert answer.error is None and str(answer.answer).startswith(start), (run, answer)
            assert answer.source == source, (run, answer)


@pytest.mark.slow
@pytest.mark.shared
def test_every_readme_block_runs_as_written(shared_dir, tmp_path, monkeypatch, children):
    monkeypatch.chdir(tmp_path)  # the folder the reader works in (children inherit it)
    # the reader installed finmcp and mcp-server-time (the recipe's third-party server): on PATH
    on_path = [str(Path(sys.executable).parent), str(TIME.binary().parent), os.environ.get("PATH", "")]
    monkeypatch.setenv("PATH", os.pathsep.join(on_path))
    run = DocumentRun(tmp_path, children, official_inputs(shared_dir))
    run.run(blocks_of(README), "README.md")
    ran = "\n".join(run.log)
    # the runner did each kind of thing (a broken extractor must not pass by running nothing)
    for needle in (
        "run finmcp-server",
        "run finmcp-proxy",
        "run finmcp-eval score",
        "parse make",
        "listening:",
        "run finmcp-eval export --format finmcp --bench demo_infer.json",
        "run finmcp-eval score --bench demo_infer.json --preds demo_eval.json",
    ):
        assert needle in ran, ran
    assert_tour_numbers(tmp_path)
    for needle in ("over stdio", "python block printed", "host config finmcp:"):
        assert needle in ran, ran
    # the MCP host recipes: desktop and VS Code configurations (stdio and HTTP), Inspector's file and CLI
    for needle in (
        "host config finmcp-http: http://127.0.0.1:",
        "saved inspector.json",
        "inspector called GetFundDiagnosis",
        "inspector listed",
    ):
        assert needle in ran, ran
    assert ran.count("tools over stdio") >= 3, ran
    # the recipes "Bring your own agent": a program, a function, tasks out and answers in
    for needle in (
        "saved my_agent.py",
        "run finmcp-eval run --bench finmcp-sim --agent 'cmd:python my_agent.py'",
    ):
        assert needle in ran, ran
    assert_own_agents(tmp_path / "runs.sqlite")
    # the recipe "Record any server, replay it, audit it": the audit found nothing, then the drift
    for needle in ("run finmcp-server --recordings time.sqlite", "run finmcp-proxy audit --db trace.sqlite"):
        assert needle in ran, ran


def test_readme_blocks_are_all_runnable_or_marked():
    blocks = blocks_of(README)
    assert len(blocks) >= 8
    for block in blocks:
        assert block.has("text") or block.lang in SHELL_LANGS | {"python", "json"}, block


def test_every_readme_command_line_parses(tmp_path):
    """Fast: each command of every shell block passes its program's argument parser (nothing runs)."""
    run = DocumentRun(tmp_path)  # parsing starts nothing
    count = 0
    for block in blocks_of(README):
        if block.lang in SHELL_LANGS and not block.has("text"):
            for line in block.text.splitlines():
                argv = shlex.split(line.removeprefix("$ "), comments=True) if not line.startswith(" ") else []
                if argv and argv[0] in ("make", "finmcp-server", "finmcp-proxy", "finmcp-eval", "npx"):
                    run.parse(argv)
                    count += 1
    assert count >= 13


def test_proxy_doc_examples_are_the_readmes():
    """docs/proxy.md repeats the README's client examples: the README test runs them."""
    readme = {(b.lang, b.text) for b in blocks_of(README)}
    examples = [b for b in blocks_of(PROXY_DOC) if b.lang in ("python", "json")]
    assert len(examples) == 2
    for block in examples:
        assert (block.lang, block.text) in readme, f"docs/proxy.md line {block.line} differs from the README"


# ---------------------------------------------------------------- the runner fails on what does not run


def run_markdown(markdown: str, tmp_path: Path, children: Children | None = None) -> DocumentRun:
    run = DocumentRun(tmp_path, children)
    run.run(code_blocks(markdown), "doc.md")
    return run


def test_a_command_that_fails_fails_the_document(tmp_path):
    with pytest.raises(DocumentError, match="exit status 2"):
        run_markdown("Try:\n\n    finmcp-server inventorys\n", tmp_path)


def test_a_server_that_does_not_start_fails_the_document(tmp_path, children):
    with pytest.raises(DocumentError, match="--inventory nope"):
        run_markdown("Serve:\n\n    finmcp-server --inventory nope --port 8765\n", tmp_path, children)


def test_shown_output_must_match(tmp_path):
    command = "    $ python -c \"print('a'); print('b')\"\n"
    run_markdown("Look:\n\n" + command + "    a\n    b\n", tmp_path)
    for shown in ("    b\n    a\n", "    c\n"):
        with pytest.raises(DocumentError, match="does not show"):
            run_markdown("Look:\n\n" + command + shown, tmp_path)


def test_a_python_block_that_raises_or_names_an_unknown_port_fails(tmp_path):
    with pytest.raises(DocumentError, match="ZeroDivisionError"):
        run_markdown("```python\nprint(1 / 0)\n```\n", tmp_path)
    with pytest.raises(DocumentError, match="no process of the document listens on port 8766"):
        run_markdown('```python\nURL = "http://127.0.0.1:8766/mcp"\n```\n', tmp_path)


def test_parse_only_still_catches_unknown_flags_and_targets(tmp_path):
    marked = "<!-- readme-test: parse-only -->\n\n    {}\n"
    run_markdown(marked.format("finmcp-eval run --agent openai --llm-model M --spawn --run r"), tmp_path)
    with pytest.raises(DocumentError, match="unrecognized arguments: --llm-modle"):
        run_markdown(marked.format("finmcp-eval run --agent openai --llm-modle M --spawn --run r"), tmp_path)
    with pytest.raises(DocumentError, match="make -n no-such-target"):
        run_markdown(marked.format("make no-such-target"), tmp_path)


def test_unmarked_or_unknown_blocks_and_directives_fail(tmp_path):
    with pytest.raises(DocumentError, match="unlabelled block"):
        run_markdown("```\nsomething\n```\n", tmp_path)
    run_markdown("<!-- readme-test: text (a diagram) -->\n```\nsomething\n```\n", tmp_path)
    with pytest.raises(MarkdownError, match="unknown readme-test directive 'skip'"):
        code_blocks("<!-- readme-test: skip -->\n\n    make demo\n")
    with pytest.raises(MarkdownError, match="applies to no block"):
        code_blocks("<!-- readme-test: text -->\n## Heading\n")


# ---------------------------------------------------------------- MCP host recipes: what the runner refuses


def test_host_configs_need_absolute_commands_and_known_shapes(tmp_path):
    relative = '```json\n{"mcpServers": {"f": {"command": "finmcp-proxy", "args": []}}}\n```\n'
    with pytest.raises(DocumentError, match="not an absolute path"):
        run_markdown(relative, tmp_path)
    with pytest.raises(DocumentError, match="mcpServers"):
        run_markdown('```json\n{"servers": {}}\n```\n', tmp_path)
    with pytest.raises(DocumentError, match="unknown server type 'websocket'"):
        run_markdown('```json\n{"servers": {"f": {"type": "websocket", "url": "ws://x"}}}\n```\n', tmp_path)
    with pytest.raises(DocumentError, match="no process of the document listens on port 8766"):
        run_markdown(
            '```json\n{"servers": {"f": {"type": "http", "url": "http://127.0.0.1:8766/mcp"}}}\n```\n',
            tmp_path,
        )


def test_inspector_lines_are_read_with_inspectors_flags(tmp_path):
    saved = '<!-- readme-test: file i.json -->\n```json\n{"mcpServers": {"a": {"type": "http", "url": "http://127.0.0.1:9/mcp"}, "b": {"type": "http", "url": "http://127.0.0.1:9/mcp"}}}\n```\n'
    run = run_markdown(saved, tmp_path)  # saved, not run (its port is rewritten where it is read)
    assert (tmp_path / "i.json").is_file() and run.log == ["saved i.json"]
    for line, error in (
        ("npx @modelcontextprotocol/inspector --cli --config i.json --method tools/list", "has 2 servers"),
        (
            "npx @modelcontextprotocol/inspector --cli --config i.json --server c --method tools/list",
            "no server 'c'",
        ),
        ("npx @modelcontextprotocol/inspector --cli --config nope.json --method tools/list", "no such file"),
        ("npx @modelcontextprotocol/inspector --cli --config i.json --server a", "--cli needs --method"),
        (
            "npx @modelcontextprotocol/inspector --cli --config i.json --method tools/call",
            "needs --tool-name",
        ),
        ("npx @modelcontextprotocol/inspector --clii --config i.json", "unknown option --clii"),
        (
            "npx @modelcontextprotocol/inspector --cli http://127.0.0.1:9/mcp --method tools/list",
            "--transport http",
        ),
        ("npx cowsay hello", "only @modelcontextprotocol/inspector is known"),
    ):
        with pytest.raises(DocumentError, match=error):
            run_markdown(saved + f"\n    {line}\n", tmp_path)
    with pytest.raises(DocumentError, match="no process of the document listens on port 9"):
        run_markdown(
            saved
            + "\n    npx @modelcontextprotocol/inspector --cli --config i.json --server a --method tools/list\n",
            tmp_path,
        )
