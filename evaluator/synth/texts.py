"""Query clauses per tool (Chinese and English), filled with the sample's world entities.

``intro`` names its entities (a chain's first step, a single-tool query); ``follow`` refers back to
what an earlier step found ("these funds"). Wording is finmcp's own.
"""

from __future__ import annotations

from typing import Any

from finmcp.evaluator.synth.context import NEWS_KEYWORDS_EN, SampleContext

HORIZON_ZH = {"oneYear": "1年以内", "oneToThree": "1到3年", "threeToFive": "3到5年", "overFive": "5年以上"}
HORIZON_EN = {
    "oneYear": "up to a year",
    "oneToThree": "one to three years",
    "threeToFive": "three to five years",
    "overFive": "over five years",
}

# tool: (zh intro, zh follow, en intro, en follow)
CLAUSES: dict[str, tuple[str, str, str, str]] = {
    "GetCurrentTime": (
        "现在是几点、今天星期几",
        "确认一下当前时间",
        "what the time and weekday are right now",
        "check the current time",
    ),
    "GetTxnDayRange": (
        "{fund}最近和接下来的交易日是哪几天",
        "这只基金前后几个交易日的安排",
        "which trading days come before and after today for {fund}",
        "the trading days around today for that fund",
    ),
    "SearchFunds": (
        "搜一下和{fund_kw}有关的基金",
        "找找相关的基金",
        "search for funds related to {fund_kw}",
        "find related funds",
    ),
    "GuessFundCode": (
        "{fund_name}的基金代码是多少",
        "确认这只基金的代码",
        "what the fund code of {fund_name} is",
        "confirm the fund's code",
    ),
    "GetPopularFund": (
        "平台上最近热门的基金有哪些",
        "看看热门基金",
        "which funds are popular on the platform right now",
        "look at the popular funds",
    ),
    "BatchGetFundsDetail": (
        "介绍一下{funds}的基本情况",
        "看看这些基金的详细信息",
        "give me the basic facts of {funds}",
        "show the details of those funds",
    ),
    "BatchGetFundNavHistory": (
        "{funds}最近的净值走势怎么样",
        "查一下它们的历史净值",
        "how the NAV of {funds} has moved lately",
        "pull their NAV history",
    ),
    "GetBatchFundPerformance": (
        "{funds}的业绩表现如何",
        "比较一下它们的业绩",
        "how {funds} have performed",
        "compare their performance",
    ),
    "BatchGetFundsHolding": (
        "{funds}都持有哪些股票和债券",
        "看看它们的持仓明细",
        "what stocks and bonds {funds} hold",
        "show their holdings",
    ),
    "BatchGetFundsHolderInfo": (
        "{funds}的持有人结构是怎样的",
        "看看它们的持有人结构",
        "who holds {funds} (institutions vs individuals)",
        "show their holder structure",
    ),
    "BatchGetFundsFeeRule": (
        "{funds}的申购费和赎回费是多少",
        "查一下它们的费率",
        "what the purchase and redemption fees of {funds} are",
        "check their fees",
    ),
    "BatchGetFundTradeRules": (
        "{funds}的申购赎回规则是什么",
        "看看它们的交易规则",
        "what the buy and redeem rules of {funds} are",
        "check their trading rules",
    ),
    "BatchGetFundTradeLimit": (
        "{funds}现在能不能申购、定投有没有限额",
        "看看它们能否申购和定投",
        "whether {funds} can be bought now and any investment limits",
        "check whether they can be bought or auto-invested",
    ),
    "BatchGetFundsSplitHistory": (
        "{funds}有没有做过份额拆分",
        "查查它们的拆分记录",
        "whether {funds} ever split their shares",
        "check their split history",
    ),
    "BatchGetFundsDividendRecord": (
        "{funds}历史上分过几次红",
        "看看它们的分红记录",
        "how often {funds} have paid dividends",
        "check their dividend records",
    ),
    "GetFundAnnouncements": (
        "{funds}最近发了哪些公告",
        "找找它们最近的公告",
        "what announcements {funds} published recently",
        "find their recent announcements",
    ),
    "GetAnnouncementContent": (
        "{fund}最新公告的具体内容",
        "打开公告看看具体内容",
        "the full text of the latest announcement of {fund}",
        "open the announcement and read it",
    ),
    "GetFundDiagnosis": (
        "帮我诊断一下{fund_name}",
        "对它做个基金诊断",
        "diagnose {fund_name} for me",
        "run a fund diagnosis on it",
    ),
    "AnalyzeFundRisk": (
        "分析一下{funds}的风险",
        "评估一下它们的风险",
        "analyse the risk of {funds}",
        "assess their risk",
    ),
    "GetFundAssetClassAnalysis": (
        "按我买的{funds}看看大类资产分布",
        "按这些持仓穿透看大类资产分布",
        "break my holdings in {funds} down by asset class",
        "break those holdings down by asset class",
    ),
    "getFundBenchmarkInfo": (
        "{fund}的业绩比较基准是什么",
        "看看它的业绩基准",
        "what the benchmark of {fund} is",
        "check its benchmark",
    ),
    "getFundBrinsonIndicator": (
        "对{fund}做个Brinson业绩归因",
        "做一下Brinson归因",
        "run a Brinson attribution on {fund}",
        "run a Brinson attribution on it",
    ),
    "getFundCampisiIndicator": (
        "用Campisi模型分析{fund}的债券收益来源",
        "做一下Campisi归因",
        "explain the bond returns of {fund} with the Campisi model",
        "run a Campisi attribution on it",
    ),
    "getFundTurnoverRate": (
        "{fund}的换手率高不高",
        "看看它的换手率",
        "how high the turnover of {fund} is",
        "check its turnover",
    ),
    "fund-equity-position": (
        "{fund}现在的股票仓位是多少",
        "看看它的股票仓位",
        "what the equity position of {fund} is now",
        "check its equity position",
    ),
    "fund-recovery-ability": (
        "{fund}回撤之后修复得快不快",
        "看看它的回撤修复能力",
        "how fast {fund} recovers from drawdowns",
        "check how it recovers from drawdowns",
    ),
    "getMarketTimingIndicator": (
        "{fund}的基金经理择时能力怎么样",
        "评估一下择时能力",
        "how good the manager of {fund} is at market timing",
        "assess the timing ability",
    ),
    "getStockAllocationAndMetricsByFundCode": (
        "{funds}的股票行业配置和估值指标",
        "看看它们的股票配置和估值",
        "the sector allocation and valuation of the stocks in {funds}",
        "look at their stock allocation and valuation",
    ),
    "getQdFundAreaAllocation": (
        "{qdii}投资在哪些国家和地区",
        "看看这些基金的地区分布",
        "which countries and regions {qdii} invests in",
        "show their regional allocation",
    ),
    "GetFundsCorrelation": (
        "{funds}之间的相关性高不高",
        "算算它们之间的相关性",
        "how correlated {funds} are",
        "compute their correlation",
    ),
    "GetFundsBackTest": (
        "用{amount}元买{funds}做个历史回测",
        "按这个组合做一次回测",
        "back-test putting {amount} yuan into {funds}",
        "back-test that portfolio",
    ),
    "DiagnoseFundPortfolio": (
        "诊断一下我用{amount}元买的{funds}这个组合",
        "诊断一下这个组合",
        "diagnose my portfolio of {funds} worth {amount} yuan",
        "diagnose that portfolio",
    ),
    "AnalyzePortfolioRisk": (
        "评估一下{funds}组成的组合风险",
        "分析这个组合的风险",
        "assess the risk of a portfolio made of {funds}",
        "analyse the portfolio risk",
    ),
    "GetAssetAllocation": (
        "我用{amount}元买了{funds}，看看资产配置",
        "看看这个组合的资产配置",
        "show the asset allocation of my {amount} yuan in {funds}",
        "show the portfolio's asset allocation",
    ),
    "MonteCarloSimulate": (
        "按股票{eq}、债券{bd}、现金{cash}的配置做个蒙特卡洛模拟，看看未来5年的收益分布",
        "用蒙特卡洛模拟测算一下未来收益",
        "run a 5-year Monte Carlo simulation of {eq} stocks, {bd} bonds and {cash} cash",
        "simulate future returns with Monte Carlo",
    ),
    "GetPortfolioNavHistory": (
        "{strategy}最近一个月的净值走势",
        "看看它最近一个月的净值",
        "the NAV of {strategy} over the last month",
        "show its NAV over the last month",
    ),
    "StrategySearchByKeyword": (
        "有没有名字里带“{strategy_kw}”的投顾策略",
        "找找相关的策略",
        "are there advisory strategies named like '{strategy_kw}'",
        "find matching strategies",
    ),
    "GetStrategyDetails": (
        "介绍一下{strategy}这个策略",
        "看看这些策略的详情",
        "tell me about the strategy {strategy}",
        "show those strategies' details",
    ),
    "GetStrategyRiskInfo": (
        "{strategy}的风险等级和建议持有期",
        "看看它的风险等级",
        "the risk level and suggested holding period of {strategy}",
        "check its risk level",
    ),
    "BatchGetStrategyRiskInfo": (
        "{strategy}等策略的风险等级",
        "看看这些策略的风险等级",
        "the risk levels of {strategy} and similar strategies",
        "check those strategies' risk levels",
    ),
    "BatchGetStrategiesComposition": (
        "{strategy}里都配了哪些基金",
        "看看这些策略的成分基金",
        "which funds {strategy} holds",
        "list the funds inside those strategies",
    ),
    "BatchGetPoTradeComposition": (
        "{strategy}最新调仓后的持仓构成",
        "看看最新调仓后的持仓",
        "the holdings of {strategy} after its latest rebalance",
        "show the holdings after the latest rebalance",
    ),
    "GetStrategyAssetClassAnalysis": (
        "{strategy}的大类资产配置比例",
        "看看每个策略的大类资产分布",
        "the asset-class split of {strategy}",
        "break each strategy down by asset class",
    ),
    "GetStrategyBenchmark": (
        "{strategy}的业绩基准是什么",
        "看看它的业绩基准",
        "what benchmark {strategy} is measured against",
        "check its benchmark",
    ),
    "GetFundRelatedStrategies": (
        "哪些投顾策略持有{fund}",
        "看看哪些策略持有它",
        "which advisory strategies hold {fund}",
        "find strategies that hold it",
    ),
    "GetAssetAllocationPlan": (
        "我希望年化{ret}、最大回撤不超过{dd}、投资期限{horizon}，给我一个资产配置方案",
        "给出资产配置方案",
        "I want {ret} a year with at most {dd} drawdown over {horizon}; suggest an asset allocation",
        "suggest an asset allocation plan",
    ),
    "GetCompositeModel": (
        "按年化{ret}的配置方案推荐具体的基金组合",
        "按这个方案推荐具体基金",
        "recommend concrete funds for a {ret}-a-year allocation plan",
        "recommend concrete funds for that plan",
    ),
    "AnalyzeInvestmentPerformance": (
        "我有{amount}元可投资，分成中短期和中长期两部分，目标年化{ret}能不能实现",
        "测算一下方案能否达到目标收益",
        "I have {amount} yuan split into short and long-term parts; can I reach {ret} a year",
        "check whether the plan reaches the target return",
    ),
    "AnalyzeFamilyMembers": (
        "分析一下我家{family}口人的家庭结构",
        "分析一下家庭成员情况",
        "analyse my household of {family}",
        "analyse the household members",
    ),
    "AnalyzeIncomeExpense": (
        "我年收入{income}元，帮我分析一下收支结构",
        "分析一下收支情况",
        "my annual income is {income} yuan; analyse my income and spending",
        "analyse income and spending",
    ),
    "AnalyzeAssetLiability": (
        "帮我梳理一下家庭资产负债表",
        "梳理一下资产负债",
        "draw up my household balance sheet",
        "review assets and liabilities",
    ),
    "AnalyzeCashFlow": (
        "帮我做一个到退休的现金流规划",
        "做一个长期现金流规划",
        "plan my cash flow until retirement",
        "make a long-term cash-flow plan",
    ),
    "AnalyzeFinancialIndicators": (
        "算一下我家的各项财务健康指标",
        "算一下财务健康指标",
        "compute my household's financial health ratios",
        "compute the financial health ratios",
    ),
    "SearchFinancialNews": (
        "最近关于{news}有什么新闻",
        "看看相关新闻",
        "what news there is about {news_en} lately",
        "look at related news",
    ),
    "SearchManagerViewpoint": (
        "基金经理们最近对{news}怎么看",
        "看看基金经理的观点",
        "what fund managers think about {news_en} lately",
        "see what managers think",
    ),
    "searchInvestAdvisorContent": (
        "有没有讲{news}的投教文章",
        "找几篇投教文章",
        "any investor-education articles about {news_en}",
        "find some explainer articles",
    ),
    "searchRealtimeAiAnalysis": (
        "帮我解读一下最近{news}的热点",
        "解读一下最新热点",
        "explain the latest hot events around {news_en}",
        "explain the latest hot events",
    ),
    "SearchHotTopic": (
        "今天{news}相关的热门话题有哪些",
        "看看今天的热门话题",
        "today's hot topics around {news_en}",
        "see today's hot topics",
    ),
    "RenderEchart": (
        "把股票{eq}、债券{bd}、现金{cash}的配置画成饼图",
        "把结果画成图表",
        "draw a pie chart of {eq} stocks, {bd} bonds and {cash} cash",
        "draw the result as a chart",
    ),
    "RenderHtmlToPdf": (
        "把我的投资情况生成一份PDF报告",
        "最后生成一份PDF报告",
        "turn my investment summary into a PDF report",
        "finally produce a PDF report",
    ),
    "GetUserAssetView": (
        "看看我账户里都有哪些资产",
        "看看我账户里的资产",
        "show what is in my account",
        "look at my account",
    ),
    "GetUserAssetBrief": (
        "我的总资产和累计收益是多少",
        "看看总资产和收益概况",
        "what my total assets and cumulative profit are",
        "summarise my assets and profit",
    ),
    "GetFundLatestProfit": (
        "我持有的基金昨天赚了多少",
        "看看这些基金最新的收益",
        "how much my funds earned yesterday",
        "check the latest profit of those funds",
    ),
    "GetProfitCalendar": (
        "我最近每天的收益情况",
        "看看收益日历",
        "my daily profit over the last weeks",
        "show the profit calendar",
    ),
    "GetUserAssetHoldingDistribution": (
        "我的持仓在各类资产上是怎么分布的",
        "看看持仓分布",
        "how my holdings are spread across asset classes",
        "show the holding distribution",
    ),
}

CONNECTORS_ZH = ("，然后", "，再", "，并且", "，顺便")
CONNECTORS_EN = (", then ", ", and ", ", and also ")


def slots(ctx: SampleContext) -> dict[str, Any]:
    """Values for the template slots."""
    from finmcp.evaluator.synth.binders import context_allocation

    funds = ctx.funds[:2]
    persona = ctx.persona
    eq, bd, cash = (f"{v:.0%}" for _, v in context_allocation(ctx))
    return {
        "fund": f"{ctx.fund[1]}（{ctx.fund[0]}）",
        "fund_name": ctx.fund[1],
        "funds": "、".join(f"{n}（{c}）" for c, n in funds),
        "qdii": "、".join(n for _, n in ctx.qdii_funds),
        "fund_kw": ctx.fund_keyword,
        "strategy": ctx.strategy[1],
        "strategy_kw": ctx.strategy_keyword,
        "news": ctx.news_keyword,
        "news_en": NEWS_KEYWORDS_EN.get(ctx.news_keyword, ctx.news_keyword),
        "amount": ctx.amount,
        "ret": f"{ctx.target_return:.0%}",
        "dd": f"{ctx.drawdown:.0%}",
        "horizon": HORIZON_ZH[ctx.horizon],
        "income": persona.annual_income if persona else 300000,
        "family": persona.family_size if persona else 3,
        "eq": eq,
        "bd": bd,
        "cash": cash,
    }


def clause(tool: str, ctx: SampleContext, lang: str, follow: bool) -> str:
    """One clause for ``tool`` in ``lang`` ('zh' or 'en')."""
    zh_intro, zh_follow, en_intro, en_follow = CLAUSES[tool]
    values = slots(ctx)
    if lang == "en":
        values = {**values, "horizon": HORIZON_EN[ctx.horizon]}
        values["family"] = f"{values['family']} people"
        return (en_follow if follow else en_intro).format(**values)
    return (zh_follow if follow else zh_intro).format(**values)


OPENERS_ZH = ("", "你好，", "请问", "麻烦")


def compose(parts: list[tuple[str, bool]], ctx: SampleContext, lang: str, connectors: list[int]) -> str:
    """A request from clauses ``(tool, follow)`` joined by the chosen connectors.

    ``connectors[0]`` also picks the Chinese opener (bare, 你好, 请问, 麻烦).
    """
    choice = connectors[0] if connectors else len(parts)
    if lang == "zh":
        text = OPENERS_ZH[choice % len(OPENERS_ZH)] + clause(parts[0][0], ctx, "zh", parts[0][1])
        for (tool, follow), c in zip(parts[1:], connectors, strict=False):
            text += CONNECTORS_ZH[c % len(CONNECTORS_ZH)] + clause(tool, ctx, "zh", follow)
        return text + ("？" if choice % 2 else "。")
    text = "Please help me: " + clause(parts[0][0], ctx, "en", parts[0][1])
    for (tool, follow), c in zip(parts[1:], connectors, strict=False):
        text += CONNECTORS_EN[c % len(CONNECTORS_EN)] + clause(tool, ctx, "en", follow)
    return text + "."


def with_user_id(text: str, ctx: SampleContext, lang: str) -> str:
    """Append the user id the way the official samples do (Chinese) or an English equivalent."""
    if lang == "zh":
        return f"{text}\n当前用户id是{ctx.user_id}"
    return f"{text}\nCurrent user id: {ctx.user_id}"
