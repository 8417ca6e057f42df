"""Schema-driven simulation of the FinToolBench tools and example arguments for every tool."""

from __future__ import annotations

import json
from datetime import date
from functools import cache

import pytest
from jsonschema import Draft202012Validator

from finmcp.server.sim import Simulator
from finmcp.server.sim.example_args import example_arguments
from finmcp.server.sim.schema_calls import MAX_ROWS
from finmcp.server.world import World
from finmcp.server.world import trading_calendar as cal
from finmcp.tool_specs.inventory import load_inventory

FINTOOL = load_inventory("fintool760")
QIEMAN = load_inventory("qieman79")
WORLD = World(seed=0)


@cache
def _simulator(seed: int) -> Simulator:
    return Simulator(FINTOOL, seed=seed, world=WORLD if seed == 0 else None)


@cache
def _validator(schema_json: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads(schema_json))


def _errors(schema: dict, value: object) -> list[str]:
    validator = _validator(json.dumps(schema, sort_keys=True))
    return [f"{list(e.absolute_path)}: {e.message[:160]}" for e in validator.iter_errors(value)]


@pytest.mark.parametrize("tool", [t.name for t in FINTOOL])
def test_fintool_example_args_and_output_validate(tool: str) -> None:
    spec = FINTOOL.get(tool)
    args = example_arguments(spec, WORLD, rng_seed=0, variant=0)
    assert _errors(spec.input_schema, args) == []
    result = _simulator(0).simulate(tool, args)
    assert result["isError"] is False, result["content"][0]["text"]
    assert _errors(spec.output_schema, result["structuredContent"]) == []
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]["result"]


@pytest.mark.parametrize("tool", [t.name for t in QIEMAN])
def test_qieman_example_args_validate(tool: str) -> None:
    spec = QIEMAN.get(tool)
    for variant in range(4):
        args = example_arguments(spec, WORLD, rng_seed=variant, variant=variant)
        assert _errors(spec.input_schema, args) == [], (variant, args)
        assert set(spec.input_schema.get("required", [])) <= set(args)


def test_example_args_use_world_entities() -> None:
    args = example_arguments(QIEMAN.get("GetFundLatestProfit"), WORLD, variant=0)
    user = WORLD.user(args["userId"])
    assert set(args["serviceAccountIdList"]) <= {s["account_id"] for s in user.sub_accounts}
    assert set(args["fundCodeList"]) <= {p["fund_code"] for p in user.positions}
    risk = example_arguments(QIEMAN.get("AnalyzePortfolioRisk"), WORLD, variant=1)
    assert abs(sum(h["weight"] for h in risk["holdings"]) - 1) < 1e-9
    mc = example_arguments(QIEMAN.get("MonteCarloSimulate"), WORLD, variant=0)
    assert abs(sum(mc["weights"].values()) - 1) < 1e-9
    plan = example_arguments(QIEMAN.get("GetCompositeModel"), WORLD)
    assert WORLD.composite_model(plan["assetPlanId"]) is not None
    chart = example_arguments(QIEMAN.get("RenderEchart"), WORLD, variant=1)
    assert "series" in json.loads(chart["option"])
    hist = example_arguments(FINTOOL.get("stock_zh_a_hist"), WORLD, variant=0)
    assert WORLD.stock(hist["symbol"]) is not None
    assert len(hist["start_date"]) == 8 and hist["start_date"] < hist["end_date"]
    assert example_arguments(FINTOOL.get("symbols_historical_prices"), WORLD)["ticker_slug"].isalpha()


def test_hist_rows_carry_the_symbol_and_dates_of_the_range() -> None:
    args = {"symbol": "600519", "start_date": "20250801", "end_date": "20250829", "period": "daily"}
    rows = _simulator(0).value("stock_zh_a_hist", args)
    expected = [d.isoformat() for d in cal.trading_days(date(2025, 8, 1), date(2025, 8, 29))]
    assert [r["日期"] for r in rows] == expected
    assert {r["代码"] for r in rows} == {"600519"}
    for r in rows:
        assert r["最高"] >= max(r["开盘"], r["收盘"]) >= min(r["开盘"], r["收盘"]) >= r["最低"] > 0
        assert r["成交量"] > 0 and isinstance(r["成交量"], int)
    # the same symbol has the same bars whatever range is asked for
    week = _simulator(0).value("stock_zh_a_hist", {**args, "start_date": "20250825"})
    assert week == rows[-len(week) :]


def test_dashed_dates_and_row_cap_and_weekly_period() -> None:
    rows = _simulator(0).value(
        "stock_zh_a_hist", {"symbol": "000001", "start_date": "2015-01-01", "end_date": "2025-09-30"}
    )
    assert len(rows) == MAX_ROWS
    assert rows[-1]["日期"] == cal.trading_day_on_or_before(WORLD.as_of).isoformat()
    weekly = _simulator(0).value(
        "stock_zh_a_hist",
        {"symbol": "000001", "start_date": "20250801", "end_date": "20250829", "period": "weekly"},
    )
    assert len(weekly) == 5 and weekly[-1]["日期"] == "2025-08-29"


def test_rapidapi_ticker_flows_into_nested_rows() -> None:
    args = {"ticker_slug": "msft", "date_start": "2025-09-01", "date_end": "2025-09-12", "show_by": "day"}
    value = _simulator(0).value("symbols_historical_prices", args)
    rows = next(v for v in value.values() if isinstance(v, list)) if isinstance(value, dict) else value
    assert len(rows) == 10
    codes = {str(val).upper() for r in rows for key, val in r.items() if key in ("symbol", "slug", "ticker")}
    assert codes <= {"MSFT"}


def test_list_tools_return_world_entities() -> None:
    listing = [
        t
        for t in FINTOOL
        if t.source == "akshare"
        and t.meta.get("output_rows_by") == "list"
        and t.meta.get("output_shape") == "rows"
        and "stock_symbol" in t.meta.get("output_entity_columns", {}).values()
        and not t.input_schema.get("required")
    ]
    assert listing, "no akshare stock listing tool in fintool760"
    spec = listing[0]
    code_col = next(c for c, e in spec.meta["output_entity_columns"].items() if e == "stock_symbol")
    rows = _simulator(0).value(spec.name, {})
    assert rows and all(WORLD.stock(r[code_col]) is not None for r in rows)
    assert len({r[code_col] for r in rows}) == len(rows)


def test_bad_dates_are_errors_naming_the_argument() -> None:
    bad = _simulator(0).simulate("stock_zh_a_hist", {"symbol": "600519", "start_date": "2025-13-45"})
    assert bad["isError"] and "start_date" in bad["content"][0]["text"]
    flipped = _simulator(0).simulate(
        "stock_zh_a_hist", {"symbol": "600519", "start_date": "20250901", "end_date": "20250801"}
    )
    assert flipped["isError"] and "after" in flipped["content"][0]["text"]


SAMPLE = [t.name for t in FINTOOL.tools[::38]]


def test_determinism_and_seed_sensitivity() -> None:
    fresh_a, fresh_b = Simulator(FINTOOL, seed=0), Simulator(FINTOOL, seed=0)
    other = _simulator(7)
    differs = 0
    for tool in SAMPLE:
        args = example_arguments(FINTOOL.get(tool), WORLD, variant=1)
        text = fresh_a.simulate(tool, args)["content"][0]["text"]
        assert text == fresh_b.simulate(tool, args)["content"][0]["text"], tool
        differs += text != other.simulate(tool, args)["content"][0]["text"]
    assert differs >= len(SAMPLE) - 2
