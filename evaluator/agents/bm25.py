"""Okapi BM25 over tool names, descriptions and finance tags (FATR-style top-K tool retrieval).

FinToolBench's agent retrieves the top K = 20 tools with bge-m3 embeddings; finmcp ships no model,
so it ranks with BM25 (k1 = 1.5, b = 0.75) instead. Tokens: lower-cased words, camelCase and
snake_case parts, and character bigrams of CJK runs (so Chinese queries match Chinese text).
Ties keep the inventory order.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

_WORD = re.compile(r"[A-Za-z]+|\d+|[\u3400-\u9fff\uf900-\ufaff]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def tokenize(text: str) -> list[str]:
    """Lower-cased tokens: words (split at camelCase), digits, CJK single characters and bigrams."""
    tokens: list[str] = []
    for run in _WORD.findall(text or ""):
        if run[0] >= "\u3400":
            tokens.extend(run)
            tokens.extend(run[i : i + 2] for i in range(len(run) - 1))
        else:
            parts = _CAMEL.findall(run) or [run]
            tokens.extend(p.lower() for p in parts)
            if len(parts) > 1:
                tokens.append(run.lower())
    return tokens


def tool_text(tool: dict[str, Any]) -> str:
    """Name, title, description, parameter names and descriptions, and finance tags of an MCP tool."""
    parts = [str(tool.get("name", "")), str(tool.get("title") or ""), str(tool.get("description") or "")]
    props = (tool.get("inputSchema") or {}).get("properties") or {}
    for key, schema in props.items():
        parts.append(str(key))
        if isinstance(schema, dict) and schema.get("description"):
            parts.append(str(schema["description"]))
    tags = ((tool.get("_meta") or {}).get("io.finmcp/tags")) or {}
    for key in ("timeliness", "intent_type", "regulatory_domains", "scenario", "sub_scenario"):
        value = tags.get(key)
        if isinstance(value, list):
            parts.extend(str(v) for v in value)
        elif value:
            parts.append(str(value))
    return " ".join(parts)


class BM25Index:
    """BM25 over a list of documents; ``top(query, k)`` returns document indices, best first."""

    def __init__(self, documents: list[str], k1: float = 1.5, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self.docs = [Counter(tokenize(d)) for d in documents]
        self.lengths = [sum(c.values()) for c in self.docs]
        self.avg = (sum(self.lengths) / len(self.lengths)) if self.lengths else 0.0
        df: Counter[str] = Counter()
        for doc in self.docs:
            df.update(doc.keys())
        n = len(self.docs)
        self.idf = {t: math.log(1.0 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    def scores(self, query: str) -> list[float]:
        """The BM25 score of every document for ``query``."""
        terms = [t for t in set(tokenize(query)) if t in self.idf]
        out = []
        for doc, length in zip(self.docs, self.lengths, strict=True):
            norm = self.k1 * (1 - self.b + self.b * length / self.avg) if self.avg else self.k1
            score = 0.0
            for t in terms:
                f = doc.get(t, 0)
                if f:
                    score += self.idf[t] * f * (self.k1 + 1) / (f + norm)
            out.append(score)
        return out

    def top(self, query: str, k: int) -> list[int]:
        """Indices of the ``k`` best documents (stable for ties)."""
        scores = self.scores(query)
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
        return order[: max(0, k)]


class ToolRetriever:
    """Top-K tools for a query over MCP ``tools/list`` entries."""

    def __init__(self, tools: list[dict[str, Any]]) -> None:
        self.tools = tools
        self.index = BM25Index([tool_text(t) for t in tools])

    def top(self, query: str, k: int) -> list[dict[str, Any]]:
        """The ``k`` best tools for ``query``, best first."""
        return [self.tools[i] for i in self.index.top(query, k)]
