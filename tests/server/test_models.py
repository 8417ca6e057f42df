"""Latency and fault models, argument-error messages, and the HTTP security middleware (in process)."""

from __future__ import annotations

import json
import statistics

import anyio
import pytest

from finmcp.recordings.plumbing.seeding import unit_draw
from finmcp.server.faults import FaultSpecError, parse_faults
from finmcp.server.latency import LatencySpecError, parse_latency
from finmcp.server.security import SecurityMiddleware, SecuritySettings
from finmcp.server.seeded import OccurrenceCounter
from finmcp.server.validation import compile_schema, describe_errors

# ---------------------------------------------------------------- latency


def test_latency_kinds():
    assert parse_latency("none").delay_ms("T", "k", 0) == 0
    assert parse_latency("none").is_zero and parse_latency("fixed:0").is_zero
    assert parse_latency("fixed:75").delay_ms("T", "k", 3) == 75
    recorded = parse_latency("recorded", fallback_ms=40)
    assert recorded.delay_ms("T", "k", 0, 120.5) == 120.5
    assert recorded.delay_ms("T", "k", 0, None) == 40


def test_lognormal_matches_its_quantiles_and_is_seeded():
    model = parse_latency("lognormal:100,400", seed=3)
    draws = [model.delay_ms("T", "k", i) for i in range(4000)]
    assert statistics.median(draws) == pytest.approx(100, rel=0.08)
    p99 = sorted(draws)[int(0.99 * len(draws))]
    assert p99 == pytest.approx(400, rel=0.2)
    assert draws == [parse_latency("lognormal:100,400", seed=3).delay_ms("T", "k", i) for i in range(4000)]
    assert draws != [parse_latency("lognormal:100,400", seed=4).delay_ms("T", "k", i) for i in range(4000)]


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ("fast", "expected none, recorded"),
        ("fixed:", "expected none, recorded"),
        ("fixed:abc", "'abc' is not a number"),
        ("fixed:-5", "must be a finite number >= 0"),
        ("lognormal:100", "two numbers"),
        ("lognormal:300,100", "P50 <= P99"),
        ("fixed:nan", "finite"),
    ],
)
def test_bad_latency_specs_say_what_is_expected(spec, needle):
    with pytest.raises(LatencySpecError, match=needle):
        parse_latency(spec)


# ---------------------------------------------------------------- faults and draws


def test_unit_draws_are_deterministic_and_uniform():
    draws = [unit_draw(1, "x", i) for i in range(5000)]
    assert draws == [unit_draw(1, "x", i) for i in range(5000)]
    assert all(0 < d < 1 for d in draws)
    assert statistics.mean(draws) == pytest.approx(0.5, abs=0.02)
    counter = OccurrenceCounter()
    assert [counter.next("t", "k"), counter.next("t", "k"), counter.next("t", "j")] == [0, 1, 0]


def test_fault_rules_parse_match_and_rates():
    plan = parse_faults(["Get*:error=0.2,timeout=0.1,timeout_ms=500", "Search*:empty=1"], seed=1)
    assert len(plan.rules) == 2 and plan.rules[0].timeout_ms == 500
    assert plan.rule_for("GetFundDiagnosis") is plan.rules[0]
    assert plan.rule_for("SearchFunds") is plan.rules[1]
    assert plan.rule_for("MonteCarloSimulate") is None and plan.decide("MonteCarloSimulate", "k", 0) is None
    kinds = [plan.decide("GetX", "k", i) for i in range(5000)]
    share = {k: sum(1 for d in kinds if d and d[0] == k) / len(kinds) for k in ("error", "timeout")}
    assert share["error"] == pytest.approx(0.2, abs=0.03) and share["timeout"] == pytest.approx(0.1, abs=0.02)
    assert all(plan.decide("SearchFunds", "k", i)[0] == "empty" for i in range(10))
    assert parse_faults(["A:error=0.5; B:empty=0.5"]).rules[1].pattern == "B"
    assert not parse_faults([])


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ("Get*", "expected PATTERN:KIND=RATE"),
        ("Get*:crash=0.1", "unknown fault kind 'crash'"),
        ("Get*:error=2", "between 0 and 1"),
        ("Get*:error=0.7,empty=0.6", "add up to more than 1"),
        ("Get*:error", "should be KIND=RATE"),
        ("Get*:error=x", "is not a number"),
        ("Get*:timeout_ms=5", "no fault kind"),
    ],
)
def test_bad_fault_rules_say_what_is_wrong(spec, needle):
    with pytest.raises(FaultSpecError, match=needle):
        parse_faults([spec])


# ---------------------------------------------------------------- argument errors


SCHEMA = {
    "type": "object",
    "properties": {
        "sortOrder": {"type": "string", "enum": ["", "升序", "降序"]},
        "codes": {"type": "array", "items": {"type": "string"}},
        "range": {"type": "object", "properties": {"start": {"type": "string"}}, "required": ["start"]},
    },
    "required": ["codes"],
    "additionalProperties": False,
}


def test_each_offending_field_is_named_with_allowed_values():
    validator = compile_schema(SCHEMA)
    messages = describe_errors(validator, {"sortOrder": "up", "codes": ["a", 5], "range": {}, "extra": 1})
    assert messages == [
        "extra: unknown argument (allowed: codes, range, sortOrder)",
        "codes[1]: 5 is not of type 'string'",
        "range.start: required argument is missing",
        "sortOrder: 'up' is not one of ['', '升序', '降序']",
    ]
    assert describe_errors(validator, {}) == ["codes: required argument is missing"]
    assert describe_errors(validator, {"codes": []}) == []


# ---------------------------------------------------------------- security middleware


async def _echo(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


def _request(app, path="/mcp", headers=(), method="POST"):
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers],
    }
    anyio.run(app, scope, receive, send)
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return sent[0]["status"], body


def test_host_and_origin_checks():
    app = SecurityMiddleware(_echo, SecuritySettings.build("127.0.0.1"))
    assert _request(app, headers=[("Host", "127.0.0.1:8765")])[0] == 200
    assert _request(app, headers=[("Host", "localhost:1")])[0] == 200
    assert _request(app, headers=[("Host", "[::1]:1")])[0] == 200
    status, body = _request(app, headers=[("Host", "evil.example:8765")])
    assert status == 421 and "DNS rebinding" in json.loads(body)["error"]
    assert _request(app, headers=[])[0] == 421
    assert _request(app, headers=[("Host", "127.0.0.1:1"), ("Origin", "http://localhost:3000")])[0] == 200
    assert _request(app, headers=[("Host", "127.0.0.1:1"), ("Origin", "https://evil.example")])[0] == 403
    assert _request(app, headers=[("Host", "127.0.0.1:1"), ("Origin", "null")])[0] == 403
    widened = SecurityMiddleware(
        _echo,
        SecuritySettings.build("127.0.0.1", allow_hosts=["mybox"], allow_origins=["https://ui.example"]),
    )
    assert _request(widened, headers=[("Host", "mybox:80"), ("Origin", "https://ui.example")])[0] == 200


def test_token_and_body_limit():
    app = SecurityMiddleware(_echo, SecuritySettings.build("127.0.0.1", token="s3cret", max_body=100))
    host = ("Host", "127.0.0.1:1")
    assert _request(app, headers=[host])[0] == 401
    assert _request(app, headers=[host, ("Authorization", "Bearer wrong")])[0] == 401
    assert _request(app, headers=[host, ("Authorization", "Bearer s3cret")])[0] == 200
    assert _request(app, path="/healthz", headers=[host], method="GET")[0] == 200
    auth = ("Authorization", "Bearer s3cret")
    assert _request(app, headers=[host, auth, ("Content-Length", "101")])[0] == 413
    assert _request(app, headers=[host, auth, ("Content-Length", "100")])[0] == 200
    assert _request(app, headers=[host, auth, ("Content-Length", "x")])[0] == 400
    with pytest.raises(ValueError, match="positive"):
        SecuritySettings.build("127.0.0.1", max_body=0)
