"""recordings/plumbing/terminal.py: what a terminal is shown of untrusted text (issue 30, item 1)."""

from __future__ import annotations

import json

import pytest

from finmcp.recordings.plumbing.terminal import visible, visible_json

ATTACKS = {
    "\x1b[2J": "\\x1b[2J",  # clear the screen
    "\x1b]0;pwned\x07": "\\x1b]0;pwned\\x07",  # set the window title (OSC 0, BEL)
    "\r\x1b[K": "\\r\\x1b[K",  # overwrite the line
    "\x1b]8;;http://x/\x1b\\": "\\x1b]8;;http://x/\\x1b\\",  # OSC 8 link, ST
    "\x9b2J": "\\x9b2J",  # 8-bit CSI (C1)
    "\x7f\x00\x85": "\\x7f\\x00\\x85",  # DEL, NUL, NEL
    "\u202eevil\u2066\u200f": "\\u202eevil\\u2066\\u200f",  # bidi overrides, isolates, marks
    "a\u2028b": "a\\u2028b",  # line separator
    "\ud800": "\\ud800",  # a lone surrogate: UTF-8 cannot print it
    "a\nb\tc": "a\\nb\\tc",  # a one-line field keeps no layout
}


@pytest.mark.parametrize(("text", "shown"), ATTACKS.items())
def test_every_control_is_shown_as_an_escape(text, shown):
    assert visible(text) == shown
    visible(text).encode("utf-8")  # printable on any UTF-8 terminal


def test_layout_characters_stay_only_when_kept():
    assert visible("a\nb\tc\rd", keep="\n\t") == "a\nb\tc\\rd"
    assert visible("a\rb", keep="\r") == "a\\rb"  # only newline and tab can be kept


def test_ordinary_text_is_unchanged():
    text = '华夏成长 — ünïcode ✓ C:\\path "quoted" emoji 🙂'
    assert visible(text) == text and visible_json(json.dumps(text, ensure_ascii=False)) == json.dumps(
        text, ensure_ascii=False
    )


def test_json_escapes_are_lossless():
    value = {"t": "".join(ATTACKS), "k\x9b": ["\u202e", 1.5]}
    text = visible_json(json.dumps(value, ensure_ascii=False, indent=2))
    assert visible(text, keep="\n") == text  # nothing left to escape but the layout
    assert json.loads(text) == value
