"""Concrete output shapes for every FinToolBench tool: source columns where the source names them,
otherwise a family template chosen from the tool's name, source, domain and parameters.

The simulator contract
======================

Every fintool760 tool's ``outputSchema`` is ``{"type": "object", "properties": {"result": R},
"required": ["result"]}`` (``meta["output_wrapped"] = True``). Its ``meta`` says how to fill ``R``:

``output_columns``
    The record's column names, in order (JSON object keys get sorted on the wire; this list does not).
``output_columns_source``
    ``description-table`` / ``description-typed-list`` / ``description-text`` when the names come from
    the source's docstring, ``family:<name>`` for a template below, ``special:<name>`` for a one-off.
``output_shape``
    Where the records sit in ``R``: ``rows`` (``R`` is an array of records: an akshare DataFrame),
    ``rows_object`` (``R`` is an object whose ``output_rows_path`` property holds the array of records:
    finmcp's normalised RapidAPI list bodies), ``record`` (``R`` is one record), ``keyed_rows`` (``R``
    maps a key, named by ``output_keyed_by``, to an array of records: an akshare dict of DataFrames),
    ``values`` (``R`` is an array of scalars described by the single column), ``tuple`` (``R`` is a
    fixed-length array, one item per column) or ``text`` (``R`` is a string).
``output_rows_by``
    How many records to make: ``date_range`` (one per ``output_time_step`` - minute, day, week, month,
    quarter, year; trading days for daily market data - inside the range given by the tool's
    ``date_range`` arguments such as ``start_date``/``end_date``, or a recent window when the call gives
    none), ``list`` (a list of N records) or ``single`` (one record).
``output_entity_columns``
    ``{column: entity type}`` (types from :mod:`tool_specs.entities`) for columns that carry world
    entities. The simulator fills them from the world, consistently with the call: a column whose
    type the tool consumes takes the argument's value (``stock_zh_a_hist(symbol="600519")`` returns
    rows whose ``代码`` is ``600519``); a ``date`` column takes dates inside the argument range (or on
    the argument date); other entity columns take entities of that type from the world, so ids a
    search or list endpoint returns (``company_id``, ``article_id``, symbols) are ones that detail
    endpoints accept.

Column schemas carry a JSON type, a short English description and, for dates, ``format`` (``date`` or
``date-time``; an annotation in JSON Schema 2020-12). Schemas stay permissive: no
``additionalProperties: false``; ``required`` lists only key columns of akshare families whose names
are the library's own, and nothing for RapidAPI records, whose normalised shapes are finmcp's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tool_specs.entities import ENTITY_TYPES, INSTRUMENT_ENTITIES
from tool_specs.fintool_column_vocab import SOURCE_COLUMNS, VOCAB
from tool_specs.fintool_entities import infer_consumes, infer_produces, instrument_entity
from tool_specs.fintool_facts import ToolFacts
from tool_specs.fintool_outputs import Column, OutputInfo, OutputPlan, PlanColumn

_TYPES = {"s": "string", "n": "number", "i": "integer", "b": "boolean", "v": ("string", "number")}
_FORMATS = {"d": "date", "t": "date-time", "": None}


def vocab_column(name: str) -> PlanColumn:
    """The column ``name`` as the vocabulary defines it; raises KeyError naming an unknown column."""
    try:
        entry = VOCAB[name]
    except KeyError:
        raise KeyError(f"column {name!r} is not in the fintool column vocabulary") from None
    code, fmt, description = entry.split("|", 2)
    return PlanColumn(name, _TYPES[code], description, _FORMATS[fmt])


# ============================================================================ families


@dataclass(frozen=True)
class Family:
    """A template: record columns, how records are sized, key columns and entity columns.

    Entity values may be placeholders resolved per tool: ``@code`` (the tool's instrument type),
    ``@contract`` (futures or option contract), ``@id`` (the RapidAPI's id field, a ``company_id``).
    """

    name: str
    columns: tuple[str, ...]
    rows_by: str
    key: tuple[str, ...] = ()
    entities: dict[str, str] = field(default_factory=dict)
    shape: str = "rows"
    rows_path: str | None = None
    time_step: str | None = None


_DEFAULT_ENTITIES = {
    "代码": "@code",
    "symbol": "@code",
    "股票代码": "stock_symbol",
    "证券代码": "stock_symbol",
    "品种代码": "stock_symbol",
    "正股代码": "stock_symbol",
    "基金代码": "fund_code",
    "债券代码": "bond_code",
    "指数代码": "index_symbol",
    "合约": "@contract",
    "合约代码": "@contract",
    "板块名称": "industry",
    "行业名称": "industry",
    "货币对": "currency_pair",
    "日期": "date",
    "净值日期": "date",
    "交易日期": "date",
    "date": "date",
    "datetime": "date",
    "@id": "company_id",
    "contractSymbol": "option_symbol",
}
_TIME_COLUMNS = frozenset({"时间", "timestamp"})


def _family(
    name: str,
    columns: str,
    rows_by: str,
    key: str = "",
    *,
    step: str | None = None,
    shape: str = "rows",
    path: str | None = None,
    entities: dict[str, str] | None = None,
) -> Family:
    cols = tuple(columns.split())
    ents = {c: _DEFAULT_ENTITIES[c] for c in cols if c in _DEFAULT_ENTITIES}
    if rows_by == "date_range" and step == "minute":
        ents.update({c: "date" for c in cols if c in _TIME_COLUMNS})
    ents.update(entities or {})
    return Family(name, cols, rows_by, tuple(key.split()), ents, shape, path, step)


_DAY = {"step": "day"}
_MIN = {"step": "minute"}
_R = "date_range"
_L = "list"
_S = "single"

AKSHARE_FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        # ---------------------------------------------------------------- market data
        _family(
            "quote_hist",
            "日期 代码 开盘 收盘 最高 最低 成交量 成交额 振幅 涨跌幅 涨跌额 换手率",
            _R,
            "日期 收盘",
            **_DAY,
        ),
        _family("ohlcv_daily_en", "date symbol open high low close volume amount", _R, "date close", **_DAY),
        _family("quote_minute", "时间 代码 开盘 收盘 最高 最低 成交量 成交额 均价", _R, "时间", **_MIN),
        _family("ohlcv_minute_en", "datetime symbol open high low close volume", _R, **_MIN),
        _family("ticks", "成交时间 代码 成交价 涨跌额 成交量 成交额 性质", _R, **_MIN),
        _family(
            "spot_table",
            "序号 代码 名称 最新价 涨跌幅 涨跌额 成交量 成交额 振幅 最高 最低 今开 昨收 换手率 市盈率-动态 市净率 "
            "总市值 流通市值",
            _L,
        ),
        _family(
            "board_list",
            "排名 板块名称 板块代码 公司家数 最新价 涨跌额 涨跌幅 总市值 换手率 上涨家数 下跌家数 领涨股 领涨股-涨跌幅",
            _L,
        ),
        _family("item_value", "item value", _L, "item value"),
        _family("index_cons", "品种代码 品种名称 纳入日期 权重", _L),
        _family("market_changes", "时间 代码 名称 类型 相关信息", _L, entities={"时间": "date"}),
        _family(
            "chip_distribution",
            "日期 获利比例 平均成本 90成本-低 90成本-高 90集中度 70成本-低 70成本-高 70集中度",
            _R,
            **_DAY,
        ),
        _family("market_summary", "日期 类别 数量 成交量 成交金额 总市值 流通市值", _L),
        _family("indicator_series", "日期 代码 指标 数值", _R, **_DAY),
        _family("value_series_en", "date value", _R, **_DAY),
        _family("date_list", "日期", _L),
        # ---------------------------------------------------------------- funds
        _family("fund_nav", "净值日期 单位净值 累计净值 日增长率 申购状态 赎回状态", _R, "净值日期", **_DAY),
        _family(
            "fund_money_nav", "净值日期 每万份收益 7日年化收益率 申购状态 赎回状态", _R, "净值日期", **_DAY
        ),
        _family(
            "fund_rank",
            "序号 基金代码 基金简称 日期 单位净值 累计净值 日增长率 近1周 近1月 近3月 近6月 近1年 近2年 近3年 今年来 成立来 手续费",
            _L,
            entities={"日期": "date"},
        ),
        _family("fund_estimate", "序号 基金代码 基金名称 估算值 估算增长率 单位净值 日增长率 估算偏差", _L),
        _family("fund_rating", "基金代码 基金简称 基金经理 基金公司 评级 类型 日期", _L),
        _family(
            "fund_list", "序号 基金代码 基金简称 基金类型 基金经理 基金公司 成立日期 最新规模 更新日期", _L
        ),
        _family("fund_company_scale", "序号 基金公司 总规模 基金数量 更新日期", _L),
        _family("fund_holdings", "序号 股票代码 股票名称 占净值比例 持股数 持仓市值 季度", _L),
        _family("fund_bond_holdings", "序号 债券代码 债券名称 占净值比例 持仓市值 季度", _L),
        _family("industry_allocation", "行业类别 占净值比例 市值 截至日期", _L),
        _family("asset_allocation", "资产类型 仓位占比", _L),
        _family("fund_dividend", "序号 基金代码 基金简称 股权登记日 除息日期 分红 分红发放日", _L),
        _family("fund_fee", "费用类型 条件或名称 费用", _L),
        _family("fund_performance", "周期 区间收益 最大回撤 年化波动率 年化夏普比率 同类排名 盈利概率", _L),
        _family("people_list", "序号 姓名 从业资格类别 证书编号 任职机构 注册日期", _L),
        # ---------------------------------------------------------------- company data
        _family("financial_statement", "代码 报告期 报表 项目 数值", _L),
        _family("financial_indicator", "代码 报告期 指标 数值", _L),
        _family(
            "earnings_cross",
            "序号 股票代码 股票简称 每股收益 营业总收入 营业总收入同比增长 净利润 净利润同比增长 每股净资产 净资产收益率 所属行业 公告日期",
            _L,
        ),
        _family("forecast", "代码 名称 年度 指标 预测机构数 最小值 均值 最大值", _L),
        _family("analyst_rating", "股票代码 股票名称 评级日期 最新评级 目标价 评级机构 分析师名称", _L),
        _family("analyst_rank", "序号 分析师名称 机构 年度 区间收益 排名", _L),
        _family("peer_comparison", "代码 名称 排名 指标 数值", _L),
        _family(
            "shareholders",
            "股票代码 股票简称 截至日期 股东名称 股东性质 股份类型 持股数量 持股比例 增减 变动比例",
            _L,
        ),
        _family(
            "shareholder_count",
            "代码 名称 截至日期 股东户数-本次 股东户数-上次 股东户数-增减比例 户均持股市值 户均持股数量",
            _L,
        ),
        _family(
            "insider_change",
            "变动日期 股票代码 股票简称 变动人 职务 变动股数 成交价 变动后持股数 变动原因",
            _L,
        ),
        _family("share_capital", "变动日期 代码 总股本 流通股 限售股 变动原因", _L),
        _family(
            "restricted_release", "序号 股票代码 股票简称 解禁时间 限售股类型 解禁数量 解禁市值 持股比例", _L
        ),
        _family(
            "dividends",
            "代码 名称 报告期 送转股份-送转总比例 现金分红-现金分红比例 股息率 股权登记日 除权除息日 公告日期 方案进度",
            _L,
        ),
        _family("equity_offering", "代码 名称 公告日期 发行方式 发行价格 发行数量 募集资金 上市日期", _L),
        _family(
            "ipo_list", "股票代码 股票简称 申购代码 发行数量 申购日期 发行价格 发行市盈率 中签率 上市日期", _L
        ),
        _family("news", "标题 内容 发布时间 文章来源 新闻链接", _L),
        _family("announcements", "代码 名称 公告标题 公告类型 公告日期 公告链接", _L),
        _family("research_reports", "序号 股票代码 股票简称 报告名称 评级 机构 日期 报告链接", _L),
        _family("econ_calendar", "时间 地区 事件 重要性 今值 预测值 前值", _L),
        _family("hot_rank", "排名 股票代码 股票名称 最新价 涨跌幅 热度", _L),
        _family("hot_rank_series", "时间 证券代码 排名 热度", _R, step="day", entities={"时间": "date"}),
        _family("stock_screen", "序号 股票代码 股票简称 最新价 涨跌幅 换手率 成交量 成交额", _L),
        _family(
            "limit_pool",
            "序号 代码 名称 涨跌幅 最新价 成交额 流通市值 总市值 换手率 所属行业",
            _L,
            entities={"代码": "stock_symbol"},
        ),
        _family(
            "lhb",
            "序号 代码 名称 上榜日 收盘价 涨跌幅 龙虎榜净买额 龙虎榜买入额 龙虎榜卖出额 上榜原因",
            _L,
            entities={"代码": "stock_symbol"},
        ),
        _family("broker_rank", "序号 营业部名称 上榜次数 买入额 卖出额 净额", _L),
        _family(
            "block_trade",
            "交易日期 证券代码 证券简称 涨跌幅 收盘价 成交价 折溢率 成交量 成交额 买方营业部 卖方营业部",
            _L,
        ),
        _family(
            "fund_flow_hist",
            "日期 收盘价 涨跌幅 主力净流入-净额 主力净流入-净占比 超大单净流入-净额 大单净流入-净额 中单净流入-净额 小单净流入-净额",
            _R,
            "日期",
            **_DAY,
        ),
        _family(
            "fund_flow_rank",
            "序号 代码 名称 最新价 涨跌幅 主力净流入-净额 主力净流入-净占比 超大单净流入-净额 大单净流入-净额 中单净流入-净额 小单净流入-净额",
            _L,
            entities={"代码": "stock_symbol"},
        ),
        _family(
            "sector_flow_rank",
            "序号 行业名称 涨跌幅 主力净流入-净额 主力净流入-净占比 公司家数 领涨股 领涨股-涨跌幅",
            _L,
        ),
        _family(
            "hsgt_flow",
            "日期 当日成交净买额 买入成交额 卖出成交额 历史累计净买额 当日资金流入 当日余额 领涨股 领涨股-涨跌幅",
            _R,
            **_DAY,
        ),
        _family(
            "hsgt_holding",
            "交易日期 股票代码 股票简称 收盘价 涨跌幅 持股数量 持股市值 持股数量占A股百分比",
            _L,
        ),
        _family(
            "margin_summary",
            "交易日期 融资余额 融资买入额 融券余量 融券余额 融券卖出量 融资融券余额",
            _R,
            **_DAY,
        ),
        _family(
            "margin_detail",
            "交易日期 证券代码 证券简称 融资余额 融资买入额 融券余量 融券卖出量 融资比例 融券比例",
            _L,
        ),
        _family("pledge", "交易日期 股票代码 股票简称 所属行业 质押比例 质押股数 质押市值 笔数", _L),
        _family(
            "suspensions",
            "序号 代码 名称 停牌时间 预计复牌时间 停牌原因",
            _L,
            entities={"代码": "stock_symbol"},
        ),
        _family("goodwill", "股票代码 股票简称 报告期 商誉 商誉占净资产比例 净利润 公告日期", _L),
        _family("governance", "证券代码 证券简称 公告日期 事项 笔数 金额", _L),
        _family("disclosure_schedule", "股票代码 股票简称 报告期 首次预约时间 实际披露时间", _L),
        _family(
            "institutional_research",
            "序号 代码 名称 最新价 涨跌幅 接待机构数量 接待方式 接待日期 公告日期",
            _L,
            entities={"代码": "stock_symbol"},
        ),
        _family(
            "business_segments",
            "股票代码 报告期 分类类型 主营构成 主营收入 收入比例 主营成本 主营利润 毛利率",
            _L,
        ),
        _family(
            "major_contracts",
            "序号 股票代码 股票简称 合同名称 合同类型 其他签署方 合同金额 签署日期 公告日期",
            _L,
        ),
        _family("votes", "周期 看涨 看跌 看涨比例 看跌比例", _L),
        _family("industry_list", "行业代码 行业名称 上级行业 公司家数 市盈率 日期", _L),
        _family("listing", "证券代码 证券简称 上市日期 所属行业 总股本 流通股", _L),
        # ---------------------------------------------------------------- futures and options
        _family(
            "futures_daily", "日期 合约 开盘价 最高价 最低价 收盘价 结算价 成交量 持仓量", _R, "日期", **_DAY
        ),
        _family(
            "futures_board",
            "日期 合约 开盘价 最高价 最低价 收盘价 结算价 成交量 持仓量",
            _L,
            entities={"日期": "date"},
        ),
        _family(
            "futures_spot",
            "代码 名称 最新价 涨跌幅 涨跌额 开盘价 最高价 最低价 昨日结算价 成交量 持仓量 时间",
            _L,
        ),
        _family(
            "futures_basis",
            "日期 商品 现货价格 主力合约代码 主力合约价格 主力合约基差 主力合约变动百分比",
            _L,
            entities={"主力合约代码": "futures_symbol"},
        ),
        _family(
            "position_rank",
            "名次 会员简称 合约 成交量 成交量增减 持买单量 持买单量增减 持卖单量 持卖单量增减",
            _L,
        ),
        _family("futures_inventory", "日期 品种 库存 增减", _R, **_DAY),
        _family("futures_delivery", "日期 品种 合约 交割量 交割金额", _L),
        _family(
            "contract_spec",
            "交易所 品种 合约代码 合约名称 交易单位 最小变动价位 涨跌停板幅度 保证金比例 手续费 最后交易日",
            _L,
        ),
        _family(
            "option_chain",
            "合约代码 看涨看跌 行权价 最新价 涨跌幅 买价 卖价 成交量 持仓量 隐含波动率 到期日",
            _L,
        ),
        _family("option_greeks", "交易日期 合约代码 合约名称 Delta Gamma Theta Vega Rho 隐含波动率", _L),
        _family("option_vol", "日期 合约 隐含波动率", _L),
        _family("cme_volume", "日期 商品 类型 电子交易合约 成交量 未平仓合约 持仓变化", _L),
        # ---------------------------------------------------------------- bonds, rates, macro, forex
        _family(
            "bond_list", "债券代码 债券简称 发行人 债券类型 发行日期 到期日期 票面利率 发行规模 债项评级", _L
        ),
        _family(
            "convertible_list",
            "债券代码 转债名称 收盘价 涨跌幅 正股代码 正股名称 转股价 转股价值 转股溢价率 债项评级 剩余年限 剩余规模 到期收益率",
            _L,
        ),
        _family(
            "convertible_value", "日期 收盘价 纯债价值 转股价值 纯债溢价率 转股溢价率", _R, "日期", **_DAY
        ),
        _family("convertible_resets", "转债名称 公告日期 下修前转股价 下修后转股价 变动日期", _L),
        _family("yield_curve", "曲线名称 日期 3月 6月 1年 3年 5年 7年 10年 30年", _R, **_DAY),
        _family("rate_series", "日期 品种 期限 利率 涨跌额", _R, **_DAY),
        _family("macro_index", "日期 指数名称 最新值 涨跌值 涨跌幅", _R, step="month"),
        _family("macro_series", "月份 指标 今值 预测值 前值", _R, step="month"),
        _family("nbs_series", "时间 地区 指标 数值", _L),
        _family("house_price", "日期 城市 同比 环比 定基", _R, step="month"),
        _family("fx_sentiment", "日期 货币对 多头比例 空头比例", _R, **_DAY),
        _family("boc_rates", "日期 货币 买入价 卖出价 中间价", _R, **_DAY),
        _family("fx_rates", "日期 基准货币 货币 汇率", _L),
        _family("fx_quote", "代码 名称 最新价 涨跌额 涨跌幅", _L, entities={"代码": "currency_pair"}),
        _family("currency_list", "code name symbol", _L, entities={"code": "currency_pair"}),
        _family("lookup", "name code", _L),
        _family("penalties", "处罚决定书文号 当事人 违法违规事实 处罚决定 处罚机关 处罚日期", _L),
        _family("billionaires", "排名 姓名 数值 变动比例 地区 行业", _L),
        # ---------------------------------------------------------------- fallbacks by domain
        _family("generic_equity", "日期 代码 名称 指标 数值", _L),
        _family("generic_fund", "日期 基金代码 基金简称 指标 数值", _L),
        _family("generic_bond", "日期 债券代码 债券简称 指标 数值", _L),
        _family("generic_derivatives", "日期 合约 指标 数值", _L),
        _family("generic_macro", "日期 指标 今值 预测值 前值", _L),
        _family("generic_forex", "日期 货币对 指标 数值", _L),
        _family("generic_crypto", "日期 代码 指标 数值", _L),
        _family("generic_other", "日期 指标 数值", _L),
    )
}

_GENERIC_BY_DOMAIN = (
    ("equity", "generic_equity"),
    ("fund", "generic_fund"),
    ("bond", "generic_bond"),
    ("derivatives", "generic_derivatives"),
    ("forex", "generic_forex"),
    ("crypto", "generic_crypto"),
    ("macro", "generic_macro"),
)

# Akshare tools whose name alone decides the family (checked before the patterns).
AKSHARE_BY_NAME: dict[str, str] = {
    "stock_lhb_detail_daily_sina": "lhb",
    "stock_sse_deal_daily": "market_summary",
    "stock_concept_fund_flow_hist": "fund_flow_hist",
    "stock_sector_fund_flow_hist": "fund_flow_hist",
    "stock_hsgt_hist_em": "hsgt_flow",
    "stock_hsgt_fund_min_em": "hsgt_flow",
    "stock_hk_hot_rank_detail_realtime_em": "hot_rank_series",
    "stock_hot_rank_detail_realtime_em": "hot_rank_series",
    "stock_individual_spot_xq": "item_value",
    "index_us_stock_sina": "ohlcv_daily_en",
    "futures_to_spot_czce": "futures_delivery",
    "futures_to_spot_dce": "futures_delivery",
    "futures_to_spot_shfe": "futures_delivery",
    "bond_zh_hs_cov_pre_min": "quote_minute",
    "stock_comment_detail_scrd_desire_daily_em": "indicator_series",
    "index_analysis_daily_sw": "quote_hist",
    "index_analysis_weekly_sw": "board_list",
    "index_analysis_monthly_sw": "board_list",
    "index_analysis_week_month_sw": "date_list",
    "stock_lhb_stock_detail_date_em": "date_list",
    "futures_foreign_hist": "ohlcv_daily_en",
    "futures_zh_daily_sina": "ohlcv_daily_en",
    "option_commodity_hist_sina": "ohlcv_daily_en",
    "option_sse_daily_sina": "futures_daily",
    "option_daily_stats_sse": "market_summary",
    "option_daily_stats_szse": "market_summary",
    "option_sse_spot_price_sina": "item_value",
    "option_sse_underlying_spot_price_sina": "item_value",
    "option_sse_greeks_sina": "item_value",
    "option_finance_sse_underlying": "spot_table",
    "option_finance_board": "option_chain",
    "option_commodity_contract_table_sina": "option_chain",
    "option_risk_indicator_sse": "option_greeks",
    "option_margin": "contract_spec",
    "option_comm_info": "contract_spec",
    "option_lhb_em": "position_rank",
    "futures_comm_info": "contract_spec",
    "futures_rule": "contract_spec",
    "futures_spot_price_previous": "futures_basis",
    "futures_spot_stock": "futures_basis",
    "futures_news_shmet": "news",
    "futures_settlement_price_sgx": "futures_board",
    "get_futures_daily": "futures_board",
    "crypto_bitcoin_cme": "cme_volume",
    "bond_zh_hs_spot": "spot_table",
    "bond_cb_jsl": "convertible_list",
    "bond_cb_adj_logs_jsl": "convertible_resets",
    "bond_zh_cov_value_analysis": "convertible_value",
    "bond_cb_profile_sina": "item_value",
    "bond_cb_summary_sina": "item_value",
    "bond_info_detail_cm": "item_value",
    "bond_zh_cov_info": "item_value",
    "bond_info_cm_query": "lookup",
    "bond_china_yield": "yield_curve",
    "macro_china_swap_rate": "yield_curve",
    "bond_zh_us_rate": "yield_curve",
    "bond_china_close_return": "rate_series",
    "repo_rate_hist": "rate_series",
    "repo_rate_query": "rate_series",
    "rate_interbank": "rate_series",
    "bond_composite_index_cbond": "value_series_en",
    "bond_new_composite_index_cbond": "value_series_en",
    "bond_cash_summary_sse": "market_summary",
    "bond_deal_summary_sse": "market_summary",
    "bond_buy_back_hist_em": "quote_hist",
    "currency_boc_sina": "boc_rates",
    "currency_latest": "fx_rates",
    "currency_history": "fx_rates",
    "currency_time_series": "fx_rates",
    "currency_currencies": "currency_list",
    "currency_pair_map": "currency_list",
    "fx_quote_baidu": "fx_quote",
    "macro_fx_sentiment": "fx_sentiment",
    "macro_info_ws": "econ_calendar",
    "macro_china_nbs_nation": "nbs_series",
    "macro_china_nbs_region": "nbs_series",
    "macro_china_new_house_price": "house_price",
    "article_epu_index": "macro_index",
    "index_bloomberg_billionaires_hist": "billionaires",
    "bank_fjcf_table_detail": "penalties",
    "amac_fund_info": "fund_list",
    "amac_person_fund_org_list": "people_list",
    "fund_open_fund_rank_em": "fund_rank",
    "fund_info_index_em": "fund_rank",
    "fund_value_estimation_em": "fund_estimate",
    "fund_scale_open_sina": "fund_list",
    "fund_aum_hist_em": "fund_company_scale",
    "fund_etf_category_sina": "spot_table",
    "fund_money_fund_info_em": "fund_money_nav",
    "fund_hk_fund_hist_em": "fund_nav",
    "fund_individual_detail_hold_xq": "asset_allocation",
    "fund_individual_detail_info_xq": "fund_fee",
    "fund_fee_em": "fund_fee",
    "fund_individual_basic_info_xq": "item_value",
    "fund_overview_em": "item_value",
    "fund_portfolio_bond_hold_em": "fund_bond_holdings",
    "fund_etf_dividend_sina": "fund_dividend",
    "stock_research_report_em": "research_reports",
    "stock_a_gxl_lg": "indicator_series",
    "stock_hot_keyword_em": "hot_rank",
    "stock_js_weibo_report": "hot_rank",
    "stock_sector_spot": "board_list",
    "stock_sector_detail": "spot_table",
    "stock_classify_sina": "spot_table",
    "stock_concept_cons_futu": "spot_table",
    "sw_index_third_cons": "index_cons",
    "stock_price_js": "analyst_rating",
    "stock_analyst_rank_em": "analyst_rank",
    "stock_hk_financial_indicator_em": "financial_indicator",
    "stock_ipo_info": "item_value",
    "stock_ipo_summary_cninfo": "item_value",
    "stock_zyjs_ths": "item_value",
    "stock_report_fund_hold": "shareholders",
    "stock_report_fund_hold_detail": "shareholders",
    "stock_zh_a_disclosure_relation_cninfo": "announcements",
    "stock_gsrl_gsdt_em": "announcements",
    "stock_zh_kcb_report_em": "announcements",
    "stock_hsgt_board_rank_em": "sector_flow_rank",
    "stock_szse_sector_summary": "industry_list",
    "index_stock_cons_weight_csindex": "index_cons",
    "index_detail_cni": "index_cons",
    "index_detail_hist_cni": "index_cons",
    "index_detail_hist_adjust_cni": "index_cons",
    "index_component_sw": "index_cons",
}

# Ordered name patterns; the first that matches decides.
AKSHARE_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"hist_min|_min_em$|^bond_zh_hs_cov_min$|^option_minute_em$", "quote_minute"),
    (r"minute|^index_min_sw$", "ohlcv_minute_en"),
    (r"intraday|tick", "ticks"),
    (r"^(futures|option)_.*(hist|daily|main)", "futures_daily"),
    (r"^futures_index_", "futures_daily"),
    (r"^fund_\w+_fund_info_em$", "fund_nav"),
    (r"_daily(_em|_tx|_sina)?$|_hist_(tx|sina)$", "ohlcv_daily_en"),
    (r"_hist(_em|_cni|_sw|_fund_sw|_csindex)?$|^index_hist_|_index_ths$", "quote_hist"),
    (r"^stock_board_.*_(spot_em|info_ths)$", "item_value"),
    (r"^(futures)_.*(spot|realtime)", "futures_spot"),
    (r"^option_.*spot", "option_chain"),
    (r"^stock_(board|concept)_.*cons", "spot_table"),
    (r"spot|realtime", "spot_table"),
    (r"_cons", "index_cons"),
    (r"info_em$|basic_info|bid_ask|profile|contract_detail|foreign_detail", "item_value"),
    (r"sheet|financial_report|financial_(benefit|cash|debt)|financial_\w+_report_em$", "financial_statement"),
    (r"financial_(abstract|analysis)|financial_\w+indicator|indicator_eniu", "financial_indicator"),
    (r"^stock_(yjbb|yjkb|yjyg|lrb|xjll|zcfz|zcfz_bj|qsjy)_em$", "earnings_cross"),
    (r"^fund_(fh|cf)_em$", "fund_dividend"),
    (r"^fund_announcement", "announcements"),
    (r"^fund_rating", "fund_rating"),
    (r"^fund_(portfolio_hold|portfolio_change|report_stock)", "fund_holdings"),
    (r"industry_allocation", "industry_allocation"),
    (r"^fund_individual_(achievement|analysis|profit_probability)", "fund_performance"),
    (r"fhps|dividend|fhpx", "dividends"),
    (r"news|global_cls", "news"),
    (r"notice|disclosure_report|announcement", "announcements"),
    (r"lhb_(hyyyb|yybph|traderstatistic|yyb_detail|yytj)|dzjy_(hyyybtj|yybph)", "broker_rank"),
    (r"lhb", "lhb"),
    (r"dzjy", "block_trade"),
    (r"fund_flow_hist|individual_fund_flow$", "fund_flow_hist"),
    (r"(sector|concept|industry)_fund_flow|fund_flow_(concept|industry)", "sector_flow_rank"),
    (r"fund_flow", "fund_flow_rank"),
    (r"hsgt_(hist|fund_min)", "hsgt_flow"),
    (r"hsgt", "hsgt_holding"),
    (r"margin_(detail|ratio|underlying)", "margin_detail"),
    (r"margin_", "margin_summary"),
    (r"gpzy|equity_mortgage", "pledge"),
    (r"gdhs|hold_num", "shareholder_count"),
    (r"ggcg|hold_management|share_hold_change|management_change|shareholder_change", "insider_change"),
    (r"gbjg|share_change|hold_change_cninfo", "share_capital"),
    (r"restricted_release", "restricted_release"),
    (r"gdfx|stock_holder|institute_hold|yzxdr|hold_control", "shareholders"),
    (r"allotment|add_stock", "equity_offering"),
    (r"xgsglb", "ipo_list"),
    (r"^stock_sy_", "goodwill"),
    (r"^stock_cg_", "governance"),
    (r"yysj|report_disclosure", "disclosure_schedule"),
    (r"jgdy", "institutional_research"),
    (r"hot_rank_detail", "hot_rank_series"),
    (r"hot_", "hot_rank"),
    (r"zt_pool", "limit_pool"),
    (r"^stock_rank_(cxd|cxg|xstp|xxtp)", "stock_screen"),
    (r"rank_forecast|institute_recommend|analyst_detail", "analyst_rating"),
    (r"profit_forecast", "forecast"),
    (r"comparison", "peer_comparison"),
    (
        r"valuation_baidu|_pe_lg|_pb_lg|below_net_asset|high_low_statistics|value_csindex|stock_value_em",
        "indicator_series",
    ),
    (r"comment_detail|futures_hog_", "indicator_series"),
    (r"industry_(category|change|pe_ratio)", "industry_list"),
    (r"info_(sh|sz)_", "listing"),
    (r"deal_daily|szse_summary|area_summary", "market_summary"),
    (r"cyq", "chip_distribution"),
    (r"changes_em", "market_changes"),
    (r"zygc", "business_segments"),
    (r"zdhtmx", "major_contracts"),
    (r"vote_baidu", "votes"),
    (r"tfp_em", "suspensions"),
    (r"contract_info|comm_info", "contract_spec"),
    (r"position_rank|hold_pos", "position_rank"),
    (r"inventory|warehouse_receipt|stock_shfe", "futures_inventory"),
    (r"delivery|to_spot", "futures_delivery"),
    (r"^option_vol_", "option_vol"),
    (r"^option_hist_", "futures_board"),
    (r"issue_cninfo|^bond_info_cm$|^bond_debt", "bond_list"),
    (r"^(index_|drewry)", "macro_index"),
    (r"^stock_zh_a_gbjg", "share_capital"),
)


# ---------------------------------------------------------------------------- RapidAPI families

RAPIDAPI_FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        _family("search", "@id symbol name exchange type", _L, shape="rows_object", path="results"),
        _family(
            "quote",
            "@id symbol name price change changePercent previousClose volume marketCap currency timestamp",
            _S,
            shape="record",
        ),
        _family(
            "quotes_list",
            "@id symbol name price change changePercent previousClose volume marketCap currency timestamp",
            _L,
            shape="rows_object",
            path="data",
        ),
        _family(
            "time_series",
            "@id symbol datetime open high low close volume",
            _R,
            shape="rows_object",
            path="values",
            step="day",
        ),
        _family(
            "intraday_series",
            "@id symbol datetime open high low close volume",
            _R,
            shape="rows_object",
            path="values",
            step="minute",
        ),
        _family(
            "article_list",
            "id title author publishOn summary url commentCount",
            _L,
            shape="rows_object",
            path="data",
            entities={"id": "article_id"},
        ),
        _family(
            "article_detail",
            "id title author publishOn content url",
            _S,
            shape="record",
            entities={"id": "article_id"},
        ),
        _family(
            "comments", "id parentId author content createdAt likes", _L, shape="rows_object", path="comments"
        ),
        _family(
            "statements",
            "@id symbol period periodType statement lineItem metricValue currency",
            _L,
            shape="rows_object",
            path="statements",
        ),
        _family("metrics", "@id symbol metric value period", _L, shape="rows_object", path="data"),
        _family(
            "estimates",
            "@id symbol fiscalDate period metric estimate actual",
            _L,
            shape="rows_object",
            path="data",
        ),
        _family(
            "dividends_splits",
            "@id symbol type exDate recordDate payDate amount ratio currency",
            _L,
            shape="rows_object",
            path="data",
        ),
        _family(
            "profile",
            "@id symbol name exchange sector industry country employees website description",
            _S,
            shape="record",
        ),
        _family(
            "holders",
            "@id symbol holder shares percentHeld reportDate transactionType",
            _L,
            shape="rows_object",
            path="data",
        ),
        _family(
            "option_chain",
            "contractSymbol symbol expiration strike optionType lastPrice bid ask volume openInterest impliedVolatility",
            _L,
            shape="rows_object",
            path="options",
        ),
        _family(
            "expirations",
            "symbol expiration",
            _L,
            shape="rows_object",
            path="data",
            entities={"expiration": "date"},
        ),
        _family(
            "market_list",
            "rank @id symbol name price changePercent volume marketCap",
            _L,
            shape="rows_object",
            path="data",
        ),
        _family("calendar", "date symbol name type estimate actual", _L, shape="rows_object", path="data"),
        _family(
            "fx_rate", "from to pair rate timestamp", _S, shape="record", entities={"pair": "currency_pair"}
        ),
        _family("fx_rates", "base currency rate timestamp", _L, shape="rows_object", path="rates"),
        _family(
            "currency_list",
            "code name type",
            _L,
            shape="rows_object",
            path="data",
            entities={"code": "currency_pair"},
        ),
        _family(
            "crypto_markets", "exchange pair price volume24h timestamp", _L, shape="rows_object", path="data"
        ),
        _family("order_book", "side price size", _L, shape="rows_object", path="data"),
        _family(
            "trades",
            "timestamp price size side",
            _R,
            shape="rows_object",
            path="data",
            step="minute",
            entities={"timestamp": "date"},
        ),
        _family("technical", "@id symbol interval metric value signal", _L, shape="rows_object", path="data"),
    )
}

RAPIDAPI_BY_NAME: dict[str, str] = {
    "stock_get_daily_dividend_data": "dividends_splits",
    "stock_get_key_statistics_data": "metrics",
    "stock_get_financial_data": "statements",
    "stock_get_financial_stmts": "statements",
    "type_price_get_fee_level": "metrics",
    "type_price_get_cost_illustration": "metrics",
    "symbols_get_analyst_price_target": "estimates",
    "stock_v2_get_analysis_data": "metrics",
    "symbols_ratings_histories": "metrics",
    "symbols_get_quant_rating_histories_deprecated": "metrics",
    "symbols_get_earnings_chart": "estimates",
    "stock_v2_get_analysis_report": "article_detail",
    "stock_v2_get_mini_chart_realtime_data": "intraday_series",
    "stock_v2_get_mini_chart_quote": "quote",
    "stock_v2_get_realtime_data": "quote",
    "symbols_get_summary": "quotes_list",
    "symbols_quotes": "quotes_list",
    "market_get_realtime_quotes": "quotes_list",
    "market_quotes_stocks": "quotes_list",
    "market_get_full": "quote",
    "stock_get_summary": "quote",
    "stock_get_stock_price": "quote",
    "stock_quote_price": "quote",
    "price_assetid": "quote",
    "v1_cryptoprice": "quote",
    "get_cryptocurrency_details": "quote",
    "get_coin": "quote",
    "coins_get_overview": "quote",
    "ticker_per_symbol": "quote",
    "ticker_changes": "quote",
    "custom_ticker": "quote",
    "get_ticker_for_specific_coin": "quote",
    "cryptocurrency_index_ticker_price": "quote",
    "time_series_intraday": "intraday_series",
    "market_get_sparks": "intraday_series",
    "web_candles": "intraday_series",
    "ohlcv_vwap_spot": "intraday_series",
    "ohlcv_vwap_futures": "intraday_series",
    "busca_por_simbolo": "time_series",
    "customizable_endpoint": "time_series",
    "vinter_multi_assets_daily": "time_series",
    "coins_get_technical": "technical",
    "coins_get_markets": "crypto_markets",
    "get_markets_of_coin": "crypto_markets",
    "merged_order_book": "order_book",
    "trades_spot": "trades",
    "trades_futures": "trades",
    "metadata": "crypto_markets",
    "rates": "fx_rates",
    "latest_rates": "fx_rates",
    "currencies_get_rate": "fx_rate",
    "currency_exchange_rate": "fx_rate",
    "currency_exchange_rate_crypto": "fx_rate",
    "currencies": "currency_list",
    "get_reference_currencies": "currency_list",
    "list_of_all_available_pairs": "currency_list",
    "get_ico_calendar": "calendar",
    "calendars_get_earning_calendar": "calendar",
    "stock_calendar_events_stock": "calendar",
    "symbols_estimated_earning_announces": "calendar",
    "symbols_option_expirations": "expirations",
    "symbols_get_option_expirations": "expirations",
    "options_stock": "option_chain",
    "symbols_get_estimates": "estimates",
    "symbols_estimated_estimates": "estimates",
    "symbols_get_earnings": "estimates",
    "symbols_brief_earnings": "estimates",
    "stock_earnings_stock": "estimates",
    "stock_get_stock_earnings_data": "estimates",
    "symbols_earning_summaries": "estimates",
    "stock_index_trend_stock": "estimates",
    "symbols_data": "profile",
    "symbols_get_meta_data": "profile",
    "stock_get_stock_quote_type_data": "profile",
    "symbols_get_profile": "profile",
    "stock_get_stock_profile_data": "profile",
    "stock_profile_stock": "profile",
    "companies_profile": "profile",
    "stock_get_company_profile": "profile",
    "stock_v3_get_profile": "profile",
    "gedetailedtinsiders": "holders",
    "type_portfolio_get_holdings": "holders",
    "symbols_get_holdings": "holders",
    "stock_insider_holders_stock": "holders",
    "stock_insider_transactions_stock": "holders",
    "stock_net_share_purchase_activity_stock": "holders",
    "market_get_equity": "market_list",
    "markets_equities_groups": "market_list",
    "screeners_details": "market_list",
    "screeners_filters": "metrics",
    "symbols_get_ratings_deprecated": "metrics",
}

_YH_STRING_METRICS = frozenset({"currency", "stock_exchange"})
_YH_METRIC = re.compile(r"^stock_get_(.+)$")
_API_ID_FIELD = {
    "morning_star": "performanceId",
    "webull": "tickerId",
    "seeking_alpha_finance": "slug",
    "investing_cryptocurrency_markets": "pair_id",
    "coinranking1": "uuid",
    "cnbc": "issueId",
    "open_defi": "pair_id",
}
_TOKENS_DIVIDENDS = frozenset({"dividend", "dividends", "splits", "split"})
_TOKENS_STATEMENTS = frozenset(
    {"financials", "financial", "fundamentals", "balance", "income", "cashflow", "statements", "stmts"}
)
_TOKENS_SERIES = frozenset(
    {"chart", "charts", "candles", "ohlcv", "historical", "series", "daily", "histories"}
)
_TOKENS_QUOTE = frozenset({"quote", "quotes", "realtime", "price", "ticker", "summary"})


# ============================================================================ selection


def akshare_family(facts: ToolFacts) -> str:
    """The akshare family of a DataFrame tool whose source names no columns."""
    if facts.name in AKSHARE_BY_NAME:
        return AKSHARE_BY_NAME[facts.name]
    for pattern, family in AKSHARE_PATTERNS:
        if re.search(pattern, facts.name):
            return family
    for domain, family in _GENERIC_BY_DOMAIN:
        if domain in facts.regulatory_domains:
            return family
    return "generic_other"


def rapidapi_family(facts: ToolFacts, produces: tuple[str, ...]) -> str:
    """The RapidAPI family of a tool, from its name and what it produces (so ids line up)."""
    name = facts.name
    tokens = set(facts.tokens)
    if name in RAPIDAPI_BY_NAME:
        return RAPIDAPI_BY_NAME[name]
    if "comment" in tokens or "comments" in tokens:
        return "comments"
    if "company_id" in produces:
        return "market_list" if "ranking" in tokens else "search"
    if "currency_pair" in produces:
        return "currency_list"
    if "article_id" in produces:
        return "article_list"
    if tokens & {"details", "data", "summary"} and (
        tokens & {"article", "news", "analysis", "transcripts", "filings"}
    ):
        return "article_detail"
    if facts.api_name == "yh_finance8" and _YH_METRIC.match(name):
        return "yh_metric"
    if "price_series" in produces or tokens & _TOKENS_SERIES:
        return "time_series"
    if "financial_statement" in produces or tokens & _TOKENS_STATEMENTS:
        return "statements"
    if tokens & _TOKENS_DIVIDENDS:
        return "dividends_splits"
    if tokens & {"profile"}:
        return "profile"
    if tokens & _TOKENS_QUOTE:
        return "quote"
    if tokens & {"estimates", "earnings", "target", "recommendations", "recommendation"}:
        return "estimates"
    return "metrics"


# ============================================================================ specials

_SPECIAL_RECORDS: dict[str, tuple[str, str]] = {
    # tool name -> (columns, rows_by) for one-off RapidAPI / akshare record shapes
    "fixed_deposit": ("principal rate interest maturityAmount", _S),
    "v1_mortgagecalculator": ("monthlyPayment totalInterestPaid totalPayment", _S),
    "v1_salestax": ("zipCode state city totalRate stateRate countyRate cityRate", _L),
    "v1_inflation": ("country type period monthlyRate yearlyRate", _L),
    "get_balance": ("address network balance currency", _S),
    "estimate_gas": ("network gas", _S),
    "chain_id": ("network chainId", _S),
    "generate_wallet": ("network address privateKey", _S),
    "form5500_planname": ("ein planName sponsor planYear participants", _S),
    "categorieslist_onlyforthoseservicekeythatincludethisoption_": ("id name category", _L),
    "getpaymentinitiationinstructionsummary": (
        "instructionId amount currency creationDate executionDate status",
        _L,
    ),
    "minimal_exchange_amount": ("from to minAmount", _S),
    "exchangecurrencies": ("from to amount result rate", _S),
    "get_coin_price_difference": ("symbol buyExchange sellExchange spread", _L),
    "get_latest_price": ("name price currency date", _L),
    "article_summary": ("id title summary", _S),
    "currency_convert": ("date from to amount result", _S),
    "futures_stock_shfe_js": ("商品 库存 增减 日期", _L),
}
_SPECIAL_ENTITIES = {
    "article_summary": {"id": "article_id"},
    "get_coin_price_difference": {"symbol": "crypto_symbol"},
}


def _special_plan(facts: ToolFacts) -> OutputPlan | None:
    """One-off shapes: calculators, wallet utilities, and akshare dict/list/tuple/str returns."""
    name = facts.name
    if name in _SPECIAL_RECORDS:
        columns, rows_by = _SPECIAL_RECORDS[name]
        cols = tuple(vocab_column(c) for c in columns.split())
        entities = tuple(_SPECIAL_ENTITIES.get(name, {}).items())
        if rows_by == _S:
            return OutputPlan(f"special:{name}", "record", cols, _S, entities=entities)
        if facts.tool_from == "rapidapi":
            return OutputPlan(f"special:{name}", "rows_object", cols, _L, entities=entities, rows_path="data")
        return OutputPlan(f"special:{name}", "rows", cols, _L, entities=entities)
    if name in {"futures_gfex_warehouse_receipt", "futures_shfe_warehouse_receipt"} or name.startswith(
        "futures_warehouse_receipt_"
    ):
        cols = tuple(vocab_column(c) for c in ("日期", "品种", "库存", "增减"))
        return OutputPlan(
            "special:warehouse_receipts",
            "keyed_rows",
            cols,
            _L,
            entities=(("日期", "date"),),
            keyed_by="品种",
        )
    if name == "futures_spot_sys":
        cols = tuple(vocab_column(c) for c in ("日期", "指标", "数值"))
        return OutputPlan(
            "special:series_by_name", "keyed_rows", cols, _R, (), (("日期", "date"),), None, "day", "指标"
        )
    if name == "option_commodity_contract_sina":
        cols = (PlanColumn("合约", "string", "Option contract code"),)
        return OutputPlan(
            "special:contracts_by_product",
            "keyed_rows",
            cols,
            _L,
            entities=(("合约", "option_symbol"),),
            keyed_by="品种",
        )
    if name == "futures_dce_position_rank_other":
        cols = (PlanColumn("合约", "string", "Contract code with a position ranking"),)
        return OutputPlan("special:contract_list", "values", cols, _L, entities=(("合约", "futures_symbol"),))
    if name == "option_sse_list_sina":
        cols = (PlanColumn("到期月份", "string", "Expiry month (YYYYMM)"),)
        return OutputPlan("special:expiry_months", "values", cols, _L)
    if name == "stock_info_change_name":
        cols = (PlanColumn("曾用名", "string", "A former short name of the stock"),)
        return OutputPlan("special:former_names", "values", cols, _L)
    if name == "option_sse_codes_sina":
        cols = (
            PlanColumn("看涨合约", "array", "Call contract codes", item_type="string"),
            PlanColumn("看跌合约", "array", "Put contract codes", item_type="string"),
        )
        entities = (("看涨合约", "option_symbol"), ("看跌合约", "option_symbol"))
        return OutputPlan("special:call_and_put_codes", "tuple", cols, _S, entities=entities)
    if name == "option_sse_expire_day_sina":
        cols = (
            PlanColumn("到期日", "string", "Expiry date", "date"),
            PlanColumn("剩余天数", "integer", "Days left to expiry"),
        )
        return OutputPlan("special:expiry_and_days_left", "tuple", cols, _S, entities=(("到期日", "date"),))
    if facts.tool_from == "akshare" and facts.return_type == "str":
        cols = (PlanColumn("text", "string", _TEXT_RETURNS.get(name, "Text returned by the source")),)
        return OutputPlan("special:text", "text", cols, _S)
    return None


_TEXT_RETURNS = {
    "stock_a_code_to_symbol": "Market-prefixed symbol of the stock code (sh, sz or bj)",
    "stock_irm_cninfo": "Investor questions on the interactive platform, as text",
    "stock_irm_ans_cninfo": "Company answers on the interactive platform, as text",
    "stock_sns_sseinfo": "Questions and answers on the SSE e-interaction platform, as text",
}


# ============================================================================ plans


def _camel(words: str) -> str:
    parts = [p for p in words.split("_") if p]
    return parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:]) if parts else words


def _yh_metric_plan(facts: ToolFacts) -> OutputPlan:
    metric = _YH_METRIC.match(facts.name).group(1)  # type: ignore[union-attr]
    json_type = "string" if metric in _YH_STRING_METRICS else "number"
    readable = metric.replace("_", " ").replace("avg", "average").replace("num ", "number of ")
    columns = [
        vocab_column("symbol"),
        PlanColumn(_camel(metric), json_type, f"{readable[:1].upper()}{readable[1:]} of the stock"),
    ]
    if metric != "currency":
        columns.append(vocab_column("currency"))
    columns.append(vocab_column("timestamp"))
    return OutputPlan(
        "family:yh_metric",
        "record",
        tuple(columns),
        _S,
        entities=(("symbol", instrument_entity(facts) or "stock_symbol"),),
    )


def _code_entity(facts: ToolFacts, consumes: tuple[str, ...], produces: tuple[str, ...]) -> str:
    """The instrument type of a tool's generic code column: what it lists, else what it takes."""
    for entity in (*produces, *consumes):
        if entity in _CODE_ENTITIES:
            return entity
    return instrument_entity(facts) or "stock_symbol"


_CODE_ENTITIES = INSTRUMENT_ENTITIES - {"company_id"}


def _resolve(entity: str, facts: ToolFacts, consumes: tuple[str, ...], produces: tuple[str, ...]) -> str:
    if entity == "@code":
        return _code_entity(facts, consumes, produces)
    if entity == "@contract":
        return "option_symbol" if "option" in facts.tokens else "futures_symbol"
    return entity


def _family_plan(
    family: Family, facts: ToolFacts, consumes: tuple[str, ...], produces: tuple[str, ...]
) -> OutputPlan:
    id_field = _API_ID_FIELD.get(facts.api_name or "", "id")
    keep_id = "company_id" in consumes or "company_id" in produces
    columns: list[PlanColumn] = []
    entities: list[tuple[str, str]] = []
    for name in family.columns:
        entity = family.entities.get(name)
        if name == "@id":
            if not keep_id:
                continue
            name = id_field
            column = vocab_column(name)
        else:
            column = vocab_column(name)
        columns.append(column)
        if entity:
            entities.append((name, _resolve(entity, facts, consumes, produces)))
    return OutputPlan(
        f"family:{family.name}",
        family.shape,
        tuple(columns),
        family.rows_by,
        key=family.key,
        entities=tuple(entities),
        rows_path=family.rows_path,
        time_step=family.time_step,
    )


_SOURCE_CODE_COLUMN = re.compile(r"(代码|symbol|code|ticker)$", re.I)
_SOURCE_DATE_COLUMN = re.compile(r"(^|_)(date|time|datetime)$|日期|时间", re.I)
_SOURCE_FORMATS = {"YYYY-MM-DD": "date", "YYYY-MM-DD HH:MM:SS": "date-time"}


def _words(name: str) -> str:
    text = re.sub(r"([a-z])([A-Z])", r"\1 \2", name).replace("_", " ").strip().lower()
    return text[:1].upper() + text[1:]


def _source_column(column: Column) -> PlanColumn:
    known = VOCAB.get(column.name) or VOCAB.get(column.name.lower())
    base = vocab_column(column.name if column.name in VOCAB else column.name.lower()) if known else None
    is_date = column.date_format is not None or bool(_SOURCE_DATE_COLUMN.search(column.name))
    json_type = column.type or (base.type if base else "string")
    description = SOURCE_COLUMNS.get(column.name) or (base.description if base else _words(column.name))
    fmt = (
        _SOURCE_FORMATS.get(column.date_format or "")
        if column.date_format
        else (base.format if base else None)
    )
    hint = column.date_format if column.date_format and column.date_format not in _SOURCE_FORMATS else None
    if is_date and json_type != "string":
        json_type = "string"
    return PlanColumn(column.name, json_type, description, fmt, hint)


def _source_plan(
    facts: ToolFacts, info: OutputInfo, consumes: tuple[str, ...], produces: tuple[str, ...]
) -> OutputPlan:
    columns = tuple(_source_column(c) for c in info.columns)
    entities: list[tuple[str, str]] = []
    date_column = next((c.name for c in columns if _SOURCE_DATE_COLUMN.search(c.name)), None)
    for column in columns:
        if column.name == date_column:
            entities.append((column.name, "date"))
        elif _SOURCE_CODE_COLUMN.search(column.name):
            entities.append((column.name, _code_entity(facts, consumes, produces)))
    rows_by = "date_range" if date_column and "date_range" in consumes else "list"
    return OutputPlan(
        info.columns_source,
        "rows",
        columns,
        rows_by,
        entities=tuple(entities),
        time_step=("minute" if {"min", "minute"} & set(facts.tokens) else "day")
        if rows_by == "date_range"
        else None,
    )


def plan_output(facts: ToolFacts, info: OutputInfo) -> OutputPlan:
    """The concrete output of one tool (see the module docstring for the contract)."""
    consumes = infer_consumes(facts)
    produces = infer_produces(facts, info)
    special = _special_plan(facts)
    if special is not None:
        plan = special
    elif info.kind == "rows" and info.columns:
        plan = _source_plan(facts, info, consumes, produces)
    elif facts.tool_from == "rapidapi":
        name = rapidapi_family(facts, produces)
        plan = (
            _yh_metric_plan(facts)
            if name == "yh_metric"
            else _family_plan(RAPIDAPI_FAMILIES[name], facts, consumes, produces)
        )
    else:
        plan = _family_plan(AKSHARE_FAMILIES[akshare_family(facts)], facts, consumes, produces)
    unknown = [e for _, e in plan.entities if e not in ENTITY_TYPES]
    if unknown:
        raise ValueError(f"tool {facts.name!r}: output entity types {unknown} are not known entity types")
    return plan
