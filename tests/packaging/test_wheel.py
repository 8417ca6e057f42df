"""The wheel, tested as users get it: built once from a clean copy, installed outside the checkout, run there.

One sdist and one wheel per module (``python -m build``: the wheel is built from the sdist). The wheel is
installed twice, each from a folder that is not the checkout and with no ``PYTHONPATH``: in a fresh venv
by its own pip (dependencies from the package index, as a user gets them), and as an isolated tool by
``uv tool install`` (tool and bin folders in a temporary folder). From there: the commands' versions,
the ``python -m`` forms, the demo (the shipped benchmark and inventories), a server and a proxy answering
one logged call, the viewer's page and assets, and the command the MCP registry manifest makes clients
run. Nothing of the checkout is importable there: ``import server`` fails.
"""

from __future__ import annotations

import re
import shutil
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from finmcp.recordings import SqliteTraceStore
from finmcp.tool_specs.inventory import builtin_names
from tests.packaging.dists import Dists, build, copy_checkout, module_files, package_data_files
from tests.packaging.project import COMMANDS, distribution, server_json, version, wheel_stem
from tests.packaging.venvs import (
    Installed,
    InstalledCommand,
    InstalledProxy,
    InstalledServer,
    launch_from,
    make_venv,
    uv_tool_install,
)
from tests.support.net import get_json
from tests.support.processes import PROXY_SIGTERM_EXIT, SERVER_SIGTERM_EXIT, Child
from tests.support.source import PACKAGES, REPO
from tests.support.traces import wait_calls

pytestmark = pytest.mark.slow

SHIPPED_DATA = (
    "finmcp/evaluator/benchmarks/finmcp_sim.jsonl.gz",
    "finmcp/evaluator/benchmarks/finmcp_sim.recordings.jsonl.gz",
    "finmcp/evaluator/benchmarks/finmcp_sim.manifest.json",
    "finmcp/evaluator/benchmarks/fault_schedule.demo.json",
    "finmcp/tool_specs/data/finmcp65.json",
    "finmcp/tool_specs/data/fintool760.json.gz",
    "finmcp/server/world/data/vocab.json",
    "finmcp/evaluator/viewer/static/index.html",
    "finmcp/evaluator/viewer/static/app.js",
)
"""What the demo, the server and the viewer read at run time (the package-data patterns ship these)."""
DEMO_AGENTS = ("oracle", "noisy-light", "noisy-heavy")
DEMO_RUNS = (*DEMO_AGENTS, "oracle~faults", "oracle-retry~faults")
"""Every run the demo logs: its agents, then the robustness rows (the oracle with and without retry)."""
GENERIC_NAMES = ("server", "proxy", "evaluator", "recordings", "tool_specs")


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A temporary folder outside the checkout; removed at the end (the installs take ~200 MB)."""
    folder = tmp_path_factory.mktemp("wheel")
    assert not folder.resolve().is_relative_to(REPO), folder
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def home(work: Path) -> Path:
    """The user's working folder: where every installed command runs (not the checkout)."""
    folder = work / "home"
    folder.mkdir()
    return folder


@pytest.fixture(scope="module")
def dists(work: Path) -> Dists:
    return build(copy_checkout(work / "src"), work / "dist")


@pytest.fixture(scope="module")
def venv(work: Path, home: Path, dists: Dists) -> Installed:
    return make_venv(work / "venv", dists.wheel, home)


@pytest.fixture(scope="module")
def tool(work: Path, home: Path, dists: Dists) -> Installed:
    return uv_tool_install(work / "tool", dists.wheel, home)


@pytest.fixture(scope="module")
def demo(venv: Installed, home: Path) -> Path:
    """``finmcp-eval demo --limit 20`` from the venv; its output folder."""
    done = venv.run("finmcp-eval", "demo", "--limit", "20", "--out-dir", "demo-out", cwd=home, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    for agent in DEMO_AGENTS:
        assert re.search(rf"^\| {agent} \| ", done.stdout, re.M), done.stdout  # the leaderboard
    return home / "demo-out"


# ---------------------------------------------------------------------------------------------- the archives


def test_the_wheel_holds_the_finmcp_package_and_its_metadata_only(dists: Dists):
    assert dists.wheel.name == f"{wheel_stem()}-py3-none-any.whl"
    tops = {name.split("/")[0] for name in dists.wheel_names()}
    assert tops == {"finmcp", f"{wheel_stem()}.dist-info"}
    assert {name.split("/")[1] for name in dists.wheel_names() if name.startswith("finmcp/")} == set(PACKAGES)


def test_the_wheel_ships_every_module_and_the_package_data(dists: Dists):
    names = set(dists.wheel_names())
    modules, data = set(module_files()), set(package_data_files())
    assert modules <= names, sorted(modules - names)
    assert data <= names, sorted(data - names)
    assert set(SHIPPED_DATA) <= data
    stray = sorted(n for n in names if n.startswith("finmcp/") and n not in modules | data)
    assert stray == [], stray


def test_the_wheel_s_metadata(dists: Dists):
    assert dists.entry_points() == COMMANDS
    metadata = dists.wheel_text(f"{wheel_stem()}.dist-info/METADATA")
    assert f"\nName: {distribution()}\n" in metadata
    assert f"\nVersion: {version()}\n" in metadata
    # the MCP registry checks PyPI's description (the README) for the server's name
    assert f"<!-- mcp-name: {server_json()['name']} -->" in metadata


def test_the_sdist_holds_the_sources_and_the_release_files(dists: Dists):
    names = set(dists.sdist_names())
    for folder in PACKAGES:
        assert any(name.startswith(f"{folder}/") and name.endswith(".py") for name in names), folder
    for name in ("README.md", "pyproject.toml", "CHANGELOG.md", "server.json", "MANIFEST.in"):
        assert name in names, name
    assert {name.removeprefix("finmcp/") for name in package_data_files()} <= names
    leaked = [n for n in names if n.split("/")[0] in (".venv", "build", "dist", "tests", "out", ".git")]
    assert leaked == [], leaked[:10]


# ------------------------------------------------------------------------------------------ the fresh venv


@pytest.mark.parametrize("command", ["finmcp-server", "finmcp-proxy", "finmcp-eval"])
def test_the_commands_print_pyproject_s_version(venv: Installed, home: Path, command: str):
    done = venv.run(command, "--version", cwd=home)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"{command} {version()}\n", "")


@pytest.mark.parametrize("module", ["finmcp.server", "finmcp.proxy", "finmcp.evaluator"])
def test_python_dash_m_answers_help(venv: Installed, home: Path, module: str):
    done = venv.run("python", "-m", module, "--help", cwd=home)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: finmcp-"), done.stdout[:200]


def test_the_venv_s_requirements_are_consistent(venv: Installed, home: Path):
    done = venv.run("python", "-m", "pip", "check", cwd=home)
    assert done.returncode == 0, done.stdout + done.stderr


def test_finmcp_is_imported_from_the_venv_and_nothing_generic_is_installed(venv: Installed, home: Path):
    done = venv.run("python", "-c", "import finmcp.server.cli as m; print(m.__file__)", cwd=home)
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).is_relative_to(venv.root), done.stdout
    for name in GENERIC_NAMES:
        done = venv.run("python", "-c", f"import {name}", cwd=home)
        assert done.returncode == 1, f"import {name} worked in the wheel's venv"
        assert f"ModuleNotFoundError: No module named '{name}'" in done.stderr, done.stderr


def test_the_demo_runs_from_the_wheel(demo: Path):
    for agent in DEMO_AGENTS:
        for kind in ("json", "md", "html"):
            assert (demo / agent / f"report.{kind}").stat().st_size > 0, (agent, kind)
    assert (demo / "leaderboard.md").is_file()
    with SqliteTraceStore.open(demo / "runs.sqlite") as store:
        assert {run for run in DEMO_AGENTS if store.calls(run)} == set(DEMO_AGENTS)


def test_a_server_and_a_proxy_from_the_wheel_answer_and_log_a_call(
    venv: Installed, home: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.chdir(home)  # the launchers' children start in the user's folder
    db = home / "proxy-runs.sqlite"
    children: list[Child] = []
    try:
        server = launch_from(InstalledServer(["--inventory", "finmcp65"], timeout=60), venv).start()
        children.append(Child(server, "finmcp-server", SERVER_SIGTERM_EXIT))
        proxy = launch_from(
            InstalledProxy(["--upstream", server.url, "--db", str(db)], timeout=60), venv
        ).start()
        children.append(Child(proxy, "finmcp-proxy", PROXY_SIGTERM_EXIT))

        async def call() -> tuple[str, dict]:
            async with Client(proxy.tagged("wheel", "s1", 0)) as client:
                result = await client.call_tool("GetFundDiagnosis", {"fundNameOrCode": "沪深300"})
                assert not result.is_error, result
                info = client.server_info
                return (info.version if info else ""), result.structured_content or {}

        served_version, fund = anyio.run(call)
        assert served_version == version()
        assert fund.get("fundCode"), fund
        (logged,) = wait_calls(db, "wheel", 1, settled=True)
        assert (logged["sample_id"], logged["tool"], logged["status"]) == ("s1", "GetFundDiagnosis", "ok"), (
            logged
        )
    finally:
        problems = [p for child in reversed(children) for p in child.close()]
    assert problems == [], "\n".join(problems)


def test_the_viewer_from_the_wheel_serves_its_page_and_assets(
    venv: Installed, demo: Path, home: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.chdir(home)
    args = [
        "view",
        "--db",
        str(demo / "runs.sqlite"),
        "--bench",
        "finmcp-sim",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
    ]
    with launch_from(InstalledCommand("finmcp-eval", args, timeout=60), venv) as viewer:
        page = _get(viewer.endpoint("/"))
        assert page.startswith(b"<!doctype html>") and b"<title>finmcp view</title>" in page, page[:200]
        assets = re.findall(rb'(?:href|src)="/static/([\w.]+)"', page)
        assert sorted(assets) == [b"app.css", b"app.js"], assets
        for asset in assets:
            shipped = REPO / "evaluator" / "viewer" / "static" / asset.decode()
            assert _get(viewer.endpoint(f"/static/{asset.decode()}")) == shipped.read_bytes(), asset
        runs = get_json(viewer.endpoint("/api/runs"))
        assert runs["bench"] == "finmcp-sim", runs  # the shipped benchmark, read from the wheel
        assert {run["run_id"] for run in runs["runs"] if run["calls"] > 0} == set(DEMO_RUNS), runs


def _get(url: str) -> bytes:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never via a proxy
    with opener.open(url, timeout=10) as response:
        assert response.status == 200, url
        return response.read()


# ------------------------------------------------------------------------------------ the isolated tool install


def test_the_tool_install_runs_the_commands(tool: Installed, home: Path):
    assert sorted(path.name for path in tool.bin.iterdir()) == sorted(COMMANDS)
    for command in ("finmcp-server", "finmcp-proxy", "finmcp-eval"):
        done = tool.run(command, "--version", cwd=home)
        assert (done.returncode, done.stdout) == (0, f"{command} {version()}\n"), done.stderr
    done = tool.run("finmcp-server", "inventories", cwd=home)
    assert done.returncode == 0, done.stderr
    listed = [line.split()[0] for line in done.stdout.splitlines()[2:5]]
    assert listed == builtin_names(), done.stdout


def test_the_registry_manifest_s_command_serves_over_stdio(tool: Installed, home: Path):
    """What a registry client runs, ``uvx IDENTIFIER ARGS``, after uvx installed the package: the tool's command."""
    (package,) = server_json()["packages"]
    args = []
    for argument in package["packageArguments"]:
        args += [argument["name"], argument.get("value", "qieman79")]
    params = StdioServerParameters(
        command=str(tool.bin / package["identifier"]), args=args, cwd=str(home), env=tool.env
    )

    async def tool_names() -> list[str]:
        async with Client(params) as client:
            page = await client.list_tools()
            assert page.next_cursor is None
            return [t.name for t in page.tools]

    names = anyio.run(tool_names)
    assert len(names) == len(set(names)) == 79, len(names)
