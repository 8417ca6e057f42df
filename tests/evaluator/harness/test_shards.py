"""Sharded runs: the split is a stratified partition fixed by the references alone, and 4 shards run as
4 processes into one SQLite trace store score exactly like one unsharded run."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from finmcp.evaluator.benchmarks import load_benchmark
from finmcp.evaluator.cli import main
from finmcp.evaluator.errors import EvalInputError
from finmcp.evaluator.harness.shards import Shard, assign, parse_shard, select
from tests.evaluator.harness.shard_runs import run_command, score_report


def test_parse_shard_forms() -> None:
    assert parse_shard("0/4") == Shard(0, 4)
    assert parse_shard(" 3 / 4 ") == Shard(3, 4)
    assert parse_shard("1/4", base=1) == Shard(0, 4)
    assert parse_shard("4/4", base=1) == Shard(3, 4)
    assert str(Shard(2, 4)) == "2/4" and Shard(2, 4).label == "shard-2-of-4"
    with pytest.raises(EvalInputError, match="add --shard-base 1"):
        parse_shard("4/4")
    with pytest.raises(EvalInputError, match=r"out of range 1\.\.4 \(1-based\)"):
        parse_shard("0/4", base=1)
    for bad in ("", "1", "a/4", "1/-2", "-1/4", "1/4/2"):
        with pytest.raises(EvalInputError, match="expected I/N"):
            parse_shard(bad)
    with pytest.raises(EvalInputError, match=">= 1"):
        parse_shard("0/0")


def test_every_sample_in_one_shard_balanced_per_stratum() -> None:
    refs = load_benchmark("finmcp-sim")
    assert len(refs) == 613
    for n in (1, 2, 4, 7):
        parts = [select(refs, Shard(i, n)) for i in range(n)]
        ids = [r.id for part in parts for r in part]
        assert sorted(ids) == sorted(r.id for r in refs) and len(set(ids)) == len(refs)
        sizes = [len(p) for p in parts]
        assert max(sizes) - min(sizes) <= 1, sizes
        for part in parts:  # file order kept within a shard
            positions = [refs.index(r) for r in part]
            assert positions == sorted(positions)
        strata = Counter((r.type, r.scenario) for r in refs)
        for key, total in strata.items():
            counts = [sum(1 for r in p if (r.type, r.scenario) == key) for p in parts]
            assert max(counts) - min(counts) <= 1 and sum(counts) == total, (n, key, counts)
    # pinned: the split of the shipped benchmark never changes silently
    assert Counter(assign(refs, 4)) == {0: 154, 1: 153, 2: 153, 3: 153}
    assert [r.id for r in select(refs, Shard(0, 4))][:3] == [
        "sim-multi-0004",
        "sim-multi-0008",
        "sim-multi-0012",
    ]


def test_split_is_independent_of_the_hash_seed() -> None:
    code = (
        "from finmcp.evaluator.benchmarks import load_benchmark; from evaluator.harness.shards import assign;"
        "print(''.join(map(str, assign(load_benchmark('finmcp-sim'), 5))))"
    )
    mine = "".join(map(str, assign(load_benchmark("finmcp-sim"), 5)))
    for seed in ("1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        assert out.stdout.strip() == mine


def test_shard_flags_are_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["run", "--agent", "oracle", "--spawn", "--run", "r", "--db", str(tmp_path / "t.sqlite")]
    for extra, message in (
        (["--shard", "4/4"], "add --shard-base 1"),
        (["--shard", "0/4", "--report-dir", str(tmp_path / "rep")], "--report-dir scores the whole run"),
        (["--shards", "2"], "--shards N needs --executor ray"),
        (["--executor", "ray", "--shards", "0"], "--executor ray needs --shards N"),
    ):
        assert main([*base, *extra]) != 0
        assert message in capsys.readouterr().err
    pg = [
        "run",
        "--agent",
        "oracle",
        "--proxy",
        "http://127.0.0.1:9/mcp",
        "--run",
        "r",
        "--db",
        "postgresql://u@127.0.0.1:9/x",
    ]
    assert main(pg) != 0
    assert "--db postgresql://… needs --spawn" in capsys.readouterr().err
    assert not (tmp_path / "t.sqlite").exists()  # refused before anything started


@pytest.mark.slow
def test_four_shard_processes_score_like_one_run(tmp_path: Path) -> None:
    refs = load_benchmark("finmcp-sim")
    ids = [r.id for r in refs[::20]]  # 31 samples of every type
    db = tmp_path / "runs.sqlite"
    whole = subprocess.run(run_command(db, "whole", ids), capture_output=True, text=True, timeout=300)
    assert whole.returncode == 0, whole.stderr
    shards = [
        subprocess.Popen(
            run_command(db, "sharded", ids, "--shard", f"{i}/4", "--shard-base", "1"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(1, 5)
    ]
    outputs = [p.communicate(timeout=300) for p in shards]
    for p, (_out, err) in zip(shards, outputs, strict=True):
        assert p.returncode == 0, err
    lines = [out.strip().splitlines()[0] for out, _ in outputs]
    done = [int(line.split(": ")[1].split(" done")[0]) for line in lines]
    assert sum(done) == len(ids) and max(done) - min(done) <= 1, lines
    states = sorted(p.name for p in tmp_path.glob("runs.sqlite.shard-*.harness.jsonl"))
    assert states == [f"runs.sqlite.shard-{i}-of-4.harness.jsonl" for i in range(4)]

    a, b = score_report(db, "whole", tmp_path / "a"), score_report(db, "sharded", tmp_path / "b")
    assert (
        len(ids) - 5 <= a["coverage"]["scored"] <= len(ids)
    )  # a sample whose calls were all dropped has no rows
    assert 0 < a["official"]["overall"]["macro_F1"] < 1  # the noise really perturbed the calls
    assert a == b

    # a shard started again without --resume is refused: its samples already have calls
    again = subprocess.run(
        run_command(db, "sharded", ids, "--shard", "0/4"), capture_output=True, text=True, timeout=120
    )
    assert again.returncode != 0 and "this shard's samples" in again.stderr
