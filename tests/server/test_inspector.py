"""A client nobody here wrote: the official MCP Inspector CLI against a real ``finmcp-server``.

The CLI is the one ``tests/clients/provision.py`` installs (``~/.cache/finmcp/clients/inspector``, the
pinned version, nothing fetched at test time); without it, or without Node, the tests skip with a
reason (and fail under ``FINMCP_CI=1``). The client matrix (tests/clients) runs the same CLI through
the proxy.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from tests.clients import provision
from tests.server.recorded_time import TIME
from tests.support.postgres import require_or_skip


def inspector(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(provision.node_bin("inspector", "mcp-inspector")), "--cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture(scope="module")
def inspector_cli():
    """The provisioned Inspector CLI is there (skips, or fails under CI, without it)."""
    if shutil.which("node") is None:
        require_or_skip("node is not installed; the MCP Inspector CLI test needs Node.js 20")
    if not provision.ready("inspector"):
        require_or_skip(
            f"the MCP Inspector CLI is not provisioned in {provision.folder('inspector')}; "
            "run python3 tests/clients/provision.py inspector"
        )


@pytest.fixture(scope="module")
def server(recorded_time, module_children):
    return module_children.server(
        ["--miss", "strict", "--recordings", str(recorded_time), "--latency", "none"]
    )


@pytest.fixture(scope="module")
def big_server(module_children):
    return module_children.server(["--inventory", "fintool760", "--miss", "strict", "--latency", "none"])


@pytest.mark.slow
def test_inspector_lists_all_760_tools_by_default(inspector_cli, big_server):
    """The Inspector CLI lists once and does not follow ``nextCursor``: the default HTTP listing is one page."""
    listed = inspector(big_server.url, "--transport", "http", "--method", "tools/list")
    assert listed.returncode == 0, listed.stderr
    result = json.loads(listed.stdout)
    assert len(result["tools"]) == 760 and "nextCursor" not in result


@pytest.mark.slow
def test_inspector_lists_and_calls_tools(inspector_cli, server):
    listed = inspector(server.url, "--transport", "http", "--method", "tools/list")
    assert listed.returncode == 0, listed.stderr
    tools = json.loads(listed.stdout)["tools"]
    assert len(tools) == 65 and tools[0]["name"] == "GetCurrentTime" and "outputSchema" in tools[0]

    called = inspector(
        server.url, "--transport", "http", "--method", "tools/call", "--tool-name", "GetCurrentTime"
    )
    assert called.returncode == 0, called.stderr
    result = json.loads(called.stdout)
    assert result["structuredContent"] == TIME and result["_meta"]["io.finmcp/source"] == "replay"

    bad = inspector(
        server.url, "--transport", "http", "--method", "tools/call", "--tool-name", "SearchFunds",
        "--tool-arg", "sortOrder=up",
    )  # fmt: skip
    assert bad.returncode == 0, bad.stderr
    bad_result = json.loads(bad.stdout)
    assert (
        bad_result["isError"] is True and "sortOrder: 'up' is not one of" in bad_result["content"][0]["text"]
    )

    unknown = inspector(
        server.url, "--transport", "http", "--method", "tools/call", "--tool-name", "NoSuchTool"
    )
    assert unknown.returncode != 0 and "NoSuchTool" in unknown.stdout + unknown.stderr


@pytest.mark.slow
def test_inspector_over_legacy_sse_lists_one_page_unless_page_size_0(inspector_cli, server_process):
    """What docs/server.md says: the default legacy SSE listing is paged; the Inspector lists once."""
    args = ["--inventory", "fintool760", "--miss", "strict", "--latency", "none", "--transport", "sse"]
    for extra, count in (([], None), (["--page-size", "0"], 760)):
        server = server_process([*args, *extra])
        listed = inspector(server.endpoint("/sse"), "--transport", "sse", "--method", "tools/list")
        assert listed.returncode == 0, listed.stderr
        result = json.loads(listed.stdout)
        if count is None:
            assert 0 < len(result["tools"]) < 760 and result["nextCursor"]
        else:
            assert len(result["tools"]) == count and "nextCursor" not in result
