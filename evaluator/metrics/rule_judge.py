"""The offline, deterministic judge: documented keyword and number rules instead of an LLM.

Answer scoring (kind ``score``), by answer type:

* numeric: the gold's first number (with its unit: %, 万, 亿, thousand/million/billion) must appear in the
  answer within half a unit of the gold's last decimal (raw or unit-scaled) -> 1.0, else 0.0;
* choice: the answer names exactly one option letter A-E and it is the gold one -> 1.0, else 0.0;
* criterium: a gold criterion is covered when >= 50% of its character bigrams occur in the answer;
  covered weight share >= 0.75 -> 1.0, >= 0.35 -> 0.5, else 0.0;
* other_str: gold contained in the answer (normalised) -> 1.0; for a list-like gold, all items -> 1.0,
  at least half -> 0.5; otherwise bigram recall >= 0.6 -> 0.5, else 0.0.

Compliance (kinds ``timeliness`` / ``intent`` / ``domain``): the question's required timeliness classes,
intent and domains are inferred from keyword lexicons (English and Chinese) and compared with the tool's
tag; when nothing can be inferred the reply is not yes/no, so the verdict is skipped exactly like an
unparseable LLM reply.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

_NUM_RE = re.compile(
    r"([+-]?\d[\d,]*(?:\.\d+)?)\s*(%|亿|万|千|百|billion|million|thousand|bn|mn)?", re.IGNORECASE
)
_UNIT = {
    "%": 0.01,
    "亿": 1e8,
    "万": 1e4,
    "千": 1e3,
    "百": 1e2,
    "billion": 1e9,
    "bn": 1e9,
    "million": 1e6,
    "mn": 1e6,
    "thousand": 1e3,
}
_PUNCT_RE = re.compile(r"[\s\W_]+", re.UNICODE)
_LIST_SPLIT_RE = re.compile(r"[、,，;；/]|\band\b|和|及|与")
_MACRO_INDICATORS = ["gdp", "cpi", "ppi", "pmi", "inflation", "unemployment"]
"""Indicator words that mark both a periodic timeliness need and the macro domain."""

_CHOICE_RE = re.compile(r"(?<![A-Za-z])([A-E])(?![A-Za-z])")


def _norm(text: str) -> str:
    return _PUNCT_RE.sub("", unicodedata.normalize("NFKC", text).casefold())


def _bigrams(text: str) -> set[str]:
    return {text[i : i + 2] for i in range(len(text) - 1)} if len(text) > 1 else {text} if text else set()


def _numbers(text: str) -> list[tuple[float, float, int]]:
    """(raw value, unit-scaled value, decimals) of every number in the text."""
    out = []
    for match in _NUM_RE.finditer(unicodedata.normalize("NFKC", text)):
        digits = match.group(1).replace(",", "")
        try:
            raw = float(digits)
        except ValueError:
            continue
        decimals = len(digits.split(".")[1]) if "." in digits else 0
        unit = (match.group(2) or "").lower()
        out.append((raw, raw * _UNIT.get(unit, 1.0), decimals))
    return out


def score_numeric(answer: str, gold: str) -> float:
    gold_numbers = _numbers(gold)
    if not gold_numbers:
        return 0.0
    g_raw, g_scaled, decimals = gold_numbers[0]
    tol_raw = 0.5 * 10**-decimals
    tol_scaled = tol_raw * (abs(g_scaled / g_raw) if g_raw else 1.0)
    for a_raw, a_scaled, _ in _numbers(answer):
        if abs(a_scaled - g_scaled) <= tol_scaled + 1e-12 or abs(a_raw - g_raw) <= tol_raw + 1e-12:
            return 1.0
    return 0.0


def score_choice(answer: str, gold: str) -> float:
    letters = set(_CHOICE_RE.findall(unicodedata.normalize("NFKC", answer).upper()))
    return 1.0 if letters == {gold.strip().upper()} else 0.0


def _criteria(gold: str) -> list[tuple[str, float]]:
    try:
        data = json.loads(gold)
    except json.JSONDecodeError:
        return []
    items = data if isinstance(data, list) else [data]
    out = []
    for item in items:
        values = item.values() if isinstance(item, dict) else []
        for value in values:
            if isinstance(value, dict) and isinstance(value.get("content"), str):
                try:
                    weight = float(value.get("score", 1))
                except (TypeError, ValueError):
                    weight = 1.0
                out.append((value["content"], weight))
    return out


def score_criterium(answer: str, gold: str) -> float:
    criteria = _criteria(gold)
    total = sum(w for _, w in criteria)
    if not criteria or total <= 0:
        return score_text(answer, gold)
    answer_bigrams = _bigrams(_norm(answer))
    covered = 0.0
    for content, weight in criteria:
        grams = _bigrams(_norm(content))
        if grams and len(grams & answer_bigrams) / len(grams) >= 0.5:
            covered += weight
    share = covered / total
    return 1.0 if share >= 0.75 else 0.5 if share >= 0.35 else 0.0


def score_text(answer: str, gold: str) -> float:
    g, a = _norm(gold), _norm(answer)
    if not g or not a:
        return 0.0
    if g in a:
        return 1.0
    items = [_norm(p) for p in _LIST_SPLIT_RE.split(gold)]
    items = [p for p in items if p]
    if len(items) >= 2:
        found = sum(1 for p in items if p in a)
        if found == len(items):
            return 1.0
        if found * 2 >= len(items):
            return 0.5
    grams = _bigrams(g)
    return 0.5 if grams and len(grams & _bigrams(a)) / len(grams) >= 0.6 else 0.0


# ------------------------------------------------------------------ compliance lexicons

TIMELINESS_WORDS = {
    "realtime": [
        "real-time",
        "realtime",
        "real time",
        "live",
        "right now",
        "intraday",
        "current price",
        "实时",
        "盘中",
        "现价",
        "最新价",
        "分时",
        "此刻",
    ],
    "daily": [
        "today",
        "yesterday",
        "daily",
        "closing price",
        "close price",
        "nav",
        "今日",
        "今天",
        "昨日",
        "收盘",
        "日线",
        "净值",
        "每日",
    ],
    "as_filed": [
        "announcement",
        "filing",
        "10-k",
        "10-q",
        "annual report",
        "audit",
        "disclosure",
        "penalty",
        "balance sheet",
        "income statement",
        "cash flow statement",
        "p&l",
        "fy20",
        "公告",
        "年报",
        "季报",
        "财报",
        "审计",
        "披露",
        "处罚",
        "资产负债表",
        "利润表",
        "现金流量表",
        "报告期",
    ],
    "periodic": [
        "monthly",
        "quarterly",
        *_MACRO_INDICATORS,
        "月度",
        "季度",
        "统计局",
        "宏观数据",
        "社融",
    ],
    "static": ["listing date", "ticker", "identifier", "上市日期", "成立日期", "简称", "代码"],
}
SERVES = {
    "realtime": {"realtime"},
    "daily": {"daily", "realtime"},
    "as_filed": {"as_filed", "periodic"},
    "periodic": {"periodic", "weekly", "monthly", "as_filed", "daily"},
    "static": {"realtime", "daily", "weekly", "monthly", "periodic", "as_filed", "static"},
}
"""Which tool timeliness values serve each required timeliness class."""

INTENT_WORDS = {
    "transactional": [
        "buy",
        "sell",
        "place an order",
        "transfer",
        "swap",
        "redeem",
        "subscribe to",
        "generate a wallet",
        "exchange currency",
        "买入",
        "卖出",
        "下单",
        "转账",
        "申购",
        "赎回",
        "兑换",
    ],
    "advisory": [
        "recommend",
        "should i",
        "suggest",
        "advice",
        "rating",
        "forecast",
        "predict",
        "analy",
        "evaluate",
        "assess",
        "建议",
        "推荐",
        "是否值得",
        "预测",
        "评估",
        "分析",
        "判断",
        "怎么看",
        "影响",
    ],
}

DOMAIN_WORDS = {
    "equity": [
        "stock",
        "share",
        "equity",
        "listed company",
        "ticker",
        "eps",
        "p/e",
        "股票",
        "个股",
        "股份",
        "a股",
        "港股",
        "美股",
        "上市公司",
        "公司",
        "市盈率",
        "股价",
        "板块",
    ],
    "fund": ["fund", "etf", "nav", "基金", "净值", "公募", "私募"],
    "bond": ["bond", "treasury", "coupon", "credit rating", "yield curve", "债", "回购", "收益率曲线"],
    "forex": ["forex", "exchange rate", "currency", "usd/", "fx ", "汇率", "外汇", "人民币兑"],
    "derivatives": ["futures", "option", "derivative", "期货", "期权", "衍生", "合约", "t+d"],
    "crypto": [
        "bitcoin",
        "crypto",
        "ethereum",
        "token",
        "coin",
        "blockchain",
        "wallet",
        "比特币",
        "加密",
        "区块链",
        "以太坊",
    ],
    "macro": [
        *_MACRO_INDICATORS,
        "macro",
        "宏观",
        "通胀",
        "社融",
        "经济",
    ],
    "economic_policy": [
        "policy",
        "central bank",
        "federal reserve",
        "regulation",
        "政策",
        "央行",
        "降准",
        "降息",
        "监管",
        "改革",
    ],
    "sentiment_trading": [
        "sentiment",
        "popularity",
        "social media",
        "weibo",
        "情绪",
        "舆情",
        "热度",
        "微博",
        "资金流向",
        "龙虎榜",
    ],
    "esg": ["esg", "carbon", "sustainab", "碳", "可持续"],
}
RELATED_DOMAINS = {
    ("macro", "economic_policy"),
    ("economic_policy", "macro"),
    ("equity", "sentiment_trading"),
    ("sentiment_trading", "equity"),
}


def _has(text: str, word: str) -> bool:
    if word.isascii() and word[:1].isalpha():
        return re.search(r"(?<![a-z])" + re.escape(word), text) is not None
    return word in text


def infer_classes(question: str, lexicon: dict[str, list[str]]) -> set[str]:
    """Classes of ``lexicon`` whose keywords occur in the question (lower-cased, NFKC)."""
    text = unicodedata.normalize("NFKC", question).casefold()
    return {cls for cls, words in lexicon.items() if any(_has(text, w) for w in words)}


def infer_intent(question: str) -> str:
    """'transactional' > 'advisory' > 'informational' by keywords."""
    found = infer_classes(question, INTENT_WORDS)
    return (
        "transactional"
        if "transactional" in found
        else "advisory"
        if "advisory" in found
        else "informational"
    )


def match_timeliness(question: str, tag: Any) -> bool | None:
    required = infer_classes(question, TIMELINESS_WORDS)
    if not required or not isinstance(tag, str):
        return None
    return any(tag in SERVES[r] for r in required)


def match_intent(question: str, tag: Any) -> bool | None:
    if not isinstance(tag, str):
        return None
    return (infer_intent(question) == "transactional") == (tag == "transactional")


def match_domain(question: str, tag: Any) -> bool | None:
    required = infer_classes(question, DOMAIN_WORDS)
    tool = set(tag) if isinstance(tag, (list, tuple, set)) else {tag} if isinstance(tag, str) else set()
    if not required or not tool:
        return None
    return bool(required & tool) or any((q, t) in RELATED_DOMAINS for q in required for t in tool)


class RuleJudge:
    """Deterministic judge; replies in the same JSON the LLM judge would give."""

    name = "rules"

    def ask(self, kind: str, fields: dict[str, Any], repeat: int) -> str:
        if kind == "score":
            answer, gold = str(fields.get("answer", "")), str(fields.get("gold", ""))
            answer_type = fields.get("answer_type", "other_str")
            scorer = {"numeric": score_numeric, "choice": score_choice, "criterium": score_criterium}.get(
                answer_type, score_text
            )
            score = scorer(answer, gold)
            label = "correct" if score >= 1 else "partial" if score > 0 else "wrong"
            return json.dumps({"score": score, "label": label, "reason": f"rule:{answer_type}"})
        matcher = {"timeliness": match_timeliness, "intent": match_intent, "domain": match_domain}[kind]
        verdict = matcher(str(fields.get("question", "")), fields.get("tag"))
        match = "n/a" if verdict is None else "yes" if verdict else "no"
        return json.dumps({"match": match, "reason": f"rule:{kind}"})
