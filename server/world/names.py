"""Person names drawn from the shipped name tables (``data/person_names.json``), seeded per person.

The tables are Faker's person-name data (formats, given names, family names and their weights) for
the locales the project uses, written once by ``python -m finmcp.server.world.make_name_tables``. A name is
drawn the way Faker draws one, with a ``random.Random`` seeded by the caller: a format (weighted when
the table has weights), then each ``{{token}}`` of it from its table. The same seed therefore gives
the same name on every machine, whichever Faker version (if any) is installed.
"""

from __future__ import annotations

import json
import random
import re
from functools import cache
from importlib import resources
from itertools import accumulate
from typing import Any

from finmcp.recordings.plumbing.seeding import derive_seed

_TOKEN = re.compile(r"\{\{\s*(\w+)(:\s*\w+?)?\s*\}\}")


class _Table:
    """Items to draw from, uniformly or with weights (cumulated once)."""

    def __init__(self, record: dict[str, Any]) -> None:
        self.items: list[str] = record["items"]
        weights = record.get("weights")
        self.cum_weights = list(accumulate(weights)) if weights is not None else None

    def draw(self, rng: random.Random) -> str:
        """One item: ``rng.choice`` for a plain list, ``rng.choices`` for a weighted one (as Faker draws)."""
        if self.cum_weights is None:
            return rng.choice(self.items)
        return rng.choices(self.items, cum_weights=self.cum_weights, k=1)[0]


class LocaleTables:
    """The name formats of one locale and the table behind each ``{{token}}`` of them."""

    def __init__(self, record: dict[str, Any]) -> None:
        self.formats = _Table(record["formats"])
        self.tokens = {k: _Table(v) for k, v in record["tokens"].items()}

    def draw(self, seed: int) -> str:
        """The name of ``seed``: a format, then each of its tokens, from one ``random.Random(seed)``."""
        rng = random.Random(seed)
        pattern = self.formats.draw(rng)
        return _TOKEN.sub(lambda m: self.tokens[m.group(1)].draw(rng), pattern)


@cache
def _locale(locale: str) -> LocaleTables:
    text = (resources.files("finmcp.server.world") / "data" / "person_names.json").read_text("utf-8")
    locales = json.loads(text)["locales"]
    if locale not in locales:
        raise KeyError(f"no name tables for locale {locale!r}; known: {sorted(locales)}")
    return LocaleTables(locales[locale])


def name_for_seed(seed: int, locale: str = "zh_CN") -> str:
    """The person name of ``seed`` in ``locale`` (``zh_CN`` or ``en_US``)."""
    return _locale(locale).draw(seed)


def person_name(seed: int, kind: str, *key: object, locale: str = "zh_CN") -> str:
    """A person's name determined by (world seed, kind, key)."""
    return name_for_seed(derive_seed(seed, kind, *key), locale)
