"""Recovery metrics on hand-built traces: each definition of evaluator/metrics/recovery.py, one case each."""

from __future__ import annotations

import json

from finmcp.evaluator.inputs.fault_trace import FaultTrace, TracedCall
from finmcp.evaluator.metrics.recovery import gives_up, recovery_metrics

S = 1_000_000_000


def _call(sample: str, tool: str, ok: bool = True, kind: str | None = None, transient: bool = True,
          t: float = 0.0, turn: int = 0, repeat: bool = False, retry_after: float = 0.0, args: str = "a") -> TracedCall:  # fmt: skip
    marker = None
    if kind is not None:
        marker = {"kind": kind, "transient": transient, "repeat": repeat, "retry_after": retry_after}
    return TracedCall(
        sample, 0, turn, tool, json.dumps({"x": args}), ok, marker, int(t * S), int(t * S) + 1000
    )


def test_recovered_retried_honoured_and_gave_up() -> None:
    calls = [
        # s1: a rate limit retried too early (not honoured), then again after the wait: recovered
        _call("s1", "Get", False, "rate_limit", t=0.0, retry_after=1.0),
        _call("s1", "Get", False, "rate_limit", t=0.1, repeat=True, retry_after=1.0),
        _call("s1", "Get", True, t=1.5),
        # s2: a permanent error not retried (appropriate), reply gives up
        _call("s2", "Get", False, "is_error", transient=False),
        # s3: a transient rpc error never retried (not recovered, not appropriate), reply invents
        _call("s3", "Get", False, "rpc_error"),
        # s4: a silent fault: not counted in gave-up; a tool that may act sent twice
        _call("s4", "Get", True, "wrong_values"),
        _call("s4", "Order", True, args="buy"),
        _call("s4", "Order", True, args="buy"),
    ]
    trace = FaultTrace("r", calls, {"Get": True, "Order": False})
    answers = {
        ("s1", 0): ["NAV is 1.23"],
        ("s2", 0): ["抱歉，无法获取数据"],
        ("s3", 0): ["NAV is 1.23"],
        ("s4", 0): ["ok"],
    }
    block = recovery_metrics(trace, answers, bootstrap=50)
    kinds = block["by_kind"]
    assert block["faults"] == 4  # the repeat is the same fault
    assert kinds["rate_limit"]["recovered"]["value"] == 1.0
    assert kinds["rate_limit"]["retry_after_honoured"]["value"] == 0.0  # the first retry came too early
    assert kinds["rate_limit"]["appropriate_retry"]["value"] == 0.0
    assert kinds["is_error"]["permanent_not_retried"]["value"] == 1.0
    assert kinds["is_error"]["appropriate_retry"]["value"] == 1.0
    assert (
        kinds["rpc_error"]["recovered"]["value"] == 0.0
        and kinds["rpc_error"]["transient_retried"]["value"] == 0.0
    )
    assert kinds["signalled"]["faults"] == 3 and kinds["silent"]["faults"] == 1
    assert (
        block["gave_up_cleanly"]["samples"] == 2 and block["gave_up_cleanly"]["value"] == 0.5
    )  # s2 yes, s3 no
    assert block["repeated_acting"]["pairs"] == 1
    assert block["delta_vs_clean"] is None
    lo, hi = kinds["all"]["recovered"]["lo"], kinds["all"]["recovered"]["hi"]
    assert lo is not None and hi is not None and lo <= kinds["all"]["recovered"]["value"] <= hi


def test_give_up_rule() -> None:
    assert gives_up("I could not complete this request")
    assert gives_up("数据服务调用失败，请稍后再试")
    assert not gives_up("The fund's NAV on 2024-05-31 was 1.2345")
    assert not gives_up("")
