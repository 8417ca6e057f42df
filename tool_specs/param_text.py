"""What a tool parameter's description says about its values: choices, default, example, date format.

Descriptions in finmcp's inventories end in a few fixed clauses (``One of: a, b, c.``,
``Options: x, y, ....``, ``Default: a.``, ``Example: 600519.``, ``Format: YYYYMMDD.``). This is the one
reader of those clauses; the agents' argument builder (:mod:`evaluator.agents.arguments`) and the
simulator's example arguments (:mod:`server.sim.example_args`) both call it.

The two callers read a choice list in two ways, and each way is an explicit parameter of
:func:`choices` (so neither caller's values, nor the simulator's bytes, change):

- ``stop_at_default``: the list ends at a following ``Default:`` clause (``One of: a, b. Default: a.``
  gives ``a, b``), or runs to the end of the description (the last option is then ``b. Default: a``);
- ``keep_empty``: an option that cleans to the empty string is kept (a quoted ``""`` meaning
  "unadjusted", and an elision ``...`` after its dots are stripped) or left out.
"""

from __future__ import annotations

import re

DATE_FORMATS: tuple[tuple[str, str], ...] = (
    ("%Y-%m-%d", "YYYY-MM-DD"),
    ("%Y%m%d", "YYYYMMDD"),
    ("%Y/%m/%d", "YYYY/MM/DD"),
    ("%Y.%m.%d", "YYYY.MM.DD"),
    ("%Y-%m-%d %H:%M:%S", "YYYY-MM-DD HH:MM:SS"),
    ("%Y-%m-%dT%H:%M:%S", "YYYY-MM-DDTHH:MM:SS"),
    ("%Y-%m-%d %H:%M", "YYYY-MM-DD HH:MM"),
    ("%Y%m", "YYYYMM"),
    ("%Y-%m", "YYYY-MM"),
    ("%Y", "YYYY"),
)
"""(strftime pattern, label) of the date formats finmcp reads and writes."""

_CHOICES_TO_DEFAULT = re.compile(r"(?:One of|Options):\s*(.+?)(?:\.\s+Default:|\.?\s*$)", re.S)
_CHOICES_TO_END = re.compile(r"(?:One of|Options):\s*(.+?)\.?\s*$", re.S)
_DEFAULT = re.compile(r"Default:\s*([^\s.,;]+)")
_EXAMPLE = re.compile(r"Example:\s*(\S+?)\.?(?:\s|$)")
_FORMAT = re.compile(r"Format:\s*([^.]+?(?:\.\d+)?)\s*(?:\.\s|\.$|$)")
_LABELS_LONGEST_FIRST = sorted((label for _, label in DATE_FORMATS), key=len, reverse=True)
_VALUE_SHAPES = (
    (r"\d{10}", "Unix timestamp"),
    (r"\d{13}", "Unix timestamp (milliseconds)"),
    (r"\d{8}", "YYYYMMDD"),
    (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", "YYYY-MM-DDTHH:MM:SS"),
    (r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", "YYYY-MM-DD HH:MM:SS"),
    (r"\d{4}-\d\d-\d\d", "YYYY-MM-DD"),
    (r"\d{4}/\d\d/\d\d", "YYYY/MM/DD"),
    (r"\d{4}\.\d\d\.\d\d", "YYYY.MM.DD"),
    (r"\d{6}", "YYYYMM"),
    (r"\d{4}-\d\d", "YYYY-MM"),
    (r"\d{4}", "YYYY"),
)


def choices(
    desc: str, *, stop_at_default: bool = True, keep_empty: bool = False, year: int | None = None
) -> list[str]:
    """The options of the description's ``One of:`` / ``Options:`` list, ``[]`` when it has none.

    Each option loses its gloss (``qfq (forward-adjusted)`` -> ``qfq``), quotes and trailing dots (so an
    elision ``...`` becomes empty: see ``keep_empty``); an elision ``…`` is left out. ``stop_at_default`` and ``keep_empty`` are the two
    ways the callers differ (see the module docstring); ``year`` fills ``XXXX`` placeholders.
    """
    m = (_CHOICES_TO_DEFAULT if stop_at_default else _CHOICES_TO_END).search(desc)
    if not m:
        return []
    out = []
    for part in re.split(r",\s*", m.group(1)):
        part = part.strip().rstrip(".")
        part = re.sub(r"\s*[(（].*$", "", part).strip().strip("\"'“”").rstrip(".")
        if part.endswith("...") or part.endswith("…") or (not part and not keep_empty):
            continue
        out.append(part if year is None else part.replace("XXXX", str(year)))
    return out


def default(desc: str) -> str | None:
    """The value of the description's ``Default:`` clause (up to a space or ``.,;``), or None."""
    m = _DEFAULT.search(desc)
    return m.group(1) if m else None


def example(desc: str) -> str | None:
    """The value of the description's ``Example:`` clause (one word, a final dot dropped), or None."""
    m = _EXAMPLE.search(desc)
    return m.group(1) if m else None


def stated_date_format(desc: str) -> str | None:
    """The text of the description's ``Format:`` clause as written (``YYYY-MM-DD HH:mm:ss``), or None."""
    m = _FORMAT.search(desc)
    return m.group(1).strip() if m else None


def date_format_of_value(value: str) -> str:
    """The date format a value is written in (``20200511`` -> ``YYYYMMDD``; ``""`` when none fits)."""
    for rx, label in _VALUE_SHAPES:
        if re.fullmatch(rx, value):
            return label
    return ""


def date_format_named(text: str) -> str | None:
    """The label of :data:`DATE_FORMATS` a description names or shows, ``unix`` for timestamps, or None.

    Unlike :func:`stated_date_format` it reads the whole text: a label anywhere (the longest first),
    else a date written in it (``20240105`` -> ``YYYYMMDD``, ``2024-01-05`` -> ``YYYY-MM-DD``).
    """
    if not text:
        return None
    if re.search(r"unix|timestamp|epoch", text, re.I):
        return "unix"
    upper = text.upper()
    for label in _LABELS_LONGEST_FIRST:
        if label in upper:
            return label
    if re.search(r"\b(19|20)\d\d(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])\b", text):
        return "YYYYMMDD"
    if re.search(r"\b(19|20)\d\d-\d\d-\d\d\b", text):
        return "YYYY-MM-DD"
    return None
