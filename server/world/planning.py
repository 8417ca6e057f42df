"""Asset-allocation plans on a fixed grid of (return, drawdown, horizon) and their composite models.

Plan ids are 'AAP' + 6 digits encoding the grid cell, so any id can be decoded back to its plan.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from finmcp.recordings.plumbing.seeding import rng_for

from . import vocab as v
from .rng import proportional_bp, sample

if TYPE_CHECKING:
    from .view import WorldView

RETURN_GRID = [round(0.01 + 0.005 * i, 4) for i in range(29)]  # 1% .. 15%
DRAWDOWN_GRID = [round(0.01 * (i + 1), 4) for i in range(40)]  # 1% .. 40%
_CLASS_FUND_TYPES = {
    "中国股票": ("股票型", "混合型", "指数型"),
    "中国债券": ("债券型",),
    "另类商品": ("指数型",),
    "海外股票": ("QDII型",),
    "现金": ("货币型",),
}


def _nearest(grid: list[float], x: float) -> int:
    return min(range(len(grid)), key=lambda i: (abs(grid[i] - x), i))


def plan_id_for(
    expected_return: float | None, expected_drawdown: float | None, horizon: str | None
) -> tuple[str, dict]:
    """Snap the request to the grid (return drives, drawdown is corrected to match) and return the id."""
    if horizon is not None and horizon not in v.PLAN_HORIZONS:
        raise ValueError(f"expectedInvestTime {horizon!r} unknown; expected one of {v.PLAN_HORIZONS}")
    for name, val in (
        ("expectedAnnualizedReturnRate", expected_return),
        ("expectedDrawdown", expected_drawdown),
    ):
        if val is not None and not 0 < val < 1:
            raise ValueError(f"{name} must be a fraction in (0, 1), got {val}")
    if expected_return is None and expected_drawdown is None:
        expected_return = 0.05
    if expected_return is not None:
        ri = _nearest(RETURN_GRID, expected_return)
        di = _nearest(DRAWDOWN_GRID, RETURN_GRID[ri] * 1.0)
        basis = "收益率"
    else:
        assert expected_drawdown is not None  # both None: the default return above
        di = _nearest(DRAWDOWN_GRID, expected_drawdown)
        ri = _nearest(RETURN_GRID, DRAWDOWN_GRID[di])
        basis = "回撤"
    hi = v.PLAN_HORIZONS.index(horizon or "未指定")
    number = 100 + (ri * len(DRAWDOWN_GRID) + di) * len(v.PLAN_HORIZONS) + hi
    return f"AAP{number:06d}", {
        "return": RETURN_GRID[ri],
        "drawdown": DRAWDOWN_GRID[di],
        "horizon": v.PLAN_HORIZONS[hi],
        "basis": basis,
    }


def decode_plan_id(plan_id: str) -> dict | None:
    """Grid cell of a plan id, or None when the id is not one this world issues."""
    if not (
        isinstance(plan_id, str) and len(plan_id) == 9 and plan_id.startswith("AAP") and plan_id[3:].isdigit()
    ):
        return None
    n = int(plan_id[3:]) - 100
    if n < 0 or n >= len(RETURN_GRID) * len(DRAWDOWN_GRID) * len(v.PLAN_HORIZONS):
        return None
    cell, hi = divmod(n, len(v.PLAN_HORIZONS))
    ri, di = divmod(cell, len(DRAWDOWN_GRID))
    return {"return": RETURN_GRID[ri], "drawdown": DRAWDOWN_GRID[di], "horizon": v.PLAN_HORIZONS[hi]}


def plan_weights(target_return: float) -> dict[str, float]:
    """Weights over the plan asset classes; equity share grows with the target return."""
    equity = min(0.9, max(0.0, (target_return - 0.02) / 0.1))
    raw = [
        equity * 0.55,
        max(0.05, 1 - equity) * 0.9,
        0.02 + equity * 0.05,
        equity * 0.4,
        max(0.0, 0.1 - equity * 0.2),
    ]
    bps = proportional_bp([max(0.0, x) for x in raw])
    return {k: round(bp / 10000, 4) for k, bp in zip(v.PLAN_CLASSES, bps, strict=True)}


def build_plan(expected_return: float | None, expected_drawdown: float | None, horizon: str | None) -> dict:
    """An asset-allocation plan for the request."""
    plan_id, cell = plan_id_for(expected_return, expected_drawdown, horizon)
    return {"plan_id": plan_id, "corrected": cell, "weights": plan_weights(cell["return"])}


def build_composite_model(world: WorldView, plan_id: str) -> dict | None:
    """Funds per plan asset class with weights (fractions of the whole plan), or None for unknown ids."""
    cell = decode_plan_id(plan_id)
    if cell is None:
        return None
    rng = rng_for(world.seed, "composite_model", plan_id)
    weights = plan_weights(cell["return"])
    level = 1 + min(4, int(cell["return"] / 0.03))
    classes = []
    for cls, w in weights.items():
        if w <= 0:
            continue
        pool = [
            c
            for t in _CLASS_FUND_TYPES[cls]
            for c in world.codes_by_type(t)
            if cls != "另类商品" or world.require_stub(c).theme == "黄金"
        ] or world.codes_by_type("货币型")
        chosen = sorted(sample(rng, pool, 1 + rng.randrange(6)))
        bps = proportional_bp([0.5 + rng.random() for _ in chosen], round(w * 10000))
        funds = [
            {"fund_code": c, "fund_name": world.require_stub(c).name, "weight": round(bp / 10000, 4)}
            for c, bp in zip(chosen, bps, strict=True)
        ]
        classes.append({"asset_class": cls, "weight": w, "funds": funds})
    return {
        "plan_id": plan_id,
        "risk_level": level,
        "risk_name": v.RISK_LEVEL_NAMES[level],
        "classes": classes,
    }
