"""The forwarded exchange's lifecycle: one Phase and its transition table (proxy/http_exchange.py)."""

from __future__ import annotations

import pytest

from finmcp.proxy.http_exchange import NEXT, Exchange, IllegalTransition, Phase


def bare(state: Phase) -> Exchange:
    exchange = Exchange.__new__(Exchange)  # only the phase matters here
    exchange.state = state
    return exchange


def test_every_phase_can_be_abandoned_and_done_is_final() -> None:
    assert set(NEXT) == set(Phase)
    assert all(Phase.DONE in NEXT[p] for p in Phase if p is not Phase.DONE)
    assert NEXT[Phase.DONE] == frozenset()
    assert NEXT[Phase.FINISHING] == {Phase.DONE}


def test_a_request_is_sent_again_at_most_once() -> None:
    exchange = bare(Phase.SENT)
    exchange._to(Phase.RECONNECTING)
    exchange._to(Phase.RESENT)
    with pytest.raises(IllegalTransition, match="resent -> reconnecting"):
        exchange._to(Phase.RECONNECTING)
    assert exchange.state is Phase.RESENT


@pytest.mark.parametrize(
    ("start", "target"),
    [
        (Phase.STREAMING, Phase.HELD),  # a head that went out cannot be held back again
        (Phase.FINISHING, Phase.STREAMING),
        (Phase.CONNECTING, Phase.STREAMING),  # no response before the request was sent
        (Phase.DONE, Phase.FINISHING),
    ],
)
def test_moves_the_table_does_not_list_raise(start: Phase, target: Phase) -> None:
    exchange = bare(start)
    with pytest.raises(IllegalTransition):
        exchange._to(target)
    assert exchange.state is start and exchange.over is (start in (Phase.FINISHING, Phase.DONE))
