"""Near misses: a call that differs a little from a recorded one is simulated coherently with it.

A benchmark's recorded (gold) calls replay exactly; a call next to one (another page size or date
range, a fund's name for its code, one more code in a batch) is simulated. :class:`NearMissSimulator`
wraps a :class:`~server.sim.simulator.Simulator` so that such an answer agrees with the recorded ones:

1. names become codes in the code arguments (``fundCodes``, ``fundNameOrCode``, ``strategyCode``, ...)
   through the harvested name table; a call that then matches a recording answers with it;
2. paging: a recording of the same call but for its paging keys gives the members, in its order,
   paged as asked (members past the recorded ones come from the simulation, without duplicates);
3. batches: a recording of the same call but for its code list gives each code's recorded record,
   the simulation the records of the codes it lacks, in the order asked;
4. otherwise the simulated answer, with every dated row (a fund's NAV on a day) and, for the same
   call context, every record of a recorded code replaced by the recorded one (same fund, same day:
   same values).

Values come from recorded answers of the same tool only; nothing here invents a value the simulator
did not produce. Deterministic: neighbours are tried in a fixed order.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from finmcp.recordings.canonical import canonical_arguments
from finmcp.server.sim.entity_harvest import FUND_RE, Harvest, output_value
from finmcp.server.sim.registry import ToolInputError
from finmcp.server.sim.simulator import Simulator, error_result, tool_result

PAGE_INDEX_KEYS = ("pageNum", "pageNo", "page", "pageIndex")
PAGE_SIZE_KEYS = ("pageSize", "size", "limit")
PAGING_KEYS = frozenset(PAGE_INDEX_KEYS + PAGE_SIZE_KEYS)
CODE_LIST_KEYS = ("fundCodes", "strategyCodes", "fundCodeList")
NAME_OR_CODE_KEYS = ("fundNameOrCode", "fundCode", "strategyCode", "keyword")
RECORD_CODE_KEYS = ("fundCode", "基金代码", "strategyCode", "策略代码", "code")
NAME_FIELDS = frozenset({"fundName", "基金名称", "基金简称", "基金全称", "strategyName", "策略名称"})
"""Fields naming a record's entity: a recorded code keeps the names the tool recorded for it."""
DATE_KEYS = ("date", "navDate", "净值日期", "日期", "profitDate", "tradeDate", "publishDate", "公告日期")


def code_of(node: Mapping[str, Any]) -> str | None:
    """The fund or strategy code a record names (``fundCode``, ``基金代码``, ``strategyCode``, ...), or None."""
    return next((node[k] for k in RECORD_CODE_KEYS if isinstance(node.get(k), str)), None)


def _date_of(node: Mapping[str, Any]) -> Any:
    return next((node[k] for k in DATE_KEYS if node.get(k) is not None), None)


def _identities(
    value: Any,
    dated: dict[tuple[Any, ...], Any],
    coded: dict[str, Any],
    code: str | None = None,
    names: dict[tuple[str, str], str] | None = None,
) -> None:
    """Index a recorded value's records: dated rows by (code, date, keys), coded records by code, and
    (into ``names``) each code's name fields."""
    if isinstance(value, Mapping):
        own = code_of(value)
        code = own or code
        when = _date_of(value)
        if when is not None and code is not None:
            dated.setdefault((code, json.dumps(when), tuple(sorted(value))), value)
        elif own is not None:
            coded.setdefault(own, value)
        if own is not None and names is not None:
            for key in NAME_FIELDS.intersection(value):
                if isinstance(value[key], str):
                    names.setdefault((own, key), value[key])
        for item in value.values():
            _identities(item, dated, coded, code, names)
    elif isinstance(value, list):
        for item in value:
            _identities(item, dated, coded, code, names)


def _overlay(
    value: Any,
    dated: Mapping[tuple[Any, ...], Any],
    coded: Mapping[str, Any],
    code: str | None = None,
    names: Mapping[tuple[str, str], str] | None = None,
) -> Any:
    """``value`` with its dated rows, its coded records (same call context) and the names of recorded
    codes (``names``: (code, field) -> the tool's recorded text) as recorded."""
    names = names or {}
    if isinstance(value, Mapping):
        own = code_of(value)
        code = own or code
        when = _date_of(value)
        if when is not None and code is not None:
            found = dated.get((code, json.dumps(when), tuple(sorted(value))))
            if found is not None:
                return copy.deepcopy(found)
        if own is not None and own in coded and set(coded[own]) == set(value):
            return copy.deepcopy(coded[own])
        out = {k: _overlay(v, dated, coded, code, names) for k, v in value.items()}
        for key in NAME_FIELDS.intersection(out) if own is not None else ():
            recorded = names.get((str(own), key))
            if recorded is not None:
                out[key] = recorded
        return out
    if isinstance(value, list):
        return [_overlay(item, dated, coded, code, names) for item in value]
    return value


def main_list(value: Any, path: tuple[Any, ...] = ()) -> tuple[tuple[Any, ...], list[Any]] | None:
    """(path, list) of the longest list of records in ``value`` (the answer's members), or None."""
    best: tuple[tuple[Any, ...], list[Any]] | None = None
    if isinstance(value, list) and value and all(isinstance(x, Mapping) for x in value):
        best = (path, value)
    items = value.items() if isinstance(value, Mapping) else ()
    for key, item in items:
        found = main_list(item, (*path, key))
        if found is not None and (best is None or len(found[1]) > len(best[1])):
            best = found
    return best


def _set_path(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    out = dict(value)
    out[path[0]] = _set_path(value[path[0]], path[1:], new)
    return out


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


class RecordedAnswers:
    """The recorded answers of one inventory's tools, by tool, with canonical arguments (read once).

    Indexed for the near-miss layer: by exact arguments, by call context (:func:`_context`), and per
    tool its dated rows and record names (built on a tool's first near miss, then kept)."""

    def __init__(self, records: Iterable[tuple[str, Mapping[str, Any], Any]]) -> None:
        self.by_tool: dict[str, list[tuple[dict[str, Any], Any]]] = {}
        for tool, arguments, value in records:
            if value is not None:
                self.by_tool.setdefault(tool, []).append((dict(arguments), value))
        self._exact: dict[tuple[str, str], Any] = {}
        self._contexts: dict[tuple[str, str], list[tuple[dict[str, Any], Any]]] = {}
        for tool, answers in self.by_tool.items():
            answers.sort(key=lambda a: _key(a[0]))
            for arguments, value in answers:
                self._exact.setdefault((tool, _key(arguments)), value)
                self._contexts.setdefault((tool, _key(_context(arguments))), []).append((arguments, value))
        self._indexes: dict[str, tuple[dict[tuple[Any, ...], Any], dict[tuple[str, str], str]]] = {}
        self._coded: dict[tuple[str, str], dict[str, Any]] = {}

    @classmethod
    def from_store(cls, store: Any) -> RecordedAnswers:
        """The recorded JSON answers in a :class:`RecordingStore`, by tool name whatever inventory they
        were recorded under (prose and errors are skipped)."""
        return cls((r["tool"], r["arguments"], output_value(r["result"])) for r in store.iter_responses())

    def exact(self, tool: str, arguments: Mapping[str, Any]) -> Any | None:
        """The recorded value for exactly these canonical arguments, or None."""
        return self._exact.get((tool, _key(arguments)))

    def same_context(self, tool: str, arguments: Mapping[str, Any]) -> list[tuple[dict[str, Any], Any]]:
        """The recordings of ``tool`` asking the same thing but for paging, code lists and names."""
        return self._contexts.get((tool, _key(_context(arguments))), [])

    def index(self, tool: str) -> tuple[dict[tuple[Any, ...], Any], dict[tuple[str, str], str]]:
        """(dated rows by (code, day, keys), (code, name field) -> text) of every recording of ``tool``."""
        found = self._indexes.get(tool)
        if found is None:
            dated: dict[tuple[Any, ...], Any] = {}
            names: dict[tuple[str, str], str] = {}
            for _, value in self.by_tool.get(tool, ()):
                _identities(value, dated, {}, None, names)
            found = self._indexes[tool] = (dated, names)
        return found

    def warm(self) -> None:
        """Build every tool's index now (start-up work, beside the simulator's own warm-up)."""
        for tool in sorted(self.by_tool):
            self.index(tool)

    def coded(self, tool: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """code -> recorded record, over the recordings of ``tool`` in the same context as ``arguments``."""
        key = (tool, _key(_context(arguments)))
        found = self._coded.get(key)
        if found is None:
            found = {}
            for _, value in self._contexts.get(key, []):
                _identities(value, {}, found)
            self._coded[key] = found
        return found


@dataclass(frozen=True)
class NearMisses:
    """What near misses are answered from: the harvest (names -> codes) and the recorded answers."""

    harvest: Harvest
    answers: RecordedAnswers


def _context(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments that say what is asked, without paging, code lists or the name/code searched."""
    drop = PAGING_KEYS | set(CODE_LIST_KEYS) | set(NAME_OR_CODE_KEYS)
    return {k: v for k, v in arguments.items() if k not in drop}


class NearMissSimulator:
    """A :class:`Simulator` whose answers next to recorded calls agree with them (see the module doc)."""

    def __init__(self, simulator: Simulator, answers: RecordedAnswers, harvest: Harvest) -> None:
        self.simulator = simulator
        self.answers = answers
        self.names = harvest.names()

    def warm(self) -> None:
        """Warm the wrapped simulator and index the recorded answers."""
        self.simulator.warm()
        self.answers.warm()

    def simulate(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """An MCP result dict, like :meth:`Simulator.simulate`."""
        spec = self.simulator.inventory.get(tool)
        if spec is None or tool not in self.answers.by_tool:
            return self.simulator.simulate(tool, arguments)
        try:
            value = self.value(tool, arguments)
        except ToolInputError as exc:
            return error_result(str(exc))
        return tool_result(spec, value)

    def _resolve(self, arguments: dict[str, Any]) -> dict[str, Any]:
        out = dict(arguments)
        for key in CODE_LIST_KEYS:
            if isinstance(out.get(key), list):
                out[key] = [self.names.get(x, x) if isinstance(x, str) else x for x in out[key]]
        for key in ("fundNameOrCode", "fundCode", "strategyCode"):
            if isinstance(out.get(key), str):
                out[key] = self.names.get(out[key], out[key])
        return out

    def value(self, tool: str, arguments: dict[str, Any]) -> Any:
        """The answer's JSON value; raises ToolInputError for a call the simulator refuses."""
        spec = self.simulator.inventory.get(tool)
        if spec is None:
            raise KeyError(f"unknown tool {tool!r}")
        args = self._resolve(canonical_arguments(arguments or {}, spec.input_schema))
        recorded = self.answers.exact(tool, args)
        if recorded is not None:
            return copy.deepcopy(recorded)
        simulated = self.simulator.value(tool, args)
        same = self.answers.same_context(tool, args)
        paged = [
            v
            for a, v in same
            if {k: x for k, x in a.items() if k not in PAGING_KEYS}
            == {k: x for k, x in args.items() if k not in PAGING_KEYS}
        ]
        if paged:
            return self._repaged(spec.input_schema, args, paged[0], simulated, same)
        batch_key = next((k for k in CODE_LIST_KEYS if isinstance(args.get(k), list)), None)
        if batch_key is not None and same:
            merged = self._batch(args[batch_key], same, simulated)
            if merged is not None:
                return merged
        dated, names = self.answers.index(tool)
        return _overlay(simulated, dated, self.answers.coded(tool, args), None, names)

    def _batch(self, codes: list[Any], same: list[tuple[dict[str, Any], Any]], simulated: Any) -> Any | None:
        """Each asked code's recorded record (else the simulated one), in the order asked; None when
        the answers are not per-code lists or maps."""
        records: dict[str, Any] = {}
        for _, v in same:
            if isinstance(v, list):
                for r in v:
                    if isinstance(r, Mapping) and code_of(r):
                        records.setdefault(code_of(r), r)  # type: ignore[arg-type]
            elif (
                isinstance(v, Mapping)
                and v
                and all(isinstance(k, str) and (FUND_RE.match(k) or k[:2] in ("ZH", "SI")) for k in v)
            ):
                records.update({k: r for k, r in v.items() if k not in records})
            else:
                return None
        if isinstance(simulated, list):
            sim = {code_of(r): r for r in simulated if isinstance(r, Mapping)}
            picked = (records.get(c, sim.get(c)) for c in codes if isinstance(c, str))
            return [copy.deepcopy(r) for r in picked if r is not None]
        if isinstance(simulated, Mapping):
            return {
                c: copy.deepcopy(records.get(c, simulated.get(c)))
                for c in codes
                if c in records or c in simulated
            }
        return None

    def _repaged(
        self,
        schema: Mapping[str, Any],
        args: dict[str, Any],
        recorded: Any,
        simulated: Any,
        same: list[tuple[dict[str, Any], Any]],
    ) -> Any:
        """The recorded members paged as ``args`` asks (see the module doc, step 2)."""
        found = main_list(recorded)
        if found is None:
            return simulated
        path, members = found
        known = {code_of(m) for m in members}
        sim_found = main_list(simulated)
        more = [m for m in (sim_found[1] if sim_found else []) if code_of(m) not in known]
        size_key = next((k for k in PAGE_SIZE_KEYS if k in args), None)
        index_key = next((k for k in PAGE_INDEX_KEYS if k in args), None)
        size = args[size_key] if size_key and isinstance(args[size_key], int) else len(members)
        props = schema.get("properties") or {}
        base = (props.get(index_key) or {}).get("minimum", 1) if index_key else 1
        index = args[index_key] if index_key and isinstance(args[index_key], int) else base
        offset = max(0, index - base) * size
        total = _total(recorded)
        pool = members + ([] if total is not None and total <= len(members) else more)
        page = copy.deepcopy(pool[offset : offset + size])
        out = _set_path(copy.deepcopy(recorded), path, page)
        return _paging_fields(out, size_key, size, index_key, index, offset, total)


def _total(value: Any) -> int | None:
    """The ``total`` a paged answer states (at its top or under ``data``), or None."""
    for node in (value, value.get("data") if isinstance(value, Mapping) else None):
        if isinstance(node, Mapping) and isinstance(node.get("total"), int):
            return int(node["total"])
    return None


def _paging_fields(
    value: Any,
    size_key: str | None,
    size: int,
    index_key: str | None,
    index: int,
    offset: int,
    total: int | None,
) -> Any:
    """The answer's own paging fields set to the page asked (``pageSize``, ``page``, ``hasMoreRows``)."""
    for node in (value, value.get("data") if isinstance(value, Mapping) else None):
        if not isinstance(node, dict):
            continue
        if "pageSize" in node and size_key is not None:
            node["pageSize"] = size
        for key in ("page", "pageNum"):
            if key in node and index_key is not None:
                node[key] = index
        if "hasMoreRows" in node and total is not None:
            node["hasMoreRows"] = offset + size < total
        if "totalPages" in node and total is not None and size > 0:
            node["totalPages"] = -(-total // size)
    return value
