"""One vocabulary across finmcp-server, finmcp-proxy and finmcp-eval; no old spelling left."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from finmcp.evaluator.cli import build_parser as build_eval_parser
from finmcp.proxy.cli import build_inspect_parser, build_serve_parser
from finmcp.server.cli import build_parser as build_server_parser
from tests.support.scripts import run_script

OLD_SPELLINGS = (
    "--refs",
    "--benchmark",
    "--judge-url",
    "--judge-model",
    "--base-url",
    "--model",
    "--api-key-env",
    "--record-into",
    "--record-inventory",
    "--listen",
    "--out",
)
"""Spellings finmcp had before its first release; none of them is accepted any more."""


def _parsers() -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every parser and sub-parser of the three programs, with its command path."""
    stack = [
        ("finmcp-server", build_server_parser()),
        ("finmcp-proxy", build_serve_parser()),
        ("finmcp-proxy", build_inspect_parser()),
        ("finmcp-eval", build_eval_parser()),
    ]
    while stack:
        name, parser = stack.pop()
        yield name, parser
        for action in parser._actions:  # noqa: SLF001 - walking argparse's tree is the point of this test
            if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
                stack.extend((f"{name} {sub}", p) for sub, p in action.choices.items())


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {s: a for a in parser._actions for s in a.option_strings}  # noqa: SLF001


def test_no_command_has_an_old_spelling():
    for name, parser in _parsers():
        assert not set(_options(parser)) & set(OLD_SPELLINGS), name


def test_outputs_are_named_for_what_they_are():
    """A file is ``--output``, a report folder ``--report-dir``, a working folder ``--out-dir``."""
    seen: dict[str, set[str]] = {}
    for name, parser in _parsers():
        for flag in _options(parser):
            if flag in ("--output", "--report-dir", "--out-dir"):
                seen.setdefault(flag, set()).add(name)
    assert {"finmcp-eval export", "finmcp-proxy export", "finmcp-server recordings export"} <= seen[
        "--output"
    ]
    assert {"finmcp-eval synth chains", "finmcp-server graph"} <= seen["--output"]
    assert {"finmcp-eval score", "finmcp-eval compare", "finmcp-eval run"} == seen["--report-dir"]
    assert {"finmcp-eval demo", "finmcp-eval synth build"} == seen["--out-dir"]


def test_the_same_thing_has_the_same_flag_everywhere():
    """Every option whose destination is a benchmark, recordings file, trace store or LLM endpoint is
    spelled the one way."""
    canonical = {"bench": "--bench", "recordings": "--recordings", "db": "--db", "llm_url": "--llm-url"}
    seen: dict[str, set[str]] = {}
    for name, parser in _parsers():
        for flag, action in _options(parser).items():
            if action.dest in canonical:
                assert flag == canonical[action.dest], f"{name}: {flag} for {action.dest}"
                seen.setdefault(action.dest, set()).add(name)
    assert {"finmcp-eval score", "finmcp-eval run", "finmcp-eval synth stats"} <= seen["bench"]
    assert {"finmcp-server", "finmcp-proxy", "finmcp-eval run", "finmcp-server recordings bake"} <= seen[
        "recordings"
    ]
    assert {"finmcp-eval score", "finmcp-eval synth queries", "finmcp-eval run"} <= seen["llm_url"]


@pytest.mark.parametrize(
    "argv",
    [
        ["score", "--refs", "r.jsonl"],
        ["score", "--judge-url", "http://127.0.0.1:1/v1"],
        ["run", "--agent", "openai", "--spawn", "--run", "r", "--model", "m"],
        ["synth", "export", "--benchmark", "finmcp-sim", "--output", "o"],
        ["score", "--bench", "finmcp-sim", "--out", "o"],
    ],
)
def test_eval_refuses_old_spellings(argv, capsys):
    with pytest.raises(SystemExit):
        build_eval_parser().parse_args(argv)
    assert "unrecognized arguments" in capsys.readouterr().err


def test_proxy_and_server_refuse_old_spellings(capsys):
    with pytest.raises(SystemExit):
        build_serve_parser().parse_args(
            ["--upstream", "http://127.0.0.1:1/mcp", "--db", "d", "--record-into", "r"]
        )
    with pytest.raises(SystemExit):
        build_server_parser().parse_args(["bake", "--calls", "c.jsonl", "--recordings", "r.sqlite"])
    with pytest.raises(SystemExit):
        build_inspect_parser().parse_args(["replay", "--db", "d", "--run", "r", "--against", "http://h/mcp"])
    capsys.readouterr()


@pytest.mark.slow
def test_recordings_bake_and_export_through_the_installed_scripts(tmp_path: Path):
    calls = tmp_path / "calls.jsonl"
    calls.write_text(json.dumps({"tool": "GetCurrentTime", "arguments": {}}) + "\n")
    db, path = tmp_path / "rec.sqlite", tmp_path / "rec.jsonl"
    done = run_script("finmcp-server", "recordings", "bake", "--calls", str(calls), "--recordings", str(db))
    assert done.returncode == 0, done.stderr
    done = run_script("finmcp-server", "recordings", "export", "--recordings", str(db), "--output", str(path))
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["tool"] for line in path.read_text().splitlines()] == ["GetCurrentTime"]
    done = run_script("finmcp-server", "bake", "--calls", str(calls), "--recordings", str(db))
    assert done.returncode == 2 and "invalid choice: 'bake'" in done.stderr
