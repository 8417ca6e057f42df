"""docs/deploy/compose.yaml (the deployment picture of docs/scale.md): it is valid Compose YAML with the
topology the page describes, and every finmcp command line in it passes its program's parser."""

from __future__ import annotations

import re
import shlex

import yaml

from tests.docs.runner import DocumentRun
from tests.support.source import REPO

COMPOSE = REPO / "docs" / "deploy" / "compose.yaml"
PROGRAMS = ("finmcp-server", "finmcp-proxy", "finmcp-eval")


def _commands(service: dict) -> list[list[str]]:
    command = service.get("command")
    if command is None:
        return []
    text = command[-1] if isinstance(command, list) else command  # sh -c SCRIPT, or one command line
    text = text.replace("$$", "$")  # Compose's escape for a literal $
    argvs = []
    for part in re.split(r"\s*(?:&&|;|&(?!&))\s*", text):
        argv = shlex.split(part)
        if argv and argv[0] in PROGRAMS:
            argvs.append([a.replace("${SHARD_INDEX}", "1") for a in argv])
    return argvs


def test_compose_has_the_documented_topology_and_its_commands_parse(tmp_path):
    doc = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    services = doc["services"]
    assert services["server"]["deploy"]["replicas"] == 3
    shards = sorted(name for name in services if name.startswith("shard-"))
    assert shards == ["shard-0", "shard-1", "shard-2", "shard-3"]
    assert [services[s]["environment"]["SHARD_INDEX"] for s in shards] == ["0", "1", "2", "3"]
    assert len({tuple(services[s]["volumes"]) for s in shards}) == 4  # one outbox file per proxy
    run = DocumentRun(tmp_path)  # parsing starts nothing
    seen = []
    for name, service in services.items():
        for argv in _commands(service):
            run.parse(argv)
            seen.append((name, argv[0], argv[1] if argv[1:2] and not argv[1].startswith("-") else ""))
    assert ("server", "finmcp-server", "") in seen
    assert ("shard-3", "finmcp-proxy", "") in seen and ("shard-3", "finmcp-proxy", "flush") in seen
    assert ("shard-0", "finmcp-eval", "run") in seen and ("score", "finmcp-eval", "score") in seen
    assert "password" not in COMPOSE.read_text(encoding="utf-8").split("postgresql://")[1][:40]
