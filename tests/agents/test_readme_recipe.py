"""README "Bring your own agent", the framework recipe: its commands and its Python block, run as written.

The README's own test only parses this recipe (the Python block needs openai-agents, which the project's
venv does not have). Here the three programs start as the README says (on free loopback ports instead of
8765/8766/8771), the block runs in the openai-agents environment ``tests/clients/provision.py`` keeps,
and the score command runs on the trace it left; the prose's claims are checked: the gold reply is
printed, five calls are logged, TF1 and consist are 1.0 and EMR 0.0.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from finmcp.evaluator.benchmarks import load_benchmark
from finmcp.recordings.plumbing.launch import FinmcpProcess
from tests.clients import provision
from tests.docs.markdown import Block, code_blocks
from tests.support.postgres import require_or_skip
from tests.support.processes import Children
from tests.support.source import REPO
from tests.support.traces import wait_calls

HEADING = "### A framework agent"


def recipe_blocks() -> list[Block]:
    """The code blocks between the recipe's heading and the next ``## `` heading."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    start = text.index(HEADING)
    end = text.index("\n## ", start)
    first_line = text[:start].count("\n")
    return [b for b in code_blocks(text) if first_line < b.line <= text[:end].count("\n") + 1]


def without_port(argv: list[str]) -> list[str]:
    out, items = [], iter(argv)
    for item in items:
        if item == "--port":
            next(items)
        else:
            out.append(item)
    return out


@pytest.mark.slow
def test_framework_recipe_runs_as_written(children: Children, tmp_path: Path) -> None:
    if not provision.ready("openai-agents"):
        require_or_skip(
            "environment 'openai-agents' is not provisioned; run python3 tests/clients/provision.py"
        )
    commands, agent, score_block = recipe_blocks()
    assert agent.lang == "python" and commands.has("parse-only") and score_block.has("parse-only")
    server_line, proxy_line, model_line = (shlex.split(line) for line in commands.text.strip().splitlines())
    assert (
        server_line[0] == "finmcp-server"
        and proxy_line[0] == "finmcp-proxy"
        and model_line[:2] == ["finmcp-eval", "model"]
    )
    db = tmp_path / "runs.sqlite"
    server = children.server(without_port(server_line[1:]))
    proxy_args = [
        server.url if a == "http://127.0.0.1:8765/mcp" else str(db) if a == "runs.sqlite" else a
        for a in proxy_line[1:]
    ]
    proxy = children.proxy(without_port(proxy_args))
    with FinmcpProcess(
        "finmcp-eval", [*without_port(model_line[1:]), "--host", "127.0.0.1", "--port", "0"]
    ) as model:
        code = agent.text.replace("http://127.0.0.1:8771", model.base).replace(
            "http://127.0.0.1:8766", proxy.base
        )
        done = subprocess.run(
            [str(provision.python_of("openai-agents"))],
            input=code,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    gold = next(r for r in load_benchmark("finmcp-sim") if r.id == "sim-multi-0001").turns[0]
    assert done.stdout.rstrip("\n") == gold.assistant
    assert len(wait_calls(db, "my-agent", 5, settled=True)) == 5
    argv = shlex.split(score_block.text.strip())
    argv = [str(db) if a == "runs.sqlite" else a for a in argv[1:]]
    out = tmp_path / "report"
    scored = subprocess.run(
        [
            sys.executable,
            "-m",
            "finmcp.evaluator",
            *argv,
            "--report-dir",
            str(out),
            "--format",
            "json",
            "--bootstrap",
            "0",
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert scored.returncode == 0, scored.stderr
    headline = json.loads((out / "report.json").read_text(encoding="utf-8"))["headline"]
    values = {k: headline[k]["value"] for k in ("official.macro_F1", "official.consist_mean", "paper.EMR")}
    assert values == {"official.macro_F1": 1.0, "official.consist_mean": 1.0, "paper.EMR": 0.0}
