"""Quant maths on return and level series: returns, drawdowns, volatility, Sharpe, correlation, OLS.

Pure functions of their arguments (no world, no seed), shared by the world's NAV performance figures
and the simulator's fund and portfolio analytics. A *level* series is a price or total-return index
(positive numbers); a *return* series holds daily simple returns.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import accumulate
from operator import truediv
from typing import TypedDict

TRADING_DAYS_PER_YEAR = 250
RISK_FREE = 0.015


def phi(x: float) -> float:
    """Standard normal CDF."""
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def clamp(x: float, lo: float, hi: float) -> float:
    """``x`` limited to ``[lo, hi]``."""
    return lo if x < lo else hi if x > hi else x


def daily_returns(levels: Sequence[float], lo: int, hi: int) -> list[float]:
    """Simple returns of ``levels`` over positions ``(lo, hi]``."""
    return [levels[i] / levels[i - 1] - 1.0 for i in range(lo + 1, hi + 1)]


def levels_from_returns(returns: Sequence[float]) -> list[float]:
    """Cumulative level series starting at 1.0 (one more element than ``returns``)."""
    out = [1.0]
    for r in returns:
        out.append(out[-1] * (1.0 + r))
    return out


def max_drawdown(levels: Sequence[float], lo: int = 0, hi: int | None = None) -> float:
    """Largest peak-to-trough fall of ``levels[lo:hi+1]`` (default: the whole series), a positive fraction."""
    end = len(levels) - 1 if hi is None else hi
    if levels[lo] > 0:
        # every running peak is positive: the worst of 1 - x / peak is 1 - the least x / peak (rounding
        # is monotonic), found in C over the running maxima; the loop below gives the same float
        window = levels[lo : end + 1]
        if not window:
            return 0.0
        return max(0.0, 1.0 - min(map(truediv, window, accumulate(window, max))))
    peak, worst = levels[lo], 0.0
    for x in levels[lo : end + 1]:
        if x > peak:
            peak = x
        elif peak > 0 and 1.0 - x / peak > worst:
            worst = 1.0 - x / peak
    return worst


def sample_variance(values: Sequence[float]) -> float:
    """Unbiased sample variance (needs at least two values)."""
    mean = sum(values) / len(values)
    return sum((r - mean) ** 2 for r in values) / (len(values) - 1)


def annual_volatility(returns: Sequence[float]) -> float | None:
    """Annualised standard deviation of daily returns (None for fewer than two)."""
    if len(returns) < 2:
        return None
    return math.sqrt(sample_variance(returns) * TRADING_DAYS_PER_YEAR)


def level_volatility(levels: Sequence[float], lo: int, hi: int) -> float | None:
    """Annualised volatility of the daily returns of ``levels[lo:hi+1]`` (None for fewer than two).

    Computed as ``sqrt(variance) * sqrt(250)``, the world's published NAV figures' order of operations;
    :func:`annual_volatility` multiplies before the root (the two may differ in the last bit).
    """
    rets = daily_returns(levels, lo, hi)
    if len(rets) < 2:
        return None
    return math.sqrt(sample_variance(rets)) * math.sqrt(TRADING_DAYS_PER_YEAR)


class ReturnMetrics(TypedDict):
    """What :func:`return_metrics` reports (fractions; ``max_drawdown`` positive)."""

    total: float
    annual: float
    volatility: float | None
    max_drawdown: float
    sharpe: float | None


def return_metrics(returns: Sequence[float]) -> ReturnMetrics:
    """Total and annualised return, annualised volatility, max drawdown (positive) and Sharpe."""
    levels = levels_from_returns(returns)
    total = levels[-1] - 1.0
    years = len(returns) / TRADING_DAYS_PER_YEAR
    annual = (levels[-1] ** (1.0 / years) - 1.0) if years >= 1 else (total / years if years > 0 else 0.0)
    vol = annual_volatility(returns)
    sharpe = None if not vol or vol < 1e-9 else (annual - RISK_FREE) / vol
    return {
        "total": total,
        "annual": annual,
        "volatility": vol,
        "max_drawdown": max_drawdown(levels),
        "sharpe": sharpe,
    }


def recovery_days(levels: Sequence[float]) -> tuple[int | None, float]:
    """(longest peak-to-recovery span in trading days, or None when the worst span is still open; max drawdown)."""
    peak_i, peak = 0, levels[0]
    longest_closed = 0
    in_dd = False
    for i, x in enumerate(levels):
        if x >= peak:
            if in_dd:
                longest_closed = max(longest_closed, i - peak_i)
                in_dd = False
            peak_i, peak = i, x
        else:
            in_dd = True
    open_span = len(levels) - 1 - peak_i if in_dd else 0
    return (None if open_span > longest_closed else longest_closed), max_drawdown(levels)


def correlation(a: list[float], b: list[float]) -> float:
    """Pearson correlation (0 when either series is flat)."""
    n = len(a)
    if n < 2:
        return 0.0
    ma, mb = sum(a) / n, sum(b) / n
    sa = sum((x - ma) ** 2 for x in a)
    sb = sum((y - mb) ** 2 for y in b)
    if sa <= 0 or sb <= 0:
        return 0.0
    return max(
        -1.0, min(1.0, sum((x - ma) * (y - mb) for x, y in zip(a, b, strict=True)) / math.sqrt(sa * sb))
    )


def portfolio_returns(weights: dict[str, float], rets: dict[str, list[float]]) -> list[float]:
    """Daily returns of a buy-and-hold portfolio started with ``weights`` (fractions summing to 1)."""
    values = dict(weights)
    n = len(next(iter(rets.values())))
    out = []
    total = sum(values.values())
    for t in range(n):
        new_total = 0.0
        for c in values:
            values[c] *= 1.0 + rets[c][t]
            new_total += values[c]
        out.append(new_total / total - 1.0)
        total = new_total
    return out


def solve_linear(a: list[list[float]], b: list[float]) -> list[float] | None:
    """Solve ``a x = b`` by Gaussian elimination with partial pivoting (None when singular)."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for col in range(n):
        piv = max(range(col, n), key=lambda r: abs(m[r][col]))
        if abs(m[piv][col]) < 1e-18:
            return None
        m[col], m[piv] = m[piv], m[col]
        for r in range(col + 1, n):
            f = m[r][col] / m[col][col]
            for c in range(col, n + 1):
                m[r][c] -= f * m[col][c]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        x[r] = (m[r][n] - sum(m[r][c] * x[c] for c in range(r + 1, n))) / m[r][r]
    return x


def factor_fit(y: Sequence[float], factors: Sequence[Sequence[float]]) -> dict[str, float] | None:
    """OLS of ``y`` on an intercept and ``factors``: R², residual variance and its standard error."""
    n, k = len(y), len(factors) + 1
    if n <= k + 1:
        return None
    cols = [[1.0] * n, *[list(f) for f in factors]]
    xtx = [[sum(ci[t] * cj[t] for t in range(n)) for cj in cols] for ci in cols]
    xty = [sum(ci[t] * y[t] for t in range(n)) for ci in cols]
    beta = solve_linear(xtx, xty)
    mean = sum(y) / n
    sst = sum((v_ - mean) ** 2 for v_ in y)
    if beta is None or sst <= 0:
        return None
    sse = sum((y[t] - sum(beta[j] * cols[j][t] for j in range(k))) ** 2 for t in range(n))
    resid_var = sse / (n - k)
    return {
        "r_squared": 1.0 - sse / sst,
        "residual_variance": resid_var,
        "standard_error": math.sqrt(resid_var),
    }
