"""The one reader of parameter descriptions, and the two ways its callers read a choice list."""

from __future__ import annotations

from finmcp.tool_specs import param_text

WITH_DEFAULT = "Time period, a string. One of: 24h, 7d, 30d. Default: 24h."
ELIDED = "Date to query. Options: 20200331, 20200630, ...."
QUOTED_EMPTY = (
    'Price adjustment mode. One of: "" (unadjusted), qfq (forward-adjusted), hfq (backward-adjusted).'
)


def test_choices_stop_at_default_or_run_to_the_end() -> None:
    assert param_text.choices(WITH_DEFAULT) == ["24h", "7d", "30d"]
    assert param_text.choices(WITH_DEFAULT, stop_at_default=False) == ["24h", "7d", "30d. Default: 24h"]


def test_choices_keep_or_drop_empty_options() -> None:
    assert param_text.choices(QUOTED_EMPTY) == ["qfq", "hfq"]
    assert param_text.choices(QUOTED_EMPTY, keep_empty=True) == ["", "qfq", "hfq"]
    assert param_text.choices(ELIDED) == ["20200331", "20200630"]
    assert param_text.choices(ELIDED, keep_empty=True) == ["20200331", "20200630", ""]


def test_choices_clean_glosses_quotes_elisions_and_fill_years() -> None:
    assert param_text.choices("One of: “a”, b (bee), c（see）, d..., e, ….") == ["a", "b", "c", "d", "e"]
    assert param_text.choices("Report. Options: XXXX0331, XXXX0630.", year=2023) == ["20230331", "20230630"]
    assert param_text.choices("No list here.") == []


def test_default_example_and_stated_format() -> None:
    assert param_text.default(WITH_DEFAULT) == "24h"
    assert param_text.default("Page size.") is None
    assert param_text.example("Stock code. Example: 600519.") == "600519"
    assert param_text.example("Nothing.") is None
    assert param_text.stated_date_format("Start date. Format: YYYY-MM-DD HH:mm:ss.") == "YYYY-MM-DD HH:mm:ss"
    assert param_text.stated_date_format("Start date.") is None


def test_date_format_of_a_value_and_named_in_text() -> None:
    assert param_text.date_format_of_value("20200511") == "YYYYMMDD"
    assert param_text.date_format_of_value("1700000000000") == "Unix timestamp (milliseconds)"
    assert param_text.date_format_of_value("soon") == ""
    assert param_text.date_format_named("Start, as YYYY-MM-DD HH:MM:SS.") == "YYYY-MM-DD HH:MM:SS"
    assert param_text.date_format_named("Unix timestamp in seconds.") == "unix"
    assert param_text.date_format_named("Trading day, e.g. 20240105.") == "YYYYMMDD"
    assert param_text.date_format_named("A name.") is None
