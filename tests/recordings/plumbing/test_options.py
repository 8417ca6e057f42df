"""``options_from``: a dataclass from the flags of its field names, renamed or derived ones given."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import pytest

from finmcp.recordings.plumbing.options import options_from


@dataclass(frozen=True)
class Opts:
    db: str
    run: str | None = None
    full: bool = False


def test_fields_come_from_the_flags_of_their_names_and_given_ones_win() -> None:
    args = argparse.Namespace(db="t.sqlite", run="r", full=False, other="ignored")
    assert options_from(Opts, args) == Opts("t.sqlite", "r", False)
    assert options_from(Opts, args, full=True) == Opts("t.sqlite", "r", True)


def test_a_field_without_its_flag_is_an_error_not_a_default() -> None:
    with pytest.raises(AttributeError, match="run"):
        options_from(Opts, argparse.Namespace(db="t.sqlite", full=False))
