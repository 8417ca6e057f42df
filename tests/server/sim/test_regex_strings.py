"""Strings for schema patterns (server/sim/regex_strings.py): every inventory pattern, the regex subset,
and the same strings (and RNG use) as the CPython-parser sampler it replaced."""

from __future__ import annotations

import ast
import random
import re
from pathlib import Path

import pytest

from finmcp.server.sim.regex_strings import parse_pattern, sample_pattern
from finmcp.tool_specs.inventory import builtin_names, load_inventory

REPO = Path(__file__).resolve().parents[3]


def _patterns(node: object) -> set[str]:
    if isinstance(node, dict):
        found = {node["pattern"]} if isinstance(node.get("pattern"), str) else set()
        return found.union(*(_patterns(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_patterns(v) for v in node))
    return set()


INVENTORY_PATTERNS = sorted(
    set().union(
        *(
            _patterns(spec.input_schema) | _patterns(spec.output_schema or {})
            for name in builtin_names()
            for spec in load_inventory(name)
        )
    )
)


def test_the_inventories_use_the_known_patterns():
    assert INVENTORY_PATTERNS == ["^[0-9]+$", "^[0-9]{6}$"]


@pytest.mark.parametrize("pattern", INVENTORY_PATTERNS)
def test_every_inventory_pattern_is_sampled_to_a_match(pattern):
    for seed in range(200):
        text = sample_pattern(pattern, random.Random(seed))
        assert text is not None and re.search(pattern, text), (seed, text)


# Outputs of the sampler built on CPython's private re._parser, recorded before it was replaced: the
# same seed must give the same string (the simulator's bytes depend on it).
PINNED = {
    r"^[0-9]{6}$": ["604876", "914177", "115244"],
    r"^[0-9]+$": ["6048", "91", "1"],
    r"^(SH|SZ)\d{6}$": ["SZ048764", "SH417776", "SH152449"],
    r"^(?:ab|ac|ad)$": ["ac", "ab", "ab"],
    r"[^abc]{2,5}": ["Z7Dft", "N52", "ii"],
}


@pytest.mark.parametrize("pattern", sorted(PINNED))
def test_same_strings_as_before(pattern):
    assert [sample_pattern(pattern, random.Random(seed)) for seed in (0, 1, 2)] == PINNED[pattern]


SUBSET = [
    r"\d{4}-\d{2}-\d{2}",
    r"^[A-Z]{2}\d{4}$",
    r"[a-z]+@[a-z]+\.com",
    r"(foo|bar)+baz?",
    r"^\w+\s\W\S\D$",
    r"x*y+?z{2,}",
    r"a{,3}b{}",
    r"(?i)abc",
    r"\bword\b",
    r"[\d\-]+",
    r"[]a-]",
    r"(?=ab)ab",
    r"(?#comment)x",
    r"(?>ab)+",
    r"a++b*+",
    r"\x41\u0042\101",
    r"\N{EM DASH}",
    r"(?x) a b # comment\n c",
    r"^\d{4}(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])$",
    r"^[A-Za-z0-9_.-]{1,24}$",
    r"^(?:[0-9]{6})(?:,[0-9]{6})*$",
    r"[一-龥]{2,4}",
    r"\Aabc\Z",
    r"(?i:ab)c",
]


@pytest.mark.parametrize("pattern", SUBSET)
def test_the_supported_subset_gives_matching_strings(pattern):
    texts = [sample_pattern(pattern, random.Random(seed)) for seed in range(20)]
    assert all(t is not None and re.search(pattern, t) for t in texts), texts


@pytest.mark.parametrize("pattern", [r"(?P<n>a)(?P=n)", r"(a)\1", r"(?<=a)b", r"(a)?(?(1)b|c)"])
def test_references_and_look_behinds_generate_nothing_and_never_raise(pattern):
    for seed in range(20):
        text = sample_pattern(pattern, random.Random(seed))
        assert text is None or re.search(pattern, text)


def test_alternatives_share_their_prefix_and_single_characters_become_a_class():
    assert parse_pattern("ab|ac") == [("lit", "a"), ("in", (("lit", "b"), ("lit", "c")))]
    assert parse_pattern("[x]|[^y]")[0][0] == "branch"
    assert parse_pattern("[x]") == [("lit", "x")]
    assert parse_pattern("[^x]") == [("not_lit", "x")]


def test_invalid_patterns_give_none():
    assert sample_pattern("(", random.Random(0)) is None
    assert sample_pattern("a{3,1}", random.Random(0)) is None
    with pytest.raises(re.error):
        parse_pattern("[z-a]")


def test_no_module_reaches_into_the_private_regex_parser():
    for path in [*REPO.glob("server/**/*.py"), *REPO.glob("tool_specs/**/*.py")]:
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ImportFrom):
                assert node.module not in ("re._parser", "sre_parse"), path
                assert node.module != "re" or not any(a.name.startswith("_") for a in node.names), path
            if isinstance(node, ast.Import):
                assert not any(a.name in ("re._parser", "sre_parse") for a in node.names), path
