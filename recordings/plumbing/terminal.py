"""Untrusted text made safe to print on a terminal: every control character shown, none obeyed.

Tool outputs, tool names, tags, client names and run ids come from peers nobody here wrote. Printed
as they came, ``ESC [2J`` clears the user's screen, ``ESC ] 0;…BEL`` sets the window title, ``\\r``
and ``ESC [K`` overwrite a line and ``ESC ] 8;;URL`` plants a link. :func:`visible` writes each such
character as a backslash escape instead, so the bytes reaching the terminal are printable text:

- C0 controls (U+0000–U+001F), DEL (U+007F) and C1 controls (U+0080–U+009F: ``\\x9b`` is an 8-bit CSI)
  become ``\\xNN`` (``\\n``, ``\\r``, ``\\t`` for those three), so no escape sequence can start;
- bidirectional formatting characters (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069), which
  reorder what is shown ("Trojan Source"), and the Unicode line and paragraph separators
  (U+2028, U+2029) become ``\\uNNNN``;
- a lone surrogate (a client may send ``"\\ud800"`` in JSON), which UTF-8 cannot encode, becomes
  ``\\uNNNN`` too, so printing never fails.

``keep`` names the layout characters a caller prints raw: a multi-line block may keep ``"\\n"`` and
``"\\t"``; a one-line field (a name, an id) keeps nothing, so it cannot forge a line of its own. The
escapes are a display form, not a reversible encoding (a literal backslash stays as it is): the
exact text is in the trace store and in the JSON exports.
"""

from __future__ import annotations

import re

SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
BIDI_AND_SEPARATORS = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029"
"""Characters outside C0/C1 that change how the text around them is laid out."""
_UNSAFE_CODES = [
    *range(0x00, 0x20),
    *range(0x7F, 0xA0),
    0x061C,
    0x200E,
    0x200F,
    *range(0x202A, 0x202F),
    *range(0x2066, 0x206A),
    0x2028,
    0x2029,
    *range(0xD800, 0xE000),
]


def _escape(code: int) -> str:
    char = chr(code)
    if char in SHORT_ESCAPES:
        return SHORT_ESCAPES[char]
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


_TABLE = {code: _escape(code) for code in _UNSAFE_CODES}


def _runs_of(codes: list[int]) -> re.Pattern[str]:
    """A pattern matching runs of the characters ``codes`` (a class of ranges: fast to scan)."""
    spans: list[list[int]] = []
    for code in sorted(codes):
        if spans and spans[-1][1] == code - 1:
            spans[-1][1] = code
        else:
            spans.append([code, code])
    ranges = "".join(re.escape(chr(a)) + ("-" + re.escape(chr(b)) if b > a else "") for a, b in spans)
    return re.compile(f"[{ranges}]+")


_RUNS = {  # runs of unsafe characters, per set of kept layout characters
    kept: _runs_of([c for c in _UNSAFE_CODES if chr(c) not in kept]) for kept in ("", "\n", "\t", "\n\t")
}


def visible(value: object, keep: str = "") -> str:
    """``str(value)`` with every control, bidi and separator character written as an escape.

    The characters in ``keep`` (only ``"\\n"`` and ``"\\t"`` are honoured) stay raw."""
    text = value if isinstance(value, str) else str(value)
    kept = "".join(c for c in "\n\t" if c in keep)
    return _RUNS[kept].sub(lambda m: m.group().translate(_TABLE), text)


_JSON_UNSAFE = re.compile(f"[\x00-\x09\x0b-\x1f\x7f-\x9f{BIDI_AND_SEPARATORS}\ud800-\udfff]")


def visible_json(text: str) -> str:
    """JSON text (``json.dumps(..., ensure_ascii=False)``) with the characters :func:`visible` escapes
    written as JSON ``\\uNNNN`` escapes: the same JSON value, safe to print.

    Outside its strings JSON text holds only ASCII punctuation, letters, digits and whitespace, and
    ``json.dumps`` already escapes C0 controls inside them, so this escapes what it leaves raw (DEL,
    C1, bidi and separator characters, lone surrogates) where it stands: inside a string, where the
    escape decodes to the same character. Newlines (an indented document's layout) stay."""
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
