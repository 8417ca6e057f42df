"""Valid example arguments for any tool, from its input schema and the seeded world.

``example_arguments(spec, world, rng_seed, variant)`` fills every required property, and optional ones
by ``variant``: 0 -> the natural call (required + instrument and date parameters), 1 -> every property,
2+ -> required plus a seeded subset. Values are real world entities where the parameter names one
(fund codes, strategy codes, user ids and their sub-accounts, plan ids, announcement ids, A-share codes,
US tickers for RapidAPI tools), dates in the format the description or name implies, choices from
``enum`` or the description's "One of:" list, and strings matching any ``pattern``. The result always
validates against the input schema.
"""

from __future__ import annotations

import json
import random
import re
from datetime import date, timedelta
from typing import Any

from finmcp.recordings.plumbing.seeding import rng_for
from finmcp.server.sim.regex_strings import sample_pattern
from finmcp.server.sim.schema_values import format_date
from finmcp.server.sim.sim_entities import CRYPTO, CURRENCY_PAIRS, US_TICKERS, universe
from finmcp.server.world import World
from finmcp.server.world import trading_calendar as cal
from finmcp.server.world import vocab as v
from finmcp.tool_specs import param_text
from finmcp.tool_specs.model import ToolSpec
from finmcp.tool_specs.validation import fit_length

_START = re.compile(
    r"^(start|begin|from|since|date_?start|start_?date|startdate|datestart|creation_from)", re.I
)
_END = re.compile(r"^(end|to|until|date_?end|end_?date|enddate|dateend|creation_to)", re.I)
_ECHART = {
    "title": {"text": "近一年净值走势"},
    "xAxis": {"type": "category", "data": ["2025-07", "2025-08", "2025-09"]},
    "yAxis": {"type": "value"},
    "series": [{"type": "line", "data": [1.02, 1.05, 1.08]}],
}
_HTML = '<!DOCTYPE html><html><head><meta charset="utf-8"><title>报告</title></head><body><h1>资产配置报告</h1></body></html>'
_KEYWORDS_CN = ("红利", "债券", "沪深300", "降息", "市场", "黄金")
_NAMES = ("张伟", "李娜", "王芳", "刘洋")


class _Gen:
    """State of one example: the tool, the world, a seeded draw and values chosen so far."""

    def __init__(self, spec: ToolSpec, world: World, rng: random.Random, variant: int) -> None:
        self.spec = spec
        self.world = world
        self.rng = rng
        self.variant = variant
        self.chosen: dict[str, Any] = {}
        self.western = spec.source == "rapidapi"

    # -------------------------------------------------------------- helpers
    def pick(self, items: Any) -> Any:
        items = list(items)
        return items[self.rng.randrange(len(items))]

    def recent_day(self, back_days: int = 0) -> date:
        d = cal.trading_day_on_or_before(self.world.as_of - timedelta(days=back_days))
        return d

    def fund_codes(self, desc: str) -> list[str]:
        text = desc.lower()
        for word, fund_type in (
            ("qdii", "QDII型"),
            ("bond", "债券型"),
            ("money", "货币型"),
            ("index", "指数型"),
        ):
            if word in text:
                return self.world.codes_by_type(fund_type)
        return self.world.fund_codes()

    def user_id(self) -> str:
        if "userId" not in self.chosen:
            self.chosen["userId"] = self.pick(self.world.user_ids(20))
        return self.chosen["userId"]

    # -------------------------------------------------------------- dates
    def date_label(self, name: str, desc: str) -> str:
        label = param_text.date_format_named(desc)
        if label:
            return label
        if re.search(r"time$", name, re.I) and "YYYY" not in desc:
            return "YYYY-MM-DD HH:MM:SS"
        return "YYYYMMDD" if self.spec.source == "akshare" else "YYYY-MM-DD"

    def date_value(self, name: str, desc: str, schema: dict[str, Any]) -> Any:
        label = self.date_label(name, desc)
        if schema.get("type") in ("number", "integer"):
            label = "unix"
        span = self.chosen.setdefault("__span", 30 + self.rng.randrange(60))
        if _END.match(name):
            d = self.recent_day(3)
        elif _START.match(name):
            d = self.recent_day(3 + span)
        else:
            d = self.recent_day(3 + self.rng.randrange(20))
        if "yyyy.MM.dd" in desc:
            return d.strftime("%Y.%m.%d")
        if re.search(r"XXXX0331|20200331|quarter|季", desc):
            q_end = date(d.year, (d.month - 1) // 3 * 3 + 1, 1) - timedelta(days=1)
            d = q_end
        if label == "YYYY" or name.endswith("year"):
            return str(d.year) if schema.get("type") == "string" else d.year
        if "time" in name.lower() and label == "YYYY-MM-DD HH:MM:SS":
            return format_date(d, label, "10:00:00")
        out = format_date(d, label)
        return out if schema.get("type") != "string" else str(out)

    # -------------------------------------------------------------- strings
    def symbol(self, name: str, desc: str) -> str:
        example = param_text.example(desc)
        text = desc.lower()
        if "crypto" in text or name in ("coin", "crypto_name"):
            return self.pick(CRYPTO)[0]
        if "currency" in text:
            pair = self.pick(CURRENCY_PAIRS)[0]
            return pair if self.spec.source == "akshare" else pair[:3]
        if "fund code" in text:
            return self.pick(self.world.fund_codes()[:400])
        if "index code" in text:
            return self.pick(self.world.index_codes()[:10])
        if "bond code" in text:
            code = self.pick(self.world.bonds())["code"]
            if example and re.fullmatch(r"(sh|sz)\d+", example):
                return "sh" + re.sub(r"\D", "", code)[:6].rjust(6, "0")
            return code
        if "futures" in text or "commodity" in text:
            return self.pick(universe(self.world, "futures_symbol")).code
        if "option" in text:
            return self.pick(universe(self.world, "option_symbol")).code
        if "board" in text or "industry" in text:
            return self.pick(v.INDUSTRIES)
        if self.western or (example and re.fullmatch(r"[A-Z]{1,5}", example)):
            ticker = self.pick(US_TICKERS[:12])[0]
            if example and ":" in example:
                return f"NASDAQ:{ticker}"
            return ticker
        code = self.pick(self.world.stocks())["code"]
        if example and re.fullmatch(r"(sh|sz)\d{6}", example):
            return ("sh" if code.startswith("6") else "sz") + code
        return code

    def string(self, name: str, schema: dict[str, Any], desc: str) -> str:
        lname = name.lower()
        w = self.world
        if lname in ("fundcode",):
            return self.pick(self.fund_codes(desc)[:300])
        if lname in ("strategycode", "pocode"):
            return self.pick(w.strategy_codes())
        if lname == "userid":
            return self.user_id()
        if lname == "assetplanid":
            plan = w.asset_allocation_plan(round(0.03 + 0.01 * self.rng.randrange(6), 2), None, None)
            return plan["plan_id"]
        if lname == "announcementid":
            code = self.chosen.get("fundCode") or self.pick(w.fund_codes()[:200])
            anns = w.fund_announcements(code)
            return anns[0]["id"] if anns else "800000000001"
        if lname in ("fundnameorcode", "fundname"):
            stub = w.require_stub(self.pick(w.fund_codes()[:300]))
            return stub.name if lname == "fundname" or self.rng.random() < 0.5 else stub.code
        if lname == "option":
            return json.dumps(_ECHART, ensure_ascii=False)
        if lname == "html":
            return _HTML
        if lname in ("beforedays", "afterdays"):
            return str(1 + self.rng.randrange(5))
        if lname == "keyword":
            if "Strategy" in self.spec.name:
                return w.require_strategy(self.pick(w.strategy_codes())).name[:2]
            return self.pick(_KEYWORDS_CN) if self.spec.source != "rapidapi" else "apple"
        if lname in ("timeperiod",):
            return "LAST_YEAR"
        if lname in ("role",):
            return "本人"
        if lname == "gender":
            return "男"
        if lname == "name" and self.spec.source == "qieman":
            return self.pick(_NAMES)
        if lname in ("width", "height"):
            return "800" if lname == "width" else "600"
        # the simulator's reading of a choice list, kept as it was so its answers stay byte-identical
        choices = param_text.choices(desc, stop_at_default=False, keep_empty=True, year=w.as_of.year - 1)
        if choices:
            return self.pick(choices)
        if lname.endswith("_month"):
            return self.recent_day(3).strftime("%y%m")
        if re.search(r"date|time|^start$|^end$|day$|^since$|^until$", lname) and not re.search(
            r"offset|paging", desc, re.I
        ):
            return str(self.date_value(name, desc, schema))
        if lname in (
            "symbol",
            "symbols",
            "code",
            "stock",
            "ticker",
            "fund",
            "bond_code",
            "coin",
            "crypto_name",
        ):
            return self.symbol(lname, desc)
        if lname in ("year", "start_year", "end_year"):
            return str(self.world.as_of.year - 1)
        if lname in ("region", "countrycode"):
            return "US"
        if lname in ("lang", "lang_id"):
            return "en"
        if lname in ("api_key", "apikey", "token", "cookie"):
            return "demo"
        if lname == "url":
            return "https://example.com"
        if lname in ("start_page", "end_page", "page"):
            return "1" if lname != "end_page" else "2"
        if lname in ("q", "query", "search", "text", "string"):
            return "apple" if self.western else "贵州"
        if lname in ("base", "from_currency", "base_code", "currency", "target_currency"):
            return "USD"
        if lname in ("to_currency",):
            return "CNY"
        example = param_text.example(desc)
        if example:
            return example
        if lname in ("ticker_slug", "slug"):
            return self.pick(US_TICKERS[:12])[0].lower()
        if lname in ("performanceid", "securityid"):
            return "0P000000GY"
        if lname in ("period",):
            return "daily"
        if "id" in lname:
            return str(1000 + self.rng.randrange(9000))
        return "1" if self.spec.source == "akshare" else "default"

    # -------------------------------------------------------------- numbers
    def number(self, name: str, schema: dict[str, Any], integer: bool, desc: str) -> float | int:
        lname = name.lower()
        if re.search(r"unix|timestamp", desc, re.I) or lname in ("since", "until"):
            return self.date_value(name, desc, {"type": "integer"})
        if re.search(r"page|pageindex|number", lname) and "size" not in lname:
            x: float = 1
        elif re.search(r"size|limit|count|pagesize", lname) and "simulation" not in lname:
            x = 5 + self.rng.randrange(6)
        elif lname == "simulationcount":
            x = 1000
        elif lname == "periodcount":
            x = 12
        elif "age" in lname:
            x = 30 if "start" in lname or "initial" in lname else 60
        elif re.search(r"rate|return|ratio|weight|drawdown", lname):
            x = round(0.02 + self.rng.random() * 0.06, 4)
        elif lname == "threshold":
            x = 20
        elif re.search(r"amount|asset|income|expense|liabilit|value|payment|investment", lname):
            x = float(10000 * (1 + self.rng.randrange(50)))
        elif lname == "year":
            x = self.world.as_of.year - 1
        elif lname in ("month", "day"):
            x = 6
        elif lname == "timeout":
            x = 10
        elif lname == "time_utc_offset":
            x = 28800
        elif lname == "devicepixelratio":
            x = 2
        elif "threshold" in lname:
            x = -0.02
        else:
            x = 1 + self.rng.randrange(10)
        lo, hi = schema.get("minimum"), schema.get("maximum")
        xlo, xhi = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
        if isinstance(lo, (int, float)) and x < lo:
            x = lo
        if isinstance(hi, (int, float)) and x > hi:
            x = hi
        if isinstance(xlo, (int, float)) and x <= xlo:
            x = xlo + (1 if integer else 0.5)
        if isinstance(xhi, (int, float)) and x >= xhi:
            x = xhi - (1 if integer else 0.5)
        if isinstance(schema.get("enum"), list):
            x = self.pick(schema["enum"])
        return int(x) if integer else x

    # -------------------------------------------------------------- structure
    def value(self, name: str, schema: dict[str, Any], parent: str = "") -> Any:
        desc = str(schema.get("description") or "")
        if "const" in schema:
            return schema["const"]
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return self.pick(schema["enum"])
        t = schema.get("type")
        if isinstance(t, list):
            t = next((x for x in t if x != "null"), "null")
        if t is None:
            t = "object" if "properties" in schema else "array" if "items" in schema else "string"
        if t == "object":
            return self.obj(name, schema)
        if t == "array":
            return self.array(name, schema, desc)
        if t == "integer":
            return self.number(name, schema, True, desc)
        if t == "number":
            return self.number(name, schema, False, desc)
        if t == "boolean":
            return self.rng.random() < 0.5 if name != "noACL" else False
        if t == "null":
            return None
        text = self.string(name, schema, desc)
        pattern = schema.get("pattern")
        if isinstance(pattern, str) and not re.search(pattern, text):
            text = sample_pattern(pattern, self.rng) or text
        return fit_length(text, schema)

    def array(self, name: str, schema: dict[str, Any], desc: str) -> list[Any]:
        items = raw_items if isinstance(raw_items := schema.get("items"), dict) else {}
        lo = raw_lo if isinstance(raw_lo := schema.get("minItems"), int) else 1
        hi = raw_hi if isinstance(raw_hi := schema.get("maxItems"), int) else 3
        n = max(lo, min(hi, 1 + self.rng.randrange(3)))
        lname = name.lower()
        w = self.world
        if lname in ("fundcodes", "fundcodelist") and items.get("type") == "string":
            if self.spec.name == "GetFundLatestProfit" and "userId" in self.chosen:
                held = sorted({p["fund_code"] for p in w.user(self.user_id()).positions})
                if held:
                    return held[: max(lo, min(hi, 2))]
            return self.unique(lambda: self.pick(self.fund_codes(desc)[:300]), n)
        if lname == "strategycodes":
            return self.unique(lambda: self.pick(w.strategy_codes()), n)
        if lname == "serviceaccountidlist":
            subs = [s["account_id"] for s in w.user(self.user_id()).sub_accounts]
            return subs[: max(lo, min(hi, len(subs)))]
        if lname == "thresholdlist":
            if self.chosen.get("operator") == "between" or (n == 2 and "operator" not in self.chosen):
                return [0.2, 0.6][: max(lo, min(hi, 2))]
            return [0.3]
        if lname == "holdings":
            codes = self.unique(lambda: self.pick(w.fund_codes()[:300]), max(lo, 2))
            weights = [round(1 / len(codes), 4)] * len(codes)
            weights[-1] = round(1 - sum(weights[:-1]), 4)
            return [{"fundCode": c, "weight": wt} for c, wt in zip(codes, weights, strict=True)]
        out = [self.value(_singular(name), items, name) for _ in range(n)]
        if items.get("type") == "object" and any("fundCode" in o for o in out if isinstance(o, dict)):
            codes = self.unique(lambda: self.pick(w.fund_codes()[:300]), len(out))
            for o, code in zip(out, codes, strict=True):
                o["fundCode"] = code
        return out

    def unique(self, draw, n: int) -> list[Any]:
        out: list[Any] = []
        for _ in range(n * 10):
            x = draw()
            if x not in out:
                out.append(x)
            if len(out) == n:
                break
        return out

    def obj(self, name: str, schema: dict[str, Any]) -> dict[str, Any]:
        props = schema.get("properties") or {}
        if name == "weights" and props:
            keys = list(props)[:3]
            return {k: wt for k, wt in zip(keys, (0.2, 0.5, 0.3), strict=True)}
        required = list(schema.get("required") or [])
        return {k: self.value(k, props[k], name) for k in props if k in required or self.keep_optional(k)}

    def keep_optional(self, name: str) -> bool:
        if self.variant == 1:
            return True
        if self.variant == 0:
            return False
        return self.rng.random() < 0.5


def _singular(name: str) -> str:
    return name[:-1] if name.endswith("s") and len(name) > 3 else name


def _natural(name: str, desc: str) -> bool:
    """Optional top-level parameters a natural call sets: instruments and date ranges."""
    lname = name.lower()
    if lname in (
        "symbol",
        "symbols",
        "stock",
        "ticker",
        "fund",
        "code",
        "fundcode",
        "strategycode",
        "pocode",
    ):
        return "One of:" not in desc
    if lname in ("option", "html"):  # the payload of the render tools: optional in the schema, needed in fact
        return True
    return bool(re.search(r"date|^start$|^end$", lname)) and not re.search(r"offset|paging", desc, re.I)


def example_arguments(spec: ToolSpec, world: World, rng_seed: int = 0, variant: int = 0) -> dict[str, Any]:
    """Valid arguments for ``spec`` (see the module docstring for what each ``variant`` includes)."""
    gen = _Gen(spec, world, rng_for(rng_seed, "example_args", spec.name, variant), variant)
    schema = spec.input_schema
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    chosen_names = []
    for name, prop in props.items():
        desc = str(prop.get("description") or "")
        if (
            name in required
            or (variant == 0 and _natural(name, desc))
            or (variant != 0 and gen.keep_optional(name))
        ):
            chosen_names.append(name)
    # skip parameters the description says not to combine with a chosen one
    for name in list(chosen_names):
        desc = str(props[name].get("description") or "")
        for other in re.findall(r"[Dd]o not combine with (\w+)", desc):
            if other in chosen_names and other not in required:
                chosen_names.remove(other)
    # entity parents first (userId before its accounts, operator before thresholds, fundCode before ids)
    order = sorted(chosen_names, key=lambda n: 0 if n in ("userId", "operator", "fundCode") else 1)
    out: dict[str, Any] = {}
    for name in order:
        out[name] = gen.value(name, props[name])
        gen.chosen[name] = out[name]
    return {name: out[name] for name in props if name in out}
