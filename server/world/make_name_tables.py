"""Write ``server/world/data/person_names.json`` from the installed Faker (a maintainer's tool).

The world's person names (fund managers, users) and the synthesis personas come from Faker's
person-name data, but nothing imports Faker at run time: this script copies the data once into the
shipped tables, and :mod:`server.world.names` draws from them the way Faker does. Run it only to
take new names from another Faker release (the world's names then change: rebuild and re-pin the
fingerprints, the shipped benchmark and the tests)::

    pip install faker
    python -m finmcp.server.world.make_name_tables [--check] [--output PATH]

Before writing, the tables are checked against Faker itself: the same seeds must give the same names.
``--check`` only compares the installed Faker with the shipped tables.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import OrderedDict
from pathlib import Path
from typing import Any

LOCALES = ("zh_CN", "en_US")
DEFAULT_OUT = Path(__file__).resolve().parent / "data" / "person_names.json"
CHECK_SEEDS = 5000
# the element collection each name token draws from (Faker's PersonProvider methods)
_TOKEN_ATTRIBUTES = {
    "first_name": "first_names",
    "last_name": "last_names",
    "first_name_male": "first_names_male",
    "first_name_female": "first_names_female",
    "first_name_nonbinary": "first_names_nonbinary",
    "last_name_male": "last_names_male",
    "last_name_female": "last_names_female",
    "last_name_nonbinary": "last_names_nonbinary",
    "prefix_male": "prefixes_male",
    "prefix_female": "prefixes_female",
    "prefix_nonbinary": "prefixes_nonbinary",
    "suffix_male": "suffixes_male",
    "suffix_female": "suffixes_female",
    "suffix_nonbinary": "suffixes_nonbinary",
}


def _table(elements: Any) -> dict[str, Any]:
    """A Faker element collection as ``{"items", "weights"}`` (weights only for an OrderedDict)."""
    if isinstance(elements, OrderedDict):
        return {"items": list(elements), "weights": list(elements.values())}
    return {"items": list(elements), "weights": None}


def _person_provider(fake: Any) -> Any:
    generator = fake.factories[0]
    return next(p for p in generator.providers if type(p).__module__.startswith("faker.providers.person"))


def locale_tables(locale: str) -> dict[str, Any]:
    """The formats and token tables behind Faker's ``name()`` for ``locale``."""
    from faker import Faker
    from faker.generator import _re_token

    provider = _person_provider(Faker(locale))
    formats = _table(provider.formats)
    tokens: dict[str, Any] = {}
    for pattern in formats["items"]:
        for token, _ in _re_token.findall(pattern):
            attribute = _TOKEN_ATTRIBUTES.get(token)
            if attribute is None or not hasattr(provider, attribute):
                raise SystemExit(
                    f"{locale}: name token {token!r} has no known table; extend _TOKEN_ATTRIBUTES"
                )
            tokens[token] = _table(getattr(provider, attribute))
    return {"formats": formats, "tokens": tokens}


def build() -> dict[str, Any]:
    """The whole document: the Faker version it came from and the tables per locale."""
    import faker

    return {
        "about": "Faker's person-name tables (formats, tokens, weights) for the locales finmcp uses; "
        "written by python -m finmcp.server.world.make_name_tables, read by server/world/names.py.",
        "faker_version": faker.VERSION,
        "locales": {locale: locale_tables(locale) for locale in LOCALES},
    }


def check_seeds(n: int = CHECK_SEEDS) -> list[int]:
    """Small seeds and 64-bit ones (the world seeds each person with a 64-bit derived seed)."""
    wide = random.Random(20250930)
    return list(range(n // 2)) + [wide.getrandbits(64) for _ in range(n - n // 2)]


def mismatches(document: dict[str, Any], seeds: list[int] | None = None) -> list[str]:
    """Seeds for which the tables and the installed Faker give different names."""
    from faker import Faker

    from finmcp.server.world.names import LocaleTables

    out = []
    for locale, record in document["locales"].items():
        tables, fake = LocaleTables(record), Faker(locale)
        for seed in seeds or check_seeds():
            fake.seed_instance(seed)
            expected, got = fake.name(), tables.draw(seed)
            if got != expected:
                out.append(f"{locale} seed {seed}: faker {expected!r}, tables {got!r}")
    return out


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(
        prog="python -m finmcp.server.world.make_name_tables", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--output", dest="out", default=str(DEFAULT_OUT), help="where to write the tables")
    parser.add_argument(
        "--check", action="store_true", help="compare the shipped tables with the installed Faker"
    )
    args = parser.parse_args(argv)
    if args.check:
        shipped = json.loads(DEFAULT_OUT.read_text("utf-8"))
        bad = mismatches(shipped)
        print(
            "\n".join(bad[:20])
            or f"shipped tables agree with faker (tables from faker {shipped['faker_version']})"
        )
        return 1 if bad else 0
    document = build()
    bad = mismatches(document)
    if bad:
        print("\n".join(bad[:20]), file=sys.stderr)
        return 1
    Path(args.out).write_text(json.dumps(document, ensure_ascii=False, indent=1) + "\n", "utf-8")
    print(f"wrote {args.out} (faker {document['faker_version']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
