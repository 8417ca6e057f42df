"""One vocabulary across finmcp-server, finmcp-proxy and finmcp-eval; old spellings as deprecated aliases."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from evaluator.cli import build_parser as build_eval_parser
from proxy.cli import build_inspect_parser, build_serve_parser
from recordings.plumbing.flags import add_bench, add_option, renamed_subcommand
from server.cli import build_parser as build_server_parser
from tests.support.scripts import run_script

OLD_SPELLINGS = {
    "--refs": "--bench",
    "--benchmark": "--bench",
    "--judge-url": "--llm-url",
    "--judge-model": "--llm-model",
    "--base-url": "--llm-url",
    "--model": "--llm-model",
    "--api-key-env": "--llm-key-env",
    "--record-into": "--recordings",
    "--record-inventory": "--recordings-inventory",
    "--listen": "--host H --port P",
}


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


def test_no_command_shows_an_old_spelling_and_each_still_parses_hidden():
    hidden_seen = set()
    for name, parser in _parsers():
        for flag, action in _options(parser).items():
            if flag in OLD_SPELLINGS:
                assert action.help == argparse.SUPPRESS, f"{name} shows the old spelling {flag}"
                hidden_seen.add(flag)
        assert "--refs" not in parser.format_help(), name
    assert hidden_seen == set(OLD_SPELLINGS)


def test_the_same_thing_has_the_same_flag_everywhere():
    """Every option whose destination is a benchmark, recordings file, trace store or LLM endpoint is
    spelled the one way (plus hidden aliases)."""
    canonical = {"bench": "--bench", "recordings": "--recordings", "db": "--db", "llm_url": "--llm-url"}
    seen: dict[str, set[str]] = {}
    for name, parser in _parsers():
        for flag, action in _options(parser).items():
            if action.dest in canonical and action.help != argparse.SUPPRESS:
                assert flag == canonical[action.dest], f"{name}: {flag} for {action.dest}"
                seen.setdefault(action.dest, set()).add(name)
    assert {"finmcp-eval score", "finmcp-eval run", "finmcp-eval synth stats"} <= seen["bench"]
    assert {"finmcp-server", "finmcp-proxy", "finmcp-eval run", "finmcp-server recordings bake"} <= seen[
        "recordings"
    ]
    assert {"finmcp-eval score", "finmcp-eval synth queries", "finmcp-eval run"} <= seen["llm_url"]


def test_alias_stores_like_the_new_flag_and_says_so(capsys):
    parser = argparse.ArgumentParser(prog="prog")
    add_bench(parser, aliases=["--refs"])
    add_option(parser, "--tag", aliases=["--old-tag"], action="append", default=[])
    args = parser.parse_args(["--refs", "a.jsonl", "--tag", "x", "--old-tag", "y"])
    assert args.bench == "a.jsonl" and args.tag == ["x", "y"]
    err = capsys.readouterr().err
    assert "prog: --refs is deprecated; use --bench" in err
    assert "prog: --old-tag is deprecated; use --tag" in err
    assert parser.parse_args([]).bench is None  # the alias adds no default of its own


def test_renamed_subcommand_moves_the_old_verb_under_the_new_word(capsys):
    assert renamed_subcommand(["bake", "--calls", "c"], "p", ("bake",), "recordings") == [
        "recordings",
        "bake",
        "--calls",
        "c",
    ]
    assert "p: 'bake' is deprecated; use 'recordings bake'" in capsys.readouterr().err
    assert renamed_subcommand(["recordings", "bake"], "p", ("bake",), "recordings") == ["recordings", "bake"]
    assert capsys.readouterr().err == ""


@pytest.mark.slow
def test_old_spellings_work_end_to_end_through_the_installed_scripts(tmp_path: Path):
    calls = tmp_path / "calls.jsonl"
    calls.write_text(json.dumps({"tool": "GetCurrentTime", "arguments": {}}) + "\n")
    new, old = tmp_path / "new.sqlite", tmp_path / "old.sqlite"
    done = run_script("finmcp-server", "recordings", "bake", "--calls", str(calls), "--recordings", str(new))
    assert done.returncode == 0 and "deprecated" not in done.stderr, done.stderr
    done = run_script("finmcp-server", "bake", "--calls", str(calls), "--out", str(old))
    assert done.returncode == 0, done.stderr
    assert "'bake' is deprecated; use 'recordings bake'" in done.stderr
    assert "--out is deprecated; use --recordings" in done.stderr
    assert old.is_file() and new.is_file()
    out = [tmp_path / "new.jsonl", tmp_path / "old.jsonl"]
    for db, path in zip((new, old), out, strict=True):
        done = run_script(
            "finmcp-server", "recordings", "export", "--recordings", str(db), "--out", str(path)
        )
        assert done.returncode == 0, done.stderr
    rows = [[json.loads(line) for line in path.read_text().splitlines()] for path in out]
    for row in (*rows[0], *rows[1]):
        del row["created"]  # when it was baked
    assert rows[0] == rows[1] and len(rows[0]) == 1


@pytest.mark.parametrize(
    ("argv", "dest", "value"),
    [
        (["score", "--refs", "r.jsonl"], "bench", "r.jsonl"),
        (["score", "--judge-url", "http://127.0.0.1:1/v1"], "llm_url", "http://127.0.0.1:1/v1"),
        (["score", "--judge-model", "m"], "llm_model", "m"),
        (["run", "--agent", "openai", "--spawn", "--run", "r", "--model", "m"], "llm_model", "m"),
        (["run", "--agent", "openai", "--spawn", "--run", "r", "--base-url", "u"], "llm_url", "u"),
        (["run", "--agent", "openai", "--spawn", "--run", "r", "--api-key-env", "K"], "llm_key_env", "K"),
        (["synth", "stats", "--refs", "r.jsonl"], "bench", "r.jsonl"),
        (["synth", "graph", "--refs", "a", "--refs", "b"], "bench", ["a", "b"]),
        (["synth", "export", "--benchmark", "finmcp-sim", "--out", "o"], "bench", "finmcp-sim"),
    ],
)
def test_eval_aliases(argv, dest, value, capsys):
    assert getattr(build_eval_parser().parse_args(argv), dest) == value
    assert "is deprecated; use --" in capsys.readouterr().err


def test_proxy_aliases(capsys):
    args = build_serve_parser().parse_args(
        ["--upstream", "http://127.0.0.1:1/mcp", "--db", "d", "--listen", "127.0.0.1:9", "--record-into", "r"]
    )
    assert args.listen == ("127.0.0.1", 9) and args.recordings == "r"
    err = capsys.readouterr().err
    assert "--listen is deprecated; use --host H --port P" in err
    assert "--record-into is deprecated; use --recordings" in err
