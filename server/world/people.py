"""People: fund managers, named from the shipped name tables (zh_CN), seeded per person."""

from __future__ import annotations

from finmcp.recordings.plumbing.seeding import derive_seed, rng_for

from . import vocab as v
from .names import person_name
from .rng import pick

_EDUCATION = ("硕士", "硕士", "博士", "本科")


def build_manager(seed: int, company_idx: int, k: int) -> dict:
    """Fund manager ``k`` of company ``company_idx``: id, name, education, experience, funds, AUM."""
    rng = rng_for(seed, "manager", company_idx, k)
    company, company_full = v.COMPANIES[company_idx]
    years = round(0.5 + rng.random() ** 1.5 * 17, 1)
    return {
        "manager_id": 10_000_000 + (derive_seed(seed, "manager_id", company_idx, k) % 90_000_000),
        "name": person_name(seed, "manager_name", company_idx, k),
        "company": company,
        "company_full": company_full,
        "education": pick(rng, _EDUCATION),
        "experience_years": years,
        "fund_count": 1 + rng.randrange(3 + int(years * 2)),
        "aum_yi": round(5 + rng.random() ** 2 * 900, 2),
    }
