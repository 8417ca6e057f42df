"""The code blocks of a Markdown document, with the ``<!-- readme-test: ... -->`` directives before them.

Blocks are fenced (```` ```lang ````, also indented inside a list item) or indented by four spaces
after a blank line (outside lists). A directive is an HTML comment on a line of its own; it applies
to the next block:

- ``<!-- readme-test: parse-only (why) -->``: the block's commands are parsed, not run (``make -n``;
  a finmcp command's own argument parser);
- ``<!-- readme-test: text (why) -->``: the block is not code (a diagram, URL patterns);
- ``<!-- readme-test: placeholder OLD = tmp -->``: ``OLD`` in the block stands for a folder of the
  reader's; the test puts its temporary folder there;
- ``<!-- readme-test: file NAME -->``: the reader saves the block as ``NAME`` (a later command reads it).

Anything in parentheses is a note for the reader of the source.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})\s*(?P<lang>[\w+-]*)\s*$")
_DIRECTIVE = re.compile(r"^\s*<!--\s*readme-test:\s*(?P<body>.*?)\s*-->\s*$")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s")
_NOTE = re.compile(r"\s*\(.*\)\s*$")
KINDS = frozenset({"parse-only", "text", "placeholder", "file"})


class MarkdownError(ValueError):
    """A directive the test does not understand, or one that applies to no block."""


@dataclass(frozen=True)
class Directive:
    """``kind`` (parse-only, text, placeholder, file) and its arguments (placeholder: the text it stands
    for; file: the file name)."""

    kind: str
    argument: str = ""


@dataclass
class Block:
    """One code block: its info string (``""`` for none, ``"indented"``), text, first line and directives."""

    lang: str
    text: str
    line: int
    directives: list[Directive] = field(default_factory=list)

    def has(self, kind: str) -> bool:
        """True when a directive of that kind applies to this block."""
        return any(d.kind == kind for d in self.directives)

    def placeholders(self) -> dict[str, str]:
        """``{text in the block: what the test puts there}`` from ``placeholder OLD = NEW`` directives."""
        pairs = (d.argument.partition("=") for d in self.directives if d.kind == "placeholder")
        return {old.strip(): new.strip() for old, _, new in pairs}

    def file(self) -> str | None:
        """The name a ``file NAME`` directive saves the block as, or None."""
        return next((d.argument for d in self.directives if d.kind == "file"), None)


def parse_directive(body: str, line: int) -> Directive:
    """One directive from the text between ``readme-test:`` and ``-->``."""
    kind, _, argument = _NOTE.sub("", body).partition(" ")
    if kind not in KINDS:
        raise MarkdownError(f"line {line}: unknown readme-test directive {kind!r} (known: {sorted(KINDS)})")
    if kind == "placeholder" and "=" not in argument:
        raise MarkdownError(f"line {line}: expected 'placeholder OLD = NEW', got {body!r}")
    if kind == "file" and (not argument.strip() or "/" in argument):
        raise MarkdownError(
            f"line {line}: expected 'file NAME' (a name in the reader's folder), got {body!r}"
        )
    return Directive(kind, argument.strip())


def code_blocks(markdown: str) -> list[Block]:
    """Every code block of ``markdown`` in document order, with the directives that apply to it."""
    lines = markdown.splitlines()
    blocks: list[Block] = []
    pending: list[Directive] = []
    in_list = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if directive := _DIRECTIVE.match(line):
            pending.append(parse_directive(directive["body"], i + 1))
            i += 1
            continue
        if fence := _FENCE.match(line):
            indent, marker = len(fence["indent"]), fence["fence"]
            end = i + 1
            while end < len(lines) and lines[end].strip() != marker:
                end += 1
            if end == len(lines):
                raise MarkdownError(f"line {i + 1}: unclosed code fence")
            body = [
                text[indent:] if not text[:indent].strip() else text.lstrip() for text in lines[i + 1 : end]
            ]
            blocks.append(Block(fence["lang"], "\n".join(body), i + 2, pending))
            pending = []
            i = end + 1
            continue
        blank_before = i == 0 or not lines[i - 1].strip()
        if line.startswith("    ") and line.strip() and blank_before and not in_list:
            end = i
            while end < len(lines) and (lines[end].startswith("    ") or not lines[end].strip()):
                end += 1
            body = [text[4:] for text in lines[i:end]]
            while body and not body[-1].strip():
                body.pop()
            blocks.append(Block("indented", "\n".join(body), i + 1, pending))
            pending = []
            i = end
            continue
        if line.strip():
            if _LIST_ITEM.match(line):
                in_list = True
            elif not line[0].isspace():
                in_list = False
            if line.startswith("#") and pending:
                raise MarkdownError(
                    f"line {i + 1}: a readme-test directive before a heading applies to no block"
                )
        i += 1
    if pending:
        raise MarkdownError("a readme-test directive at the end applies to no block")
    return blocks
