"""Protocol eras: which versions are stateless, including versions newer than any this code knows."""

from __future__ import annotations

import pytest

from finmcp.recordings.plumbing import protocol
from finmcp.recordings.plumbing.protocol import (
    HANDSHAKE_VERSIONS,
    STATELESS_VERSIONS,
    check_version,
    era_label,
    era_of,
    is_handshake,
    is_known,
    is_stateless,
    stored_era,
)


def test_the_lists_are_the_sdks():
    from mcp_types import version as sdk

    assert HANDSHAKE_VERSIONS == sdk.HANDSHAKE_PROTOCOL_VERSIONS
    assert STATELESS_VERSIONS == sdk.MODERN_PROTOCOL_VERSIONS
    assert protocol.LATEST_HANDSHAKE_VERSION == sdk.LATEST_HANDSHAKE_VERSION == "2025-11-25"
    assert protocol.LATEST_STATELESS_VERSION == sdk.LATEST_MODERN_VERSION == "2026-07-28"


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
def test_released_handshake_versions(version):
    assert era_of(version) == "handshake" and is_handshake(version) and is_known(version)
    assert not is_stateless(version) and era_label(version) == "handshake"


def test_the_first_stateless_version():
    assert era_of("2026-07-28") == "stateless" and is_stateless("2026-07-28") and is_known("2026-07-28")
    assert era_label("2026-07-28") == "stateless"  # the label traces store


def test_stored_era_reads_an_older_trace_s_label_in_today_s_words():
    assert stored_era("2026-07-28") == "stateless"  # what traces stored before the era had one word
    assert stored_era("stateless") == "stateless" and stored_era("handshake") == "handshake"
    assert stored_era(None) is None


@pytest.mark.parametrize("version", ["2026-07-29", "2027-01-15", "2031-12-31"])
def test_a_future_dated_version_is_stateless_not_handshake(version):
    assert era_of(version) == "stateless" and is_stateless(version) and not is_handshake(version)
    assert not is_known(version)
    assert era_label(version) == "stateless"
    assert check_version(version) == version


def test_an_unreleased_date_inside_the_handshake_years_is_handshake():
    assert era_of("2025-01-01") == "handshake" and not is_known("2025-01-01")


@pytest.mark.parametrize(
    "version",
    [
        None,
        20260728,
        "",
        "latest",
        "2026-7-28",
        "2026-07-28 ",
        "2026-02-30",
        "2024-11-04",
        "1999-01-01",
        {"v": 1},
    ],
)
def test_malformed_or_older_versions_are_invalid_with_a_clear_error(version):
    assert era_of(version) == "invalid"
    assert not is_stateless(version) and not is_handshake(version) and not is_known(version)
    assert era_label(version) == "handshake"  # what a trace records for a version it cannot place
    with pytest.raises(ValueError, match="protocol version"):
        check_version(version)
