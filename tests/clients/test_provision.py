"""The provisioning script's stamp: a folder counts as ready only when built, completely, from today's pins."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.clients import provision


@pytest.fixture
def clients_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FINMCP_CLIENTS_DIR", str(tmp_path))
    return tmp_path


def test_a_folder_is_ready_only_with_the_stamp_of_todays_pins(clients_root: Path) -> None:
    env = provision.CLIENTS["ts-sdk"]
    assert provision.folder("ts-sdk") == clients_root / "ts-sdk"
    assert not provision.ready("ts-sdk")  # nothing built
    (clients_root / "ts-sdk").mkdir()
    assert not provision.ready("ts-sdk")  # a build that stopped before its stamp
    stamp = clients_root / "ts-sdk" / provision.STAMP
    stamp.write_text(json.dumps(env.stamp()))
    assert provision.ready("ts-sdk")
    assert provision.provision("ts-sdk") == "ts-sdk: up to date"  # a second run does nothing
    stamp.write_text(json.dumps({**env.stamp(), "pins": ["@modelcontextprotocol/sdk@0.0.1"]}))
    assert not provision.ready("ts-sdk")  # a changed pin rebuilds
    stamp.write_text("{not json")
    assert not provision.ready("ts-sdk")


def test_unknown_client_names_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        provision.main(["fastmcp", "bogus"])
    assert stopped.value.code == 2
    assert "unknown environment bogus (known: fastmcp, pydantic-ai" in capsys.readouterr().err


def test_check_reports_each_client(clients_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert provision.main(["--check"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"{name}: missing ({clients_root / name})" for name in provision.ENVIRONMENTS]
