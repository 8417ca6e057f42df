"""Person names come from the shipped name tables (server/world/names.py), not from Faker at run time."""

from __future__ import annotations

import ast
import json
import tomllib
from pathlib import Path

import pytest

from finmcp.server.world import World
from finmcp.server.world.names import name_for_seed, person_name

REPO = Path(__file__).resolve().parents[3]
TABLES = REPO / "server" / "world" / "data" / "person_names.json"
REGENERATOR = REPO / "server" / "world" / "make_name_tables.py"


def test_names_for_fixed_seeds():
    # recorded from faker 40.63.0 (Faker(locale).seed_instance(seed); name()) when the tables were made
    assert [name_for_seed(s, "zh_CN") for s in (0, 1, 2**63)] == ["廖婷婷", "梁鑫", "蓝秀英"]
    assert [name_for_seed(s, "en_US") for s in (0, 1, 2**63, 123456)] == [
        "Norma Fisher",
        "Ryan Gallagher",
        "Teresa Allen",
        "Rebecca Johnson",
    ]


def test_world_people_keep_their_names():
    world = World(0)
    assert world.manager(0, 0)["name"] == "庞帆"
    assert world.manager(3, 7)["name"] == "高梅"
    assert person_name(0, "user_name", "9b989c9d999f93") == "冯阳"


def test_unknown_locale_is_a_clear_error():
    with pytest.raises(KeyError, match="fr_FR"):
        name_for_seed(0, "fr_FR")


def test_no_module_imports_faker_at_run_time():
    importers = []
    for package in ("tool_specs", "recordings", "server", "proxy", "evaluator"):
        for path in (REPO / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text("utf-8"))):
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                    if isinstance(node, ast.ImportFrom)
                    else []
                )
                if any(n == "faker" or n.startswith("faker.") for n in names):
                    importers.append(path)
    assert set(importers) == {REGENERATOR}


def test_tables_are_package_data_and_faker_is_not_pinned():
    config = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))
    assert "data/*.json" in config["tool"]["setuptools"]["package-data"]["finmcp.server.world"]
    faker_specs = [d for d in config["project"]["dependencies"] if d.split(">")[0].split("=")[0] == "faker"]
    assert faker_specs and "==" not in faker_specs[0]
    assert json.loads(TABLES.read_text("utf-8"))["locales"].keys() == {"zh_CN", "en_US"}


def test_tables_agree_with_the_faker_release_they_came_from():
    faker = pytest.importorskip("faker")
    made_from = json.loads(TABLES.read_text("utf-8"))["faker_version"]
    if made_from != faker.VERSION:
        pytest.skip(f"installed faker {faker.VERSION}; the tables came from faker {made_from}")
    from finmcp.server.world.make_name_tables import check_seeds, mismatches

    assert mismatches(json.loads(TABLES.read_text("utf-8")), check_seeds(400)) == []
