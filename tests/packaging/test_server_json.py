"""server.json, the MCP registry manifest of finmcp-server, is valid and says what the package does.

Validated offline against the registry's released schema (2025-12-11), which the ``skillsaw`` package
bundles byte for byte, and by skillsaw's own registry rule (the semantic checks the schema leaves out).
The manifest's version and package name are pyproject's; the command a registry client composes from
it (``uvx finmcp-kit==VERSION ARGS``) names an installed command, and finmcp-server's parser accepts
each argument it declares (tests/packaging/test_wheel.py runs that command from an installed wheel).
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from finmcp.server.cli import build_parser, serve_options
from finmcp.tool_specs.inventory import builtin_names
from tests.packaging.project import COMMANDS, README, distribution, pyproject, server_json, version

SCHEMA_PACKAGE = "skillsaw.schemas.mcp_registry.v2025_12_11"
SCHEMA_URL = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
RULE = "mcp-registry-server-json-valid"


def schema() -> dict[str, Any]:
    return json.loads(resources.files(SCHEMA_PACKAGE).joinpath("server.schema.json").read_text("utf-8"))


def schema_errors(document: Any) -> list[str]:
    """The schema's complaints about ``document`` (the validator its ``$schema`` names, formats checked)."""
    official = schema()
    validator_class = jsonschema.validators.validator_for(official)
    validator = validator_class(official, format_checker=validator_class.FORMAT_CHECKER)
    return [
        f"{'/'.join(map(str, error.absolute_path))}: {error.message}"
        for error in validator.iter_errors(document)
    ]


def skillsaw_violations(document: Any, folder: Path) -> list[dict[str, Any]]:
    """skillsaw's registry rule on ``document`` saved as ``folder/server.json``; its violations."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "server.json").write_text(json.dumps(document, indent=2), encoding="utf-8")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "skillsaw",
            "lint",
            "--type",
            "mcp-registry",
            "--rule",
            RULE,
            "--format",
            "json",
        ]
        + ["--no-baseline", "--no-custom-rules", "--no-plugins", "--no-progress", "--strict", str(folder)],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode in (0, 1), done.stderr
    violations = json.loads(done.stdout)["violations"]
    assert (done.returncode == 1) == bool(violations), (done.returncode, violations)
    return violations


def package() -> dict[str, Any]:
    (entry,) = server_json()["packages"]
    return entry


def package_argv() -> list[list[str]]:
    """The argument lists a registry client may compose from the package's arguments (one per choice)."""
    fixed: list[str] = []
    choices: list[list[str]] = [[]]
    for argument in package()["packageArguments"]:
        assert argument["type"] == "named", argument
        if "value" in argument:
            fixed += [argument["name"], argument["value"]]
        else:
            choices = [
                [*before, argument["name"], value] for before in choices for value in argument["choices"]
            ]
    return [fixed + chosen for chosen in choices]


def test_the_schema_is_the_released_one_the_manifest_names():
    official = schema()
    assert official["$id"] == SCHEMA_URL == server_json()["$schema"]
    assert jsonschema.validators.validator_for(official) is jsonschema.Draft7Validator  # its $schema


def test_server_json_is_valid_against_the_registry_schema():
    assert schema_errors(server_json()) == []


def test_skillsaw_registry_rule_passes(tmp_path):
    assert skillsaw_violations(server_json(), tmp_path / "good") == []


def _wrong_transport(doc: dict[str, Any]) -> None:
    doc["packages"][0]["transport"] = {"type": "websocket"}


def _unnamed_argument(doc: dict[str, Any]) -> None:
    del doc["packages"][0]["packageArguments"][1]["name"]


def _name_without_namespace(doc: dict[str, Any]) -> None:
    doc["name"] = "finmcp-server"


def _version_as_number(doc: dict[str, Any]) -> None:
    doc["version"] = 2


def _description_too_long(doc: dict[str, Any]) -> None:
    doc["description"] = "x" * 101


def _no_identifier(doc: dict[str, Any]) -> None:
    del doc["packages"][0]["identifier"]


@pytest.mark.parametrize(
    "break_it",
    [
        _wrong_transport,
        _unnamed_argument,
        _name_without_namespace,
        _version_as_number,
        _description_too_long,
        _no_identifier,
    ],
)
def test_a_manifest_with_a_wrong_field_fails_the_schema(break_it):
    broken = copy.deepcopy(server_json())
    break_it(broken)
    assert schema_errors(broken), f"{break_it.__name__}: the schema accepted it"


def test_skillsaw_registry_rule_fails_a_wrong_field(tmp_path):
    broken = server_json()
    _wrong_transport(broken)
    violations = skillsaw_violations(broken, tmp_path / "bad")
    assert [v["rule_id"] for v in violations] == [RULE], violations
    assert "transport" in violations[0]["message"], violations


def test_version_and_package_are_pyproject_s():
    manifest = server_json()
    assert manifest["version"] == version()
    entry = package()
    assert entry["registryType"] == "pypi"
    assert entry["identifier"] == distribution()
    assert entry["version"] == version()


def test_the_command_a_registry_client_runs_is_finmcp_server():
    """Clients run ``uvx IDENTIFIER==VERSION ARGS``: uvx starts the command named like the package."""
    entry = package()
    assert entry["runtimeHint"] == "uvx"
    assert entry["transport"] == {"type": "stdio"}
    scripts = pyproject()["project"]["scripts"]
    assert scripts == COMMANDS
    assert scripts[entry["identifier"]] == scripts["finmcp-server"]


def test_finmcp_server_accepts_every_declared_argument():
    inventory = next(a for a in package()["packageArguments"] if a["name"] == "--inventory")
    assert inventory["choices"] == builtin_names()
    assert inventory["default"] in inventory["choices"]
    composed = package_argv()
    assert len(composed) == len(builtin_names())
    for argv in composed:
        options = serve_options(build_parser().parse_args(argv))
        assert options.transport == "stdio", argv
        assert options.inventories == (argv[argv.index("--inventory") + 1],), argv
    # without --inventory the server serves the manifest's default
    transport_only = [a for a in composed[0][: composed[0].index("--inventory")]]
    assert serve_options(build_parser().parse_args(transport_only)).inventories == (inventory["default"],)


def test_the_readme_carries_the_registry_s_ownership_marker():
    """The registry checks ``mcp-name: NAME`` in the package's description on PyPI (the README)."""
    markers = re.findall(r"<!--\s*mcp-name:\s*(\S+)\s*-->", README.read_text(encoding="utf-8"))
    assert markers == [server_json()["name"]]
