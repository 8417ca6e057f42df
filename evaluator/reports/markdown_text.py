"""Untrusted text (run ids, sample ids, tool names, tags, warnings) placed into CommonMark safely.

``report.md`` and ``compare.md`` are read in Markdown previewers that render raw HTML, so a run id
like ``a`<img src=x onerror=alert(1)>``` must come out as the text it is. Two forms:

- :func:`md_text`: inline text. Every character that can open an inline construct is
  backslash-escaped (CommonMark lets any ASCII punctuation be escaped): ``<`` (raw HTML, autolinks),
  ``&`` (entities), backticks (code spans), ``[ ] !`` (links, images), ``* _ ~`` (emphasis),
  ``|`` (a GFM table cell's end), ``#`` and ``\\`` itself; a leading ``-``, ``+``, ``>``, ``=`` or
  ``1.`` cannot start a block. Safe in a paragraph, a list item, a heading and a table cell.
- :func:`md_code`: a code span whose fence is one backtick longer than the longest run of backticks
  in the text (CommonMark §6.1), padded with a space when the text starts or ends with a backtick,
  so no backtick inside can close it; a code span's content is never parsed as HTML. Not for table
  cells (a ``|`` inside a code span still ends a GFM cell): use :func:`md_text` there.

Both first make control characters visible (:func:`recordings.plumbing.terminal.visible`), so a
newline cannot end the line and ``score`` printing Markdown on a terminal cannot drive it.
"""

from __future__ import annotations

import re

from finmcp.recordings.plumbing.terminal import visible

_INLINE = re.compile(r"[\\`*_\[\]<>&|~!#]")
_BLOCK_START = re.compile(r"^(?:[-+>=]|\d{1,9}(?=[.)]))")


def md_text(value: object) -> str:
    """``value`` as inline CommonMark text that renders as exactly its (visible) characters."""
    text = _INLINE.sub(lambda m: "\\" + m.group(), visible(value))
    start = _BLOCK_START.match(text)
    if start is None:
        return text
    if start.group()[0].isdigit():  # "1." or "1)" would start an ordered list
        end = start.end()
        return text[:end] + "\\" + text[end:]
    return "\\" + text


def md_code(value: object) -> str:
    """``value`` as a CommonMark code span no backtick inside it can close."""
    text = visible(value)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    if text.startswith("`") or text.endswith("`") or (text.startswith(" ") and text.endswith(" ")):
        text = f" {text} "  # one space each side is stripped by the renderer
    return f"{fence}{text}{fence}"
