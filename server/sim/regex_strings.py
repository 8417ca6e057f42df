"""Strings that match a regular expression, for output and argument schemas with a ``pattern``.

A tiny parser for Python's regular-expression syntax (the public ``re`` module validates the pattern
first) builds a small tree, and :func:`sample_pattern` walks it with the caller's seeded RNG. The tree
takes the shapes CPython's own parser gives (a one-character class is a literal; alternatives that
share a leading item have it moved out; alternatives of single characters become one class), so the
RNG is consumed the same way the simulator always has and outputs stay byte-identical.

Supported: literals and escapes (``\\d \\w \\s`` and their negations, ``\\xhh``, ``\\uhhhh``, octal,
``\\N{...}``), ``.``, classes with ranges and negation, groups (capturing, named, non-capturing,
atomic, with inline flags), alternation, the quantifiers ``? * + {m} {m,} {,n} {m,n}`` (lazy and
possessive too), anchors, look-arounds, back-references, conditionals and comments (the last five
generate nothing). Verbose mode (``(?x)``) skips white space and ``#`` comments. The shipped
inventories use ``^[0-9]{6}$`` and ``^[0-9]+$``.
"""

from __future__ import annotations

import random
import re
import string
import unicodedata
from dataclasses import dataclass
from typing import Any

_CATEGORY_CHARS = {
    "d": string.digits,
    "w": string.ascii_letters + string.digits + "_",
    "s": " ",
    "D": string.ascii_letters,
    "W": "-",
    "S": string.ascii_letters,
}
"""Characters generated for ``\\d \\w \\s \\D \\W \\S`` (inside and outside classes)."""
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\"}
_ANCHOR_ESCAPES = frozenset("AbBZ")
_REPEAT_CHARS = "*+?{"
_SPECIAL = ".\\[{()*+?^$|"
_MAX_REPEAT = None  # an unbounded repeat

# Nodes (tuples, compared by value like CPython's parser items):
#   ("lit", ch)  ("not_lit", ch)  ("any",)  ("in", ((kind, value), ...))  ("at", anchor)  ("ref", group)
#   ("repeat", lo, hi, Seq)  ("group", Seq)  ("branch", (Seq, ...))  ("nothing", Seq)
# where class items are ("lit", ch), ("range", (lo, hi)), ("cat", letter) and ("negate", None).


class Seq(list):
    """A sequence of nodes that compares by identity, like CPython's ``SubPattern`` objects."""

    __eq__ = object.__eq__
    __hash__ = object.__hash__  # type: ignore[assignment]  # list declares __hash__ = None; a Seq hashes by identity


class _Unsupported(Exception):
    """A construct the tiny parser does not know (the pattern is then not sampled)."""


@dataclass
class _Source:
    text: str
    pos: int = 0
    verbose: bool = False

    def peek(self) -> str | None:
        return self.text[self.pos] if self.pos < len(self.text) else None

    def get(self) -> str | None:
        ch = self.peek()
        if ch is not None:
            self.pos += 1
        return ch

    def match(self, s: str) -> bool:
        if self.text.startswith(s, self.pos):
            self.pos += len(s)
            return True
        return False

    def take_while(self, n: int, chars: str) -> str:
        out = ""
        while len(out) < n and (ch := self.peek()) is not None and ch in chars:
            self.pos += 1
            out += ch
        return out

    def until(self, end: str) -> str:
        i = self.text.find(end, self.pos)
        if i < 0:
            raise _Unsupported(f"missing {end!r}")
        out, self.pos = self.text[self.pos : i], i + len(end)
        return out


def _code_escape(src: _Source, letter: str) -> str:
    """The character of a ``\\x``, ``\\u``, ``\\U``, ``\\N{...}`` or octal escape (letter already read)."""
    if letter == "x":
        return chr(int(src.take_while(2, string.hexdigits), 16))
    if letter == "u":
        return chr(int(src.take_while(4, string.hexdigits), 16))
    if letter == "U":
        return chr(int(src.take_while(8, string.hexdigits), 16))
    if letter == "N":
        src.match("{")
        return unicodedata.lookup(src.until("}"))
    return chr(int(letter + src.take_while(2, "01234567"), 8))


def _class_escape(src: _Source) -> tuple[str, Any]:
    letter = src.get() or ""
    if letter in _ESCAPES:
        return ("lit", _ESCAPES[letter])
    if letter in _CATEGORY_CHARS:
        return ("cat", letter)
    if letter in "xuUN" or letter in "01234567":
        return ("lit", _code_escape(src, letter))
    return ("lit", letter)


def _class(src: _Source) -> tuple:
    negate = src.match("^")
    items: list[tuple[str, Any]] = []
    while True:
        ch = src.get()
        if ch is None:
            raise _Unsupported("unterminated class")
        if ch == "]" and items:
            break
        first = _class_escape(src) if ch == "\\" else ("lit", ch)
        if src.peek() == "-" and src.text[src.pos + 1 : src.pos + 2] not in ("]", ""):
            src.get()
            other = src.get() or ""
            second = _class_escape(src) if other == "\\" else ("lit", other)
            items.append(("range", (ord(first[1]), ord(second[1]))))
        elif src.peek() == "-":  # a trailing '-' is a literal
            src.get()
            items += [first, ("lit", "-")]
        else:
            items.append(first)
    items = list(dict.fromkeys(items))
    if len(items) == 1 and items[0][0] == "lit":
        return ("not_lit", items[0][1]) if negate else items[0]
    return ("in", ((("negate", None),) if negate else ()) + tuple(items))


def _escape(src: _Source) -> tuple:
    letter = src.get() or ""
    if letter in _CATEGORY_CHARS:
        return ("in", (("cat", letter),))
    if letter in _ANCHOR_ESCAPES:
        return ("at", letter)
    if letter in _ESCAPES:
        return ("lit", _ESCAPES[letter])
    if letter.isdigit() and letter != "0":
        digits = letter + src.take_while(1, string.digits)
        if (
            len(digits) == 2
            and digits[0] in "01234567"
            and digits[1] in "01234567"
            and (third := src.peek()) is not None
            and third in "01234567"
        ):
            src.pos += 1
            return ("lit", chr(int(digits + third, 8)))
        return ("ref", digits)  # a back-reference generates nothing
    if letter in "xuUN0":
        return ("lit", _code_escape(src, letter))
    return ("lit", letter)


def _quantifier(src: _Source) -> tuple[int, int | None] | None:
    """(lo, hi) of the quantifier at the current position (consumed), or None when there is none."""
    start = src.pos
    ch = src.get()
    if ch == "?":
        return 0, 1
    if ch == "*":
        return 0, _MAX_REPEAT
    if ch == "+":
        return 1, _MAX_REPEAT
    lo = src.take_while(10**9, string.digits)
    hi: str | None = src.take_while(10**9, string.digits) if src.match(",") else lo
    if src.peek() == "}" and src.text[start + 1] != "}":
        src.get()
        return int(lo or 0), (int(hi) if hi else _MAX_REPEAT)
    src.pos = start
    return None


def _group(src: _Source) -> tuple | None:
    """The node of a group whose ``(`` was read; None for a group that leaves no node (global flags)."""
    if not src.match("?"):
        return ("group", _alternation(src, close=True))
    if src.match(":"):
        return ("group", _alternation(src, close=True))
    if src.match(">"):
        return ("group", _alternation(src, close=True))
    if src.match("P<") or (src.peek() == "<" and src.text[src.pos + 1 : src.pos + 2] not in ("=", "!")):
        src.match("<")
        src.until(">")
        return ("group", _alternation(src, close=True))
    if src.match("P="):
        return ("ref", src.until(")"))
    if src.match("#"):
        src.until(")")
        return None
    for look in ("=", "!", "<=", "<!"):
        if src.match(look):
            _alternation(src, close=True)
            return ("nothing", Seq())
    if src.match("("):
        src.until(")")
        _alternation(src, close=True)
        return ("nothing", Seq())
    flags = src.take_while(10, "aiLmsux-")
    if "x" in flags.split("-")[0]:
        src.verbose = True
    if src.match(")"):
        return None
    if src.match(":"):
        return ("group", _alternation(src, close=True))
    raise _Unsupported(f"group at {src.pos}")


def _sequence(src: _Source) -> Seq:
    items = Seq()
    while True:
        ch = src.peek()
        if ch is None or ch in "|)":
            return items
        src.get()
        if src.verbose and ch in " \t\n\r\v\f":
            continue
        if src.verbose and ch == "#":
            while src.peek() not in (None, "\n"):
                src.get()
            continue
        if ch == "\\":
            items.append(_escape(src))
        elif ch not in _SPECIAL:
            items.append(("lit", ch))
        elif ch == "[":
            items.append(_class(src))
        elif ch in _REPEAT_CHARS:
            src.pos -= 1
            bounds = _quantifier(src)
            if bounds is None:  # a '{' that starts no quantifier is a literal
                src.get()
                items.append(("lit", "{"))
                continue
            item = items[-1:]
            if item and item[0][0] == "group":
                item = item[0][1]
            if not src.match("?"):
                src.match("+")
            items[-1] = ("repeat", bounds[0], bounds[1], Seq(item))
        elif ch == ".":
            items.append(("any",))
        elif ch == "(":
            node = _group(src)
            if node is not None:
                items.append(node)
        elif ch in "^$":
            items.append(("at", ch))


def _alternation(src: _Source, close: bool = False) -> Seq:
    alternatives = [_sequence(src)]
    while src.match("|"):
        alternatives.append(_sequence(src))
    if close and not src.match(")"):
        raise _Unsupported("missing )")
    if len(alternatives) == 1:
        return alternatives[0]
    out = Seq()
    while all(alternatives) and all(a[0] == alternatives[0][0] for a in alternatives):
        out.append(alternatives[0][0])
        for a in alternatives:
            del a[0]
    chars: list[tuple[str, Any]] = []
    for a in alternatives:
        if len(a) != 1 or not (a[0][0] == "lit" or (a[0][0] == "in" and a[0][1][0][0] != "negate")):
            out.append(("branch", tuple(alternatives)))
            return out
        chars.extend([a[0]] if a[0][0] == "lit" else a[0][1])
    out.append(("in", tuple(dict.fromkeys(chars))))
    return out


def parse_pattern(pattern: str) -> Seq:
    """The sampling tree of ``pattern`` (raises ``re.error`` for an invalid pattern)."""
    re.compile(pattern)
    src = _Source(pattern)
    tree = _alternation(src)
    if src.peek() is not None:
        raise _Unsupported(f"unexpected {src.peek()!r}")
    return tree


def _class_chars(items: tuple) -> str:
    chars: list[str] = []
    negate = False
    for kind, value in items:
        if kind == "negate":
            negate = True
        elif kind == "lit":
            chars.append(value)
        elif kind == "range":
            lo, hi = value
            chars.extend(chr(c) for c in range(lo, min(hi, lo + 94) + 1))
        elif kind == "cat":
            chars.extend(_CATEGORY_CHARS[value])
    if negate:
        banned = set(chars)
        return "".join(c for c in string.ascii_letters + string.digits if c not in banned) or "~"
    return "".join(chars) or "a"


def _emit(nodes: Seq, rng: random.Random, out: list[str]) -> None:
    for node in nodes:
        kind = node[0]
        if kind == "lit":
            out.append(node[1])
        elif kind == "not_lit":
            out.append("a" if node[1] != "a" else "b")
        elif kind == "any":
            out.append(rng.choice(string.ascii_lowercase))
        elif kind == "in":
            out.append(rng.choice(_class_chars(node[1])))
        elif kind == "repeat":
            _, lo, hi, sub = node
            hi = lo + 3 if hi is None else hi
            for _ in range(rng.randint(lo, max(lo, min(hi, lo + 3)))):
                _emit(sub, rng, out)
        elif kind == "group":
            _emit(node[1], rng, out)
        elif kind == "branch":
            _emit(rng.choice(node[1]), rng, out)
        # anchors, look-arounds, back-references and conditionals generate nothing


def sample_pattern(pattern: str, rng: random.Random, tries: int = 8) -> str | None:
    """A string that ``re.search(pattern, s)`` accepts, or None when none was found."""
    try:
        tree = parse_pattern(pattern)
        compiled = re.compile(pattern)
    except (re.error, TypeError, _Unsupported, ValueError, KeyError):
        return None
    for _ in range(tries):
        out: list[str] = []
        try:
            _emit(tree, rng, out)
        except (TypeError, ValueError, IndexError):
            return None
        text = "".join(out)
        if compiled.search(text):
            return text
    return None
