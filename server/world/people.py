"""People: fund managers named with Faker (zh_CN), seeded per person.

Faker output for a given seed is stable for a given Faker version only: byte-identical worlds across
machines require the same pinned ``faker`` version (the project pins it in pyproject.toml).
"""

from __future__ import annotations

import threading

from faker import Faker

from recordings.plumbing.seeding import derive_seed, rng_for

from . import vocab as v
from .rng import pick

_EDUCATION = ("硕士", "硕士", "博士", "本科")


class NameMaker:
    """One shared Faker per locale, re-seeded per entity (``seed_instance``, never the global seed)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fakers: dict[str, Faker] = {}

    def _faker(self, locale: str) -> Faker:
        if locale not in self._fakers:
            self._fakers[locale] = Faker(locale)
        return self._fakers[locale]

    def person_name(self, seed: int, kind: str, *key: object, locale: str = "zh_CN") -> str:
        """A person's name determined by (seed, kind, key)."""
        with self._lock:
            fake = self._faker(locale)
            fake.seed_instance(derive_seed(seed, kind, *key))
            return fake.name()


def build_manager(names: NameMaker, seed: int, company_idx: int, k: int) -> dict:
    """Fund manager ``k`` of company ``company_idx``: id, name, education, experience, funds, AUM."""
    rng = rng_for(seed, "manager", company_idx, k)
    company, company_full = v.COMPANIES[company_idx]
    years = round(0.5 + rng.random() ** 1.5 * 17, 1)
    return {
        "manager_id": 10_000_000 + (derive_seed(seed, "manager_id", company_idx, k) % 90_000_000),
        "name": names.person_name(seed, "manager_name", company_idx, k),
        "company": company,
        "company_full": company_full,
        "education": pick(rng, _EDUCATION),
        "experience_years": years,
        "fund_count": 1 + rng.randrange(3 + int(years * 2)),
        "aum_yi": round(5 + rng.random() ** 2 * 900, 2),
    }
