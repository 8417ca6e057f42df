"""``run --executor ray --shards N``: shards as Ray tasks (a local, loopback-only Ray with 2 CPUs), each
with its own server + proxy, into one SQLite trace store; the run scores like the unsharded run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from finmcp.evaluator.benchmarks import load_benchmark
from finmcp.evaluator.cli import main
from tests.evaluator.harness.shard_runs import NOISE
from tests.support.postgres import require_or_skip


def test_a_clear_error_without_ray(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['ray'] = None\n"  # as if the extra were not installed
        "from evaluator.cli import main\n"
        f"sys.exit(main(['run', '--agent', 'oracle', '--spawn', '--run', 'r', '--db', {str(tmp_path / 'x.sqlite')!r},"
        " '--executor', 'ray', '--shards', '2', '--limit', '2', '--no-progress']))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    assert "--executor ray needs Ray, an optional extra: pip install 'finmcp-kit[ray]'" in out.stderr


def scenario(folder: str) -> None:
    """Inside a network namespace that has only ``lo``: the unsharded run, then the same run on Ray."""
    import ray

    interfaces = [line.split(":")[0].strip() for line in Path("/proc/net/dev").read_text().splitlines()[2:]]
    assert interfaces == ["lo"], f"not in a loopback-only network namespace: {interfaces}"
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False)
    try:
        ids = [r.id for r in load_benchmark("finmcp-sim")[::40]]  # 16 samples of every type
        samples = [a for i in ids for a in ("--sample", i)]
        tmp = Path(folder)
        common = ["run", "--agent", "noisy", "--noise", NOISE, "--seed", "3", "--spawn", "--db",
                  str(tmp / "runs.sqlite"), "--no-progress", "--bootstrap", "200", *samples]  # fmt: skip
        assert main([*common, "--run", "run-whole-q", "--report-dir", str(tmp / "a")]) == 0
        assert (
            main(
                [
                    *common,
                    "--run",
                    "run-ray-q",
                    "--executor",
                    "ray",
                    "--shards",
                    "2",
                    "--report-dir",
                    str(tmp / "b"),
                ]
            )
            == 0
        )
    finally:
        ray.shutdown()


@pytest.mark.slow
def test_ray_shards_score_like_one_run(tmp_path: Path) -> None:
    pytest.importorskip("ray")  # in the dev extra: CI always has it
    # Ray's own gRPC servers bind every interface whatever _node_ip_address says; a network namespace
    # with only a loopback interface keeps them (and everything else) off the network.
    if subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode != 0:
        require_or_skip("needs a network namespace (unshare -n) to keep Ray's listeners on loopback")
    code = f"from tests.evaluator.harness.test_ray_executor import scenario; scenario({str(tmp_path)!r})"
    out = subprocess.run(
        ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$0" -c "$1"', sys.executable, code],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"},
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    assert "[shard 0/2: 8 samples]" in out.stdout and "[shard 1/2: 8 samples]" in out.stdout
    a, b = (json.loads((tmp_path / x / "report.json").read_text("utf-8")) for x in ("a", "b"))
    a, b = (
        json.loads(json.dumps(r).replace(run, "RUN")) for r, run in ((a, "run-whole-q"), (b, "run-ray-q"))
    )
    assert a["coverage"]["scored"] >= 13 and 0 < a["official"]["overall"]["macro_F1"] < 1
    assert a == b
    states = sorted(p.name for p in tmp_path.glob("runs.sqlite.shard-*.harness.jsonl"))
    assert states == ["runs.sqlite.shard-0-of-2.harness.jsonl", "runs.sqlite.shard-1-of-2.harness.jsonl"]
