"""The seed entities of one sample: who asks, which funds/strategies/keywords the query names."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from finmcp.server.world import World

NEWS_KEYWORDS = ("市场", "降息", "红利", "黄金", "科技", "消费", "债市", "美联储", "新能源", "医药")
NEWS_KEYWORDS_EN = {
    "市场": "the market",
    "降息": "rate cuts",
    "红利": "dividend stocks",
    "黄金": "gold",
    "科技": "technology",
    "消费": "consumer stocks",
    "债市": "the bond market",
    "美联储": "the Fed",
    "新能源": "new energy",
    "医药": "healthcare",
}
HORIZONS = ("oneYear", "oneToThree", "threeToFive", "overFive")
CITIES = ("浙江杭州", "上海", "北京", "广东深圳", "四川成都", "江苏南京", "湖北武汉", "陕西西安")


@dataclass
class Persona:
    """A role-play user: name, age, income, risk tolerance and goal (multi-turn samples)."""

    name: str
    city: str
    age: int
    annual_income: int
    risk_tolerance: str
    goal: str
    family_size: int
    goal_en: str = ""

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form stored in the sample."""
        return {
            "name": self.name,
            "city": self.city,
            "age": self.age,
            "annual_income": self.annual_income,
            "risk_tolerance": self.risk_tolerance,
            "goal": self.goal,
            "goal_en": self.goal_en,
            "family_size": self.family_size,
        }


@dataclass
class SampleContext:
    """Entities a query names directly (the sources of a chain's first steps)."""

    user_id: str
    funds: list[tuple[str, str]]
    fund_keyword: str
    qdii_funds: list[tuple[str, str]]
    strategies: list[tuple[str, str]]
    strategy_keyword: str
    news_keyword: str
    amount: int
    target_return: float
    drawdown: float
    horizon: str
    persona: Persona | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def fund(self) -> tuple[str, str]:
        """The first (main) fund of the sample."""
        return self.funds[0]

    @property
    def strategy(self) -> tuple[str, str]:
        """The first (main) strategy of the sample."""
        return self.strategies[0]


def make_context(world: World, rng: random.Random) -> SampleContext:
    """Draw the seed entities of one sample from the world."""
    codes = world.fund_codes()
    picked = rng.sample(codes[:1500], 3)
    funds = [(c, world.require_stub(c).name) for c in picked]
    qdii_codes = world.codes_by_type("QDII型")
    qdii = [(c, world.require_stub(c).name) for c in rng.sample(qdii_codes, min(2, len(qdii_codes)))]
    strategy_codes = rng.sample(world.strategy_codes(), 2)
    strategies = [(c, world.require_strategy(c).name) for c in strategy_codes]
    stub = world.require_stub(funds[0][0])
    fund_keyword = stub.theme if stub.theme and len(stub.theme) >= 2 else stub.name[:4]
    return SampleContext(
        user_id=rng.choice(world.user_ids(200)),
        funds=funds,
        fund_keyword=fund_keyword,
        qdii_funds=qdii,
        strategies=strategies,
        strategy_keyword=strategies[0][1][:2],
        news_keyword=rng.choice(NEWS_KEYWORDS),
        amount=10000 * rng.randrange(2, 51),
        target_return=rng.choice((0.03, 0.04, 0.05, 0.06, 0.08)),
        drawdown=rng.choice((0.03, 0.05, 0.1, 0.15)),
        horizon=rng.choice(HORIZONS),
    )
