"""Builders for the planning tools: asset-allocation plans, composite models and the CFP calculators.

``GetAssetAllocationPlan`` snaps the request to the world's plan grid and returns an id
(``AAP`` + 6 digits) that ``GetCompositeModel`` turns into funds; the class weights of both agree.
A plan id that is not ``AAP`` + 6 digits is a :class:`ToolInputError`; a well-formed id the world never
issues answers an empty ``assetClasses`` list.

The CFP calculators (``Analyze*``) are pure functions of their arguments, with no world data, and
every figure can be recomputed by hand from the formulas in each builder's docstring. Amounts are
yuan rounded to 2 decimals, ratios fractions rounded to 4. Negative amounts, unknown item keys and
impossible inputs (an age band that ends before it starts, a birth date in the future) are
``ToolInputError`` naming the field.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any

from finmcp.server.sim.qieman.common import band_text
from finmcp.server.sim.qieman.strategies import pct, tidy
from finmcp.server.sim.registry import BuildContext, ToolInputError, qieman_builder
from finmcp.server.world.rng import money, ratio

# the schema's horizon codes -> the world's plan horizons
HORIZONS = {
    "spare": "未指定",
    "oneYear": "1年以内",
    "oneToThree": "1-3年",
    "threeToFive": "3-5年",
    "overFive": "5年以上",
}
_PLAN_ID_RE = re.compile(r"^AAP\d{6}$")
_DAY_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_AGE_TEXT_RE = re.compile(r"(\d{1,3})")
MAX_PROJECTION_AGE = 120


# ------------------------------------------------------------------ small input helpers
def yuan(amount: float) -> str:
    """An amount for prose: 2 decimals at most, no exponent, trailing zeros dropped (2500000, 11666.67)."""
    text = f"{money(amount):.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def _number(value: Any, where: str, minimum: float | None = 0.0) -> float:
    """A finite number (not bool), at least ``minimum`` when given."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise ToolInputError(f"{where} must be a number, got {value!r}")
    if minimum is not None and value < minimum:
        raise ToolInputError(f"{where} must be >= {minimum:g}, got {value!r}")
    return float(value)


def _items(args: dict[str, Any], field: str, labels: dict[str, str], tool: str) -> list[tuple[str, float]]:
    """(label, amount) for each known key of the object argument ``field``, in the labels' order."""
    obj = args.get(field)
    if not isinstance(obj, dict):
        raise ToolInputError(f"{tool}: {field} must be an object, got {obj!r}")
    unknown = sorted(set(obj) - set(labels))
    if unknown:
        raise ToolInputError(f"{tool}: {field} has unknown keys {unknown}; expected some of {list(labels)}")
    return [(labels[k], _number(obj[k], f"{tool}: {field}.{k}")) for k in labels if k in obj]


def _breakdown(items: list[tuple[str, float]], total: float, key: str) -> list[dict[str, Any]]:
    return [
        {key: label, "amount": money(amount), "ratio": ratio(amount / total) if total > 0 else 0.0}
        for label, amount in items
    ]


def _objects(args: dict[str, Any], field: str, tool: str) -> list[dict[str, Any]]:
    value = args.get(field)
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise ToolInputError(f"{tool}: {field} must be an array of objects, got {value!r}")
    return value


# ------------------------------------------------------------------ allocation plans
@qieman_builder("GetAssetAllocationPlan")
def asset_allocation_plan(ctx: BuildContext, args: dict[str, Any]) -> dict[str, Any]:
    """An allocation plan for a target return / drawdown / horizon; the return target drives when given."""
    tool = "GetAssetAllocationPlan"
    expected_return = args.get("expectedAnnualizedReturnRate")
    drawdown = args.get("expectedDrawdown")
    horizon_code = args.get("expectedInvestTime")
    for name, val in (("expectedAnnualizedReturnRate", expected_return), ("expectedDrawdown", drawdown)):
        if val is not None:
            _number(val, f"{tool}: {name}")
    if horizon_code is not None and horizon_code not in HORIZONS:
        raise ToolInputError(
            f"{tool}: expectedInvestTime {horizon_code!r} unknown; expected one of {list(HORIZONS)}"
        )
    try:
        horizon = HORIZONS[horizon_code] if horizon_code is not None else None
        plan = ctx.world.asset_allocation_plan(expected_return, drawdown, horizon)
    except ValueError as exc:
        raise ToolInputError(f"{tool}: {exc}") from None
    cell = plan["corrected"]
    basis = cell["basis"]
    weights = [(cls, w) for cls, w in plan["weights"].items() if w > 0]
    allocation = "，".join(f"{cls}{pct(w)}" for cls, w in weights)
    description = (
        f"以预期{'年化收益率' if basis == '收益率' else '最大回撤'}为主要依据修正其余目标："
        f"投资期限{cell['horizon']}，预期年化收益率{pct(cell['return'])}，预期回撤{pct(cell['drawdown'])}；"
        f"按修正后的目标得到资产配置：{allocation}。资产计划ID：{plan['plan_id']}。"
    )
    return tidy(
        {
            "assetPlanId": plan["plan_id"],
            "description": description,
            "correctedParams": {
                "expectedAnnualizedReturnRate": cell["return"],
                "expectedDrawdown": cell["drawdown"],
                "expectedInvestTime": horizon_code,
                "correctionBasis": basis,
            },
            "assetAllocation": [{"assetClass": cls, "ratio": w} for cls, w in weights],
        }
    )


@qieman_builder("GetCompositeModel")
def composite_model(ctx: BuildContext, args: dict[str, Any]) -> dict[str, Any]:
    """The funds realising a plan, per asset class (heaviest class first); weights of the whole plan."""
    plan_id = args.get("assetPlanId")
    if not isinstance(plan_id, str) or not _PLAN_ID_RE.match(plan_id.strip()):
        raise ToolInputError(
            f"GetCompositeModel: assetPlanId {plan_id!r} is not 'AAP' + 6 digits (e.g. AAP000117)"
        )
    plan_id = plan_id.strip()
    model = ctx.world.composite_model(plan_id)
    if model is None:
        return {"assetPlanId": plan_id, "assetClasses": []}
    classes = sorted(model["classes"], key=lambda c: -c["weight"])
    return tidy(
        {
            "assetPlanId": plan_id,
            "riskLevel": model["risk_level"],
            "riskLevelName": model["risk_name"],
            "assetClasses": [
                {
                    "assetClass": c["asset_class"],
                    "ratio": c["weight"],
                    "funds": [
                        {"fundCode": f["fund_code"], "fundName": f["fund_name"], "ratio": f["weight"]}
                        for f in sorted(c["funds"], key=lambda f: (-f["weight"], f["fund_code"]))
                    ],
                }
                for c in classes
            ],
        }
    )


# ------------------------------------------------------------------ investment performance
def _scheme(obj: Any, field: str, default_type: str) -> dict[str, Any]:
    where = f"AnalyzeInvestmentPerformance: {field}"
    if not isinstance(obj, dict):
        raise ToolInputError(f"{where} must be an object, got {obj!r}")
    label = obj.get("type", default_type)
    if not isinstance(label, str) or not label:
        raise ToolInputError(f"{where}.type must be a non-empty string, got {label!r}")
    amount = obj.get("investmentAmount")
    annual = obj.get("annualReturn")
    if amount is None or annual is None:
        raise ToolInputError(f"{where} needs investmentAmount and annualReturn")
    return {
        "type": label,
        "investmentAmount": _number(amount, f"{where}.investmentAmount"),
        "annualReturn": _number(annual, f"{where}.annualReturn", minimum=None),
    }


@qieman_builder("AnalyzeInvestmentPerformance")
def investment_performance(ctx: BuildContext, args: dict[str, Any]) -> dict[str, Any]:
    """Amount-weighted return of the schemes against the expected return.

    weight_i = amount_i / sum(amounts); weightedReturnRate = sum(weight_i * annualReturn_i). The plan
    meets expectations (符合预期) when the weighted return reaches expectedReturnRate and the schemes do
    not invest more than totalInvestableAssets.
    """
    tool = "AnalyzeInvestmentPerformance"
    total = _number(args.get("totalInvestableAssets"), f"{tool}: totalInvestableAssets")
    if total <= 0:
        raise ToolInputError(
            f"{tool}: totalInvestableAssets must be > 0, got {args.get('totalInvestableAssets')!r}"
        )
    expected = _number(args.get("expectedReturnRate", 0.04), f"{tool}: expectedReturnRate", minimum=None)
    schemes = [_scheme(args.get("shortMediumTermScheme"), "shortMediumTermScheme", "中短期配置方案")]
    has_long = args.get("mediumLongTermScheme") is not None
    if has_long:
        schemes.append(_scheme(args["mediumLongTermScheme"], "mediumLongTermScheme", "中长期配置方案"))
    invested = sum(s["investmentAmount"] for s in schemes)
    if invested <= 0:
        raise ToolInputError(f"{tool}: the schemes' investmentAmount sum to 0; nothing to weight")
    weighted = round(sum(s["investmentAmount"] * s["annualReturn"] for s in schemes) / invested, 4)
    for s in schemes:
        s["weight"] = ratio(s["investmentAmount"] / invested)
    problems = []
    if weighted < expected:
        problems.append(f"加权年化收益率{pct(weighted)}低于预期收益率{pct(expected)}")
    if invested > total + 0.005:
        problems.append(f"方案投入合计{yuan(invested)}元超过可投资资产{yuan(total)}元")
    if problems:
        status = "不符合预期"
        conclusion = "投资规划方案不符合预期：" + "；".join(problems) + "，建议调整各方案金额或收益预期"
    else:
        status = "符合预期"
        conclusion = "投资规划方案符合预期，能够满足流动性和资产增值需求"
        if not has_long:
            conclusion += "；目前仅有中短期方案，可考虑补充中长期配置以提升长期收益"
    return tidy(
        {
            "totalInvestableAssets": args.get("totalInvestableAssets"),
            "expectedReturnRate": args.get("expectedReturnRate", 0.04),
            "weightedReturnRate": weighted,
            "schemeAnalysis": schemes,
            "feasibilityStatus": status,
            "feasibilityConclusion": conclusion,
            "hasMediumLongTermScheme": has_long,
        }
    )


# ------------------------------------------------------------------ family members
_CHILD_ROLES = ("子女", "儿子", "女儿", "孩子", "子", "女")
_SPOUSE_ROLES = ("配偶", "妻子", "丈夫", "老婆", "老公", "爱人")


def _age_on(birth: date, today: date) -> int:
    return today.year - birth.year - ((today.month, today.day) < (birth.month, birth.day))


def _member_age(member: dict[str, Any], i: int, today: date) -> int | None:
    where = f"AnalyzeFamilyMembers: familyMembers[{i}]"
    birth = member.get("birthDate")
    if birth not in (None, ""):
        if not isinstance(birth, str) or not _DAY_RE.match(birth):
            raise ToolInputError(f"{where}.birthDate must be YYYY-MM-DD, got {birth!r}")
        try:
            day = date.fromisoformat(birth)
        except ValueError:
            raise ToolInputError(f"{where}.birthDate {birth!r} is not a calendar date") from None
        if day > today:
            raise ToolInputError(f"{where}.birthDate {birth} is after today ({today})")
        return _age_on(day, today)
    text = member.get("ageDescription")
    if isinstance(text, str) and (m := _AGE_TEXT_RE.search(text)):
        return int(m.group(1))
    return None


def age_group(age: int | None) -> str | None:
    """未成年 (<18), 青年 (18-34), 中年 (35-59), 老年 (60+)."""
    if age is None:
        return None
    return "未成年" if age < 18 else "青年" if age < 35 else "中年" if age < 60 else "老年"


def _is_child(role: str) -> bool:
    return role in _CHILD_ROLES or any(role.startswith(r) for r in ("儿", "女儿", "子女", "孙"))


def life_cycle_stage(members: list[dict[str, Any]]) -> str:
    """Family life-cycle stage from the user's age, a spouse and the children's ages.

    家庭衰老期: the user is 60+; 家庭成长期: a child under 18 (or of unknown age); 家庭成熟期: children,
    all adults; 家庭形成期: a spouse, no children; 单身期 otherwise.
    """
    head = next((m for m in members if m["role"] == "本人"), members[0])
    children = [m for m in members if _is_child(m["role"])]
    if head["age"] is not None and head["age"] >= 60:
        return "家庭衰老期"
    if any(c["age"] is None or c["age"] < 18 for c in children):
        return "家庭成长期"
    if children:
        return "家庭成熟期"
    if any(m["role"] in _SPOUSE_ROLES for m in members):
        return "家庭形成期"
    return "单身期"


@qieman_builder("AnalyzeFamilyMembers")
def family_members(ctx: BuildContext, args: dict[str, Any]) -> dict[str, Any]:
    """Ages (as of the world's today), head counts by age and the family life-cycle stage."""
    tool = "AnalyzeFamilyMembers"
    raw = _objects(args, "familyMembers", tool)
    if not raw:
        raise ToolInputError(f"{tool}: familyMembers is empty")
    members: list[dict[str, Any]] = []
    for i, m in enumerate(raw):
        role = m.get("role")
        if not isinstance(role, str) or not role.strip():
            raise ToolInputError(f"{tool}: familyMembers[{i}].role must be a non-empty string, got {role!r}")
        age = _member_age(m, i, ctx.world.as_of)
        members.append({"role": role.strip(), "name": m.get("name"), "age": age, "ageGroup": age_group(age)})
    known = [m["age"] for m in members if m["age"] is not None]
    adults = sum(a >= 18 for a in known)
    minors = sum(a < 18 for a in known)
    seniors = sum(a >= 60 for a in known)
    stage = life_cycle_stage(members)
    summary = f"家庭共{len(members)}人，其中成年人{adults}人、未成年人{minors}人、60岁及以上{seniors}人"
    if len(known) < len(members):
        summary += f"，{len(members) - len(known)}人年龄未知"
    summary += f"；处于{stage}。"
    return {
        "totalMembers": len(members),
        "adultCount": adults,
        "minorCount": minors,
        "seniorCount": seniors,
        "lifeCycleStage": stage,
        "members": members,
        "summary": summary,
    }


# ------------------------------------------------------------------ income and expense
INCOME_LABELS = {
    "salary": "工资薪金",
    "bonus": "奖金",
    "rentalIncome": "租金收入",
    "investmentIncome": "投资收益",
    "businessIncome": "经营收入",
    "housingFundWithdrawal": "公积金提取",
    "otherIncome": "其他收入",
}
EXPENSE_LABELS = {
    "dailyExpenses": "日常生活支出",
    "utilityBills": "水电燃气费",
    "transportation": "交通支出",
    "mortgagePayment": "房贷还款",
    "carLoanPayment": "车贷还款",
    "parkingLoanPayment": "车位贷还款",
    "insurancePremium": "保险保费",
    "educationExpenses": "教育支出",
    "medicalExpenses": "医疗支出",
    "travelExpenses": "旅游支出",
    "otherExpenses": "其他支出",
}
# spending a household cannot cut at short notice (used for the emergency fund)
ESSENTIAL_EXPENSES = frozenset(EXPENSE_LABELS) - {"travelExpenses", "otherExpenses"}


_SAVINGS_BANDS = (
    (0, "收不抵支，需压缩开支或增加收入"),
    (0.1, "结余比率偏低，储蓄能力较弱"),
    (0.3, "结余比率尚可，仍有提升空间"),
)


def savings_verdict(rate: float) -> str:
    """Plain-language reading of a savings rate (healthy at 30% or more)."""
    return band_text(rate, _SAVINGS_BANDS, "结余比率健康，储蓄能力较强")


@qieman_builder("AnalyzeIncomeExpense")
def income_expense(ctx: BuildContext, args: dict[str, Any]) -> dict[str, Any]:
    """Totals, surplus, savings rate (surplus / income) and monthly essential spending.

    Essential spending is every expense except travel and other expenses, divided by 12.
    """
    tool = "AnalyzeIncomeExpense"
    incomes = _items(args, "annualIncome", INCOME_LABELS, tool)
    expenses = _items(args, "annualExpense", EXPENSE_LABELS, tool)
    income = sum(a for _, a in incomes)
    expense = sum(a for _, a in expenses)
    surplus = income - expense
    rate = ratio(surplus / income) if income > 0 else 0.0
    obj = args["annualExpense"]
    essential = sum(float(obj[k]) for k in ESSENTIAL_EXPENSES if k in obj) / 12
    if income > 0:
        summary = f"年收入{yuan(income)}元，年支出{yuan(expense)}元，年结余{yuan(surplus)}元，"
        summary += f"结余比率{pct(rate)}：{savings_verdict(rate)}。"
    else:
        summary = f"年收入为0，年支出{yuan(expense)}元，结余比率无法计算（记为0）。"
    return tidy(
        {
            "totalIncome": money(income),
            "totalExpense": money(expense),
            "annualSurplus": money(surplus),
            "savingsRate": rate,
            "monthlyEssentialExpense": money(essential),
            "incomeBreakdown": _breakdown(incomes, income, "item"),
            "expenseBreakdown": _breakdown(expenses, expense, "item"),
            "summary": summary,
        }
    )


# ------------------------------------------------------------------ assets and liabilities
ASSET_LABELS = {
    "liquidAssets": "流动性资产",
    "investmentAssets": "投资性资产",
    "personalUseAssets": "自用性资产",
}
LIABILITY_LABELS = {
    "currentLiabilities": "流动负债",
    "investmentLiabilities": "投资性负债",
    "personalUseLiabilities": "自用性负债",
}


@qieman_builder("AnalyzeAssetLiability")
def asset_liability(ctx: BuildContext, args: dict[str, Any]) -> dict[str, Any]:
    """Net worth (assets - liabilities) and debt ratio (liabilities / assets; healthy below 50%)."""
    tool = "AnalyzeAssetLiability"
    assets = _items(args, "totalAssets", ASSET_LABELS, tool)
    liabilities = _items(args, "totalLiabilities", LIABILITY_LABELS, tool)
    total_a = sum(a for _, a in assets)
    total_l = sum(a for _, a in liabilities)
    if total_a <= 0 and total_l > 0:
        raise ToolInputError(
            f"{tool}: totalAssets sum to 0 while liabilities are {total_l:g}; debt ratio undefined"
        )
    debt = ratio(total_l / total_a) if total_a > 0 else 0.0
    if debt > 0.5:
        verdict = "资产负债率偏高，偿债压力较大，应优先降低负债"
    elif debt > 0.3:
        verdict = "资产负债率处于合理区间"
    else:
        verdict = "资产负债率较低，财务结构稳健"
    net = total_a - total_l
    summary = f"总资产{yuan(total_a)}元，总负债{yuan(total_l)}元，净资产{yuan(net)}元，"
    summary += f"资产负债率{pct(debt)}：{verdict}。"
    return tidy(
        {
            "totalAssets": money(total_a),
            "totalLiabilities": money(total_l),
            "netWorth": money(net),
            "debtRatio": debt,
            "assetBreakdown": _breakdown(assets, total_a, "category"),
            "liabilityBreakdown": _breakdown(liabilities, total_l, "category"),
            "summary": summary,
        }
    )


# ------------------------------------------------------------------ financial indicators
_INDICATOR_FIELDS = (
    "totalAssets",
    "totalLiabilities",
    "liquidAssets",
    "currentLiabilities",
    "investmentAssets",
    "investmentLiabilities",
    "annualIncome",
    "annualExpense",
    "annualInvestmentIncome",
    "monthlyEssentialExpense",
)


def _indicator(
    name: str, value: float | None, healthy: str, low: float | None, high: float | None, meaning: str
) -> dict[str, Any]:
    """One ratio with its verdict: 偏低 below ``low``, 偏高 above ``high``, else 健康."""
    if value is None:
        status = "无法计算"
    elif low is not None and value < low:
        status = "偏低"
    elif high is not None and value > high:
        status = "偏高"
    else:
        status = "健康"
    shown = None if value is None else round(value, 4)
    return {"name": name, "value": shown, "healthyRange": healthy, "status": status, "description": meaning}


def _div(a: float, b: float) -> float | None:
    return a / b if b > 0 else None


@qieman_builder("AnalyzeFinancialIndicators")
def financial_indicators(ctx: BuildContext, args: dict[str, Any]) -> dict[str, Any]:
    """Seven household ratios with healthy ranges.

    资产负债率 = liabilities / assets (<50%); 清偿比率 = net worth / assets (>50%); 结余比率 =
    (income - expense) / income (>30%); 紧急备用金月数 (流动性比率) = liquid assets / monthly essential
    expense (3-6); 流动比率 = liquid assets / current liabilities (>=2); 投资与净资产比率 = investment
    assets / net worth (>=50%); 财务自由度 = investment income / expense (>=100% means free).
    A ratio with a zero denominator is null (无法计算); parts larger than their totals are computed as
    given and flagged in the summary.
    """
    tool = "AnalyzeFinancialIndicators"
    v = {f: _number(args.get(f), f"{tool}: {f}") for f in _INDICATOR_FIELDS}
    notes = []  # contradictory inputs are computed as given, and flagged in the summary
    if v["liquidAssets"] + v["investmentAssets"] > v["totalAssets"] + 0.005:
        notes.append("流动性资产与投资性资产之和超过总资产")
    if v["currentLiabilities"] + v["investmentLiabilities"] > v["totalLiabilities"] + 0.005:
        notes.append("流动负债与投资性负债之和超过总负债")
    net = v["totalAssets"] - v["totalLiabilities"]
    months = _div(v["liquidAssets"], v["monthlyEssentialExpense"])
    indicators = [
        _indicator(
            "资产负债率",
            _div(v["totalLiabilities"], v["totalAssets"]),
            "<50%",
            None,
            0.5,
            "负债占总资产的比例，越高偿债压力越大",
        ),
        _indicator(
            "清偿比率",
            _div(net, v["totalAssets"]),
            ">50%",
            0.5,
            None,
            "净资产占总资产的比例，反映综合偿债能力",
        ),
        _indicator(
            "结余比率",
            _div(v["annualIncome"] - v["annualExpense"], v["annualIncome"]),
            ">30%",
            0.3,
            None,
            "年结余占年收入的比例，反映储蓄和积累能力",
        ),
        _indicator(
            "紧急备用金月数",
            months,
            "3-6个月",
            3.0,
            6.0,
            "流动性资产可覆盖的必要支出月数（流动性比率），过低应急不足，过高则资金闲置",
        ),
        _indicator(
            "流动比率",
            _div(v["liquidAssets"], v["currentLiabilities"]),
            ">=2",
            2.0,
            None,
            "流动性资产对短期负债的覆盖倍数，反映短期偿债能力",
        ),
        _indicator(
            "投资与净资产比率",
            _div(v["investmentAssets"], net),
            ">=50%",
            0.5,
            None,
            "投资性资产占净资产的比例，反映通过投资增值的能力",
        ),
        _indicator(
            "财务自由度",
            _div(v["annualInvestmentIncome"], v["annualExpense"]),
            ">=100%为财务自由",
            1.0,
            None,
            "投资收入对年支出的覆盖程度，达到100%即可仅靠投资收入维持开支",
        ),
    ]
    weak = [i["name"] for i in indicators if i["status"] in ("偏低", "偏高")]
    summary = f"净资产{yuan(net)}元"
    if v["investmentAssets"] > 0:
        summary += f"，投资负债占投资资产{pct(v['investmentLiabilities'] / v['investmentAssets'])}"
    summary += "；" + (f"需关注：{'、'.join(weak)}。" if weak else "各项指标均在健康区间。")
    if notes:
        summary += f"注意：{'；'.join(notes)}，请核对输入。"
    return tidy({"indicators": indicators, "summary": summary})


# ------------------------------------------------------------------ cash flow projection
def _age_field(val: Any, where: str, name: str) -> int:
    if isinstance(val, bool) or not isinstance(val, int) or val < 0:
        raise ToolInputError(f"{where}.{name} must be an integer >= 0, got {val!r}")
    return val


def _band(item: dict[str, Any], i: int, field: str, tool: str, need_end: bool) -> tuple[int, int]:
    where = f"{tool}: {field}[{i}]"
    start = _age_field(item.get("startAge"), where, "startAge")
    end = _age_field(item.get("endAge", None if need_end else start), where, "endAge")
    if end < start:
        raise ToolInputError(f"{where}: endAge {end} is before startAge {start}")
    if end > MAX_PROJECTION_AGE:
        raise ToolInputError(f"{where}: endAge {end} is beyond {MAX_PROJECTION_AGE}")
    return start, end


@qieman_builder("AnalyzeCashFlow")
def cash_flow(ctx: BuildContext, args: dict[str, Any]) -> dict[str, Any]:
    """Year-by-year projection of investable assets by the user's age (本人, else the first member).

    From the user's age to the last age any item or return band mentions, each year:
    income = sum of recurring incomes active that year, each ``amount * (1 + growthRate) ** n`` where n
    counts the years since it began (or since today, if it began already), plus one-off incomes at their
    startAge; expense likewise with inflationRate; investmentReturn = assets at the start of the year *
    the rate of the return band covering that age (0 outside every band, and on a negative balance);
    netCashFlow = income + investmentReturn - expense; assets at year end = start + netCashFlow.
    depletionAge is the first age whose year-end assets are negative.
    """
    tool = "AnalyzeCashFlow"
    assets = _number(args.get("currentInvestableAssets"), f"{tool}: currentInvestableAssets")
    members = _objects(args, "familyMembers", tool)
    if not members:
        raise ToolInputError(f"{tool}: familyMembers is empty; the projection runs on the user's age")
    head = next((m for m in members if m.get("role") == "本人"), members[0])
    age0 = head.get("initialAge")
    if isinstance(age0, bool) or not isinstance(age0, int) or not 0 <= age0 <= MAX_PROJECTION_AGE:
        raise ToolInputError(
            f"{tool}: familyMembers initialAge of {head.get('role')!r} must be 0-120, got {age0!r}"
        )
    bands = []
    for i, b in enumerate(_objects(args, "returnRateConfig", tool)):
        start, end = _band(b, i, "returnRateConfig", tool, need_end=True)
        bands.append(
            (start, end, _number(b.get("rate"), f"{tool}: returnRateConfig[{i}].rate", minimum=None))
        )
    flows: list[tuple[int, int, float, float, bool, bool]] = []  # start, end, amount, growth, income?, once?
    for field, is_income, once, rate_key in (
        ("continuousIncome", True, False, "growthRate"),
        ("continuousExpenses", False, False, "inflationRate"),
        ("oneTimeIncome", True, True, None),
        ("oneTimeExpenses", False, True, None),
    ):
        for i, item in enumerate(_objects(args, field, tool)):
            start, end = _band(item, i, field, tool, need_end=not once)
            amount = _number(item.get("amount"), f"{tool}: {field}[{i}].amount")
            growth = 0.0
            if rate_key and item.get(rate_key) is not None:
                growth = _number(item[rate_key], f"{tool}: {field}[{i}].{rate_key}", minimum=-1.0)
            flows.append((start, start if once else end, amount, growth, is_income, once))
    last = max([age0] + [b[1] for b in bands] + [f[1] for f in flows])
    projection, depletion = [], None
    for age in range(age0, last + 1):
        income = expense = 0.0
        for start, end, amount, growth, is_income, _once in flows:
            if start <= age <= end:
                value = amount * (1.0 + growth) ** (age - max(start, age0))
                if is_income:
                    income += value
                else:
                    expense += value
        rate = next((r for s, e, r in bands if s <= age <= e), 0.0)
        gain = assets * rate if assets > 0 else 0.0
        net = income + gain - expense
        assets += net
        if depletion is None and assets < 0:
            depletion = age
        projection.append(
            {
                "age": age,
                "year": ctx.world.as_of.year + (age - age0),
                "income": money(income),
                "expense": money(expense),
                "investmentReturn": money(gain),
                "netCashFlow": money(net),
                "investableAssets": money(assets),
            }
        )
    if depletion is None:
        summary = f"按当前规划，至{last}岁可投资资产为{yuan(assets)}元，资金可以覆盖全部支出。"
    else:
        summary = f"按当前规划，可投资资产将在{depletion}岁耗尽，需增加收入、降低支出或提高投资收益。"
    return tidy(
        {
            "projection": projection,
            "depletionAge": depletion,
            "finalAssets": money(assets),
            "summary": summary,
        }
    )
