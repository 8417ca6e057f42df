"""Import real tool outputs from FinMCP-Bench sample files into the ``responses`` table.

A sample file (``demo_infer.json``, ``train_data_demo.json``, an inference output) is a JSON list of
samples. In each message list (``messages``, ``messages_list``, ``messages_pred`` when present) an
assistant message with ``tool_calls`` ``[{id, function: {name, arguments}}]`` is followed by tool
messages ``{role: "tool", tool_call_id, content}``. Calls and results are paired by
``tool_call_id``, falling back to order for the ones whose ids do not match.

Each pair becomes a response with provenance ``imported:<file name>`` and result
``{"content": [{"type": "text", "text": <content>}], "structuredContent": <parsed JSON, wrapped as
{"result": value} when not an object; None when the text is not JSON>, "isError": false}``.

Skipped, each with a reason in the report: calls to names outside ``known_tools`` (the legacy XiaoGu
names), calls whose batch failed (the ``调用失败`` marker), client-side error texts (``[error] ...``,
written by the inference script when the call raised, so not server output), unparsable arguments,
calls without a result, results without a call, and conflicts.

Conflicts (same tool and canonical arguments, different output): the first output wins, except that
a JSON output replaces an earlier non-JSON one (the SFT samples hold prose paraphrases of outputs that
other samples have as raw JSON). Outputs identical to the stored one are counted as ``identical``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from finmcp.recordings.errors import InvalidValueError
from finmcp.recordings.store import RecordingStore

FAILURE_MARKER = "调用失败"
CLIENT_ERROR_PREFIX = "[error]"
MESSAGE_FIELDS = ("messages", "messages_list", "messages_pred")


@dataclass(frozen=True)
class SkippedCall:
    """One call (or orphan tool message) that was not imported, and why."""

    sample: str
    field: str
    message_index: int
    tool: str | None
    reason: str


@dataclass
class ImportReport:
    """What an import did: rows written, outputs already stored identically, and skips with reasons."""

    file: str
    inventory: str
    imported: int = 0
    identical: int = 0
    replaced_prose: int = 0
    skipped: list[SkippedCall] = field(default_factory=list)

    @property
    def total(self) -> int:
        """Calls and orphan tool messages seen: ``imported + identical + len(skipped)``."""
        return self.imported + self.identical + len(self.skipped)

    def skip_reasons(self) -> Counter[str]:
        """How many items were skipped for each reason."""
        return Counter(item.reason for item in self.skipped)

    def summary(self) -> str:
        """One line for humans."""
        reasons = ", ".join(f"{reason}: {n}" for reason, n in sorted(self.skip_reasons().items()))
        return (
            f"{self.file} -> {self.inventory}: {self.imported} imported, {self.identical} identical, "
            f"{len(self.skipped)} skipped" + (f" ({reasons})" if reasons else "")
        )


@dataclass(frozen=True)
class _Pair:
    call: Mapping[str, Any]
    message: Mapping[str, Any] | None
    failed_batch: bool


def import_finmcp(
    store: RecordingStore,
    path: str | Path,
    inventory: str = "qieman79",
    known_tools: set[str] | None = None,
    input_schemas: Mapping[str, Mapping[str, Any]] | None = None,
    fields: Sequence[str] = MESSAGE_FIELDS,
) -> ImportReport:
    """Import the tool outputs of one FinMCP-Bench sample file (in one transaction); see the module doc.

    ``input_schemas`` (tool name -> inputSchema) makes the keys match what the server computes when
    a tool declares defaults.
    """
    path = Path(path)
    try:
        samples = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InvalidValueError(f"{path}: cannot read FinMCP samples ({exc})") from None
    if not isinstance(samples, list):
        raise InvalidValueError(f"{path}: expected a JSON list of samples, got {type(samples).__name__}")
    report = ImportReport(file=path.name, inventory=inventory)
    provenance = f"imported:{path.name}"
    with store.transaction():
        for index, sample in enumerate(samples):
            if not isinstance(sample, Mapping):
                raise InvalidValueError(f"{path.name} sample [{index}]: expected an object")
            sample_name = str(sample.get("id", sample.get("task_id", f"[{index}]")))
            for field_name in fields:
                messages = sample.get(field_name)
                if messages is None:
                    continue
                if not isinstance(messages, list):
                    raise InvalidValueError(f"{path.name} sample {sample_name}: {field_name} is not a list")
                where = (sample_name, field_name)
                for position, pair in _pairs(messages, report, where):
                    _import_pair(store, pair, position, where, report, provenance, known_tools, input_schemas)
    return report


def _pairs(messages: list[Any], report: ImportReport, where: tuple[str, str]) -> Iterator[tuple[int, _Pair]]:
    """Yield each tool call with its result message, in message order; orphan results go to the report."""
    i = 0
    while i < len(messages):
        message = messages[i]
        calls = message.get("tool_calls") if isinstance(message, Mapping) else None
        if not (isinstance(message, Mapping) and message.get("role") == "assistant" and calls):
            if isinstance(message, Mapping) and message.get("role") == "tool":
                report.skipped.append(
                    SkippedCall(*where, i, message.get("name"), "tool message without a call")
                )
            i += 1
            continue
        j = i + 1
        results: list[Mapping[str, Any]] = []
        while j < len(messages) and isinstance(messages[j], Mapping) and messages[j].get("role") == "tool":
            results.append(messages[j])
            j += 1
        pairs, orphans = _match(calls, results)
        yield from ((i, pair) for pair in pairs)
        for orphan in orphans:
            report.skipped.append(SkippedCall(*where, i, orphan.get("name"), "tool message without a call"))
        i = j


def _match(calls: list[Any], results: list[Mapping[str, Any]]) -> tuple[list[_Pair], list[Mapping[str, Any]]]:
    """Pair calls with results by ``tool_call_id``, then by order; also return the unused results."""
    by_id = {r.get("tool_call_id"): r for r in results if r.get("tool_call_id")}
    call_ids = {c.get("id") for c in calls if isinstance(c, Mapping) and c.get("id")}
    unclaimed = [r for r in results if not r.get("tool_call_id") or r.get("tool_call_id") not in call_ids]
    failed_batch = any(r.get("content") == FAILURE_MARKER and not r.get("tool_call_id") for r in results)
    pairs = []
    for call in calls:
        call_id = call.get("id") if isinstance(call, Mapping) else None
        message = by_id.get(call_id) if call_id else None
        if message is None and unclaimed:
            message = unclaimed.pop(0)
        pairs.append(_Pair(call if isinstance(call, Mapping) else {}, message, failed_batch))
    return pairs, [r for r in unclaimed if r.get("content") != FAILURE_MARKER]


def _import_pair(
    store: RecordingStore,
    pair: _Pair,
    index: int,
    where: tuple[str, str],
    report: ImportReport,
    provenance: str,
    known_tools: set[str] | None,
    input_schemas: Mapping[str, Mapping[str, Any]] | None,
) -> None:
    function = pair.call.get("function")
    if not isinstance(function, Mapping):
        function = {}
    tool = function.get("name")

    def skip(reason: str) -> None:
        report.skipped.append(SkippedCall(*where, index, tool if isinstance(tool, str) else None, reason))

    if not isinstance(tool, str) or not tool:
        return skip("call has no function name")
    if known_tools is not None and tool not in known_tools:
        return skip("tool not in known_tools (legacy or foreign name)")
    content = pair.message.get("content") if pair.message is not None else None
    if pair.message is None or content == FAILURE_MARKER:
        return skip(
            "call failed (调用失败 marker)" if pair.failed_batch or pair.message else "call has no result"
        )
    if pair.message.get("name") not in (None, tool):
        return skip(f"result names tool {pair.message.get('name')!r}, call is {tool!r}")
    if isinstance(content, str) and content.startswith(CLIENT_ERROR_PREFIX):
        return skip("client-side error text ([error] ...)")
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            return skip("arguments are not valid JSON")
    if not isinstance(arguments, Mapping):
        return skip("arguments are not a JSON object")
    result = output_result(content)
    schema = input_schemas.get(tool) if input_schemas else None
    try:
        key = store.canonical(tool, arguments, schema).key
    except InvalidValueError as exc:
        return skip(f"arguments rejected: {exc}")
    existing = store.get_response_by_key(report.inventory, tool, key)
    upgrade = (
        existing is not None
        and existing["structuredContent"] is None
        and result["structuredContent"] is not None
    )
    outcome = store.put_response(
        report.inventory, tool, arguments, result, provenance, input_schema=schema, replace=upgrade
    )
    if outcome == "inserted":
        report.imported += 1
    elif outcome == "replaced":
        report.imported += 1
        report.replaced_prose += 1
    elif outcome == "identical":
        report.identical += 1
    else:
        skip("conflict: a different output is already recorded for these arguments")
    return None


def output_result(content: Any) -> dict[str, Any]:
    """The MCP result for one recorded tool output (text as recorded, JSON parsed when it is JSON)."""
    if isinstance(content, str):
        text = content
        try:
            value = json.loads(text, parse_constant=_reject_constant)
        except (json.JSONDecodeError, ValueError):
            value = _NOT_JSON
    else:  # legacy samples carry dicts; keep them as JSON text
        text = json.dumps(content, ensure_ascii=False)
        value = content
    if value is _NOT_JSON:
        structured = None
    elif isinstance(value, dict):
        structured = value
    else:
        structured = {"result": value}
    return {"content": [{"type": "text", "text": text}], "structuredContent": structured, "isError": False}


_NOT_JSON = object()


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
