"""The viewer's Starlette app: a JSON API over one trace store (and a benchmark), and the page.

Pages (one HTML shell; ``static/app.js`` draws each from the API):

- ``/`` runs; ``/runs/{run}`` its samples; ``/runs/{run}/samples/{sample}[?compare=RUN2&trial=K]``.

API (all GET, JSON):

- ``/api/runs``; ``/api/cursor`` (the store's newest call id: pages poll it);
- ``/api/runs/{run}/samples?after=&limit=&status=&tool=&failed=1&q=&min_f1=&max_f1=`` - a keyset page;
  ``min_f1``/``max_f1`` and, with a benchmark, ``failed`` (EMR 0 counts as failed) use the run's
  per-sample scores, computed once per store change and kept;
- ``/api/runs/{run}/samples/{sample}`` - calls, reference, diff marks and metric values;
- ``/api/runs/{run}/samples/{sample}/calls?since=ID&pending=ID,ID`` - the live increment.

Every request passes the listener policy (Host, Origin, token) of :mod:`recordings.plumbing.listener`.
Store reads are synchronous and short; Starlette runs them in its thread pool.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from finmcp.evaluator.viewer import queries
from finmcp.evaluator.viewer.diff import (
    Benchmark,
    reference_view,
    sample_diff,
    sample_metrics,
    traced_predictions,
)
from finmcp.recordings.model_exchanges import sample_turns
from finmcp.recordings.plumbing.listener import ListenerPolicy
from finmcp.recordings.trace_store import TraceStore

STATIC_TYPES = {
    "app.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
    "index.html": "text/html; charset=utf-8",
}
TOKEN_COOKIE = "finmcp_view_token"
CSP = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'"


@dataclass
class ScoreCache:
    """Per-sample scores of each run (F1, EMR), recomputed when the store has changed."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    entries: dict[str, tuple[int, dict[str, tuple[float, int]]]] = field(default_factory=dict)


@dataclass
class Viewer:
    """What every request reads: the store, the optional benchmark, the turn base, the score cache."""

    store: TraceStore
    bench: Benchmark | None = None
    turn_base: int = 0
    scores: ScoreCache = field(default_factory=ScoreCache)
    state: Path | None = None
    """The harness's run-state file (answers), when one lies beside the store: grounded answers."""

    def run_scores(self, run_id: str) -> dict[str, tuple[float, int]]:
        """``{sample_id: (f1, emr)}`` for the run's samples that have a reference (cached per change)."""
        assert self.bench is not None
        cursor = self.store.change_cursor()
        with self.scores.lock:
            cached = self.scores.entries.get(run_id)
            if cached is not None and cached[0] == cursor:
                return cached[1]
        rows = self.store.prediction_rows(run_id, outputs=False)
        scores = self._score(rows)
        with self.scores.lock:
            self.scores.entries[run_id] = (cursor, scores)
        return scores

    def _score(self, rows: Iterable[Sequence[Any]]) -> dict[str, tuple[float, int]]:
        assert self.bench is not None
        first: dict[str, Any] = {}
        for (sid, _trial), traced in sorted(traced_predictions(rows, self.turn_base).items()):
            first.setdefault(sid, traced.prediction)
        out = {}
        for sid, pred in first.items():
            ref = self.bench.refs.get(sid)
            if ref is not None:
                values = sample_metrics(ref, pred, self.bench.canon)
                out[sid] = (values["f1"], values["emr"])
        return out

    def page_scores(self, run_id: str, sample_ids: list[str]) -> dict[str, dict[str, Any]]:
        """F1 and EMR of some samples of a run (the page being shown), computed now."""
        if self.bench is None or not sample_ids:
            return {}
        scores = self._score(self.store.prediction_rows(run_id, outputs=False, sample_ids=sample_ids))
        return {sid: {"f1": f1, "emr": emr} for sid, (f1, emr) in scores.items()}


class BadRequest(Exception):
    """A query parameter the API cannot use (answered 400 with the message)."""


class NotFound(Exception):
    """A run the store does not have (answered 404 with the message)."""


def _float(request: Request, name: str) -> float | None:
    text = request.query_params.get(name)
    if text in (None, ""):
        return None
    try:
        return float(text)
    except ValueError:
        raise BadRequest(f"{name}: expected a number, got {text!r}") from None


def _int(request: Request, name: str, default: int) -> int:
    text = request.query_params.get(name)
    if text in (None, ""):
        return default
    try:
        return int(text)
    except ValueError:
        raise BadRequest(f"{name}: expected an integer, got {text!r}") from None


def _path_param(request: Request, name: str) -> str:
    """A path parameter decoded: routes match the path as sent (:class:`RawPath`), so ``%2F`` in an id
    stays inside its segment until here."""
    return unquote(request.path_params[name])


def _viewer(request: Request) -> Viewer:
    return request.app.state.viewer


def _check_run(viewer: Viewer, run_id: str) -> None:
    if not viewer.store.run_exists(run_id):
        raise NotFound(f"run {run_id!r} not found in {viewer.store.label}")


def api_runs(request: Request) -> JSONResponse:
    viewer = _viewer(request)
    return JSONResponse(
        {
            "store": viewer.store.label,
            "bench": viewer.bench.name if viewer.bench is not None else None,
            "cursor": viewer.store.change_cursor(),
            "runs": queries.list_runs(viewer.store),
        }
    )


def api_cursor(request: Request) -> JSONResponse:
    return JSONResponse({"cursor": _viewer(request).store.change_cursor()})


def api_samples(request: Request) -> JSONResponse:
    viewer = _viewer(request)
    run_id = _path_param(request, "run")
    _check_run(viewer, run_id)
    params = request.query_params
    limit = _int(request, "limit", 50)
    after = params.get("after") or None
    min_f1, max_f1 = _float(request, "min_f1"), _float(request, "max_f1")
    failed = params.get("failed") in ("1", "true", "yes")
    cursor = viewer.store.change_cursor()
    scored = viewer.bench is not None and (min_f1 is not None or max_f1 is not None or failed)
    if (min_f1 is not None or max_f1 is not None) and viewer.bench is None:
        raise BadRequest("min_f1/max_f1 need a benchmark: start the viewer with --bench")
    where = queries.SampleFilter(
        status=params.get("status") or None,
        tool=params.get("tool") or None,
        failed=failed and not scored,
        search=params.get("q") or None,
    )
    if scored:
        samples, next_after = _scored_page(viewer, run_id, after, limit, where, min_f1, max_f1, failed)
    else:
        samples, next_after = queries.sample_page(viewer.store, run_id, after, limit, where)
    scores = viewer.page_scores(run_id, [s["sample_id"] for s in samples])
    for sample in samples:
        sample["score"] = scores.get(sample["sample_id"])
    return JSONResponse({"run_id": run_id, "samples": samples, "next": next_after, "cursor": cursor})


def _scored_page(
    viewer: Viewer,
    run_id: str,
    after: str | None,
    limit: int,
    where: queries.SampleFilter,
    min_f1: float | None,
    max_f1: float | None,
    failed: bool,
) -> tuple[list[dict[str, Any]], str | None]:
    """A page of the samples whose score passes the filter (and ``where``), in id order after ``after``.

    ``failed`` here: a failed call or a sample that is not an exact match (EMR 0).
    """
    scores = viewer.run_scores(run_id)
    passing = sorted(
        sid
        for sid, (f1, emr) in scores.items()
        if (min_f1 is None or f1 >= min_f1) and (max_f1 is None or f1 <= max_f1) and (not failed or emr == 0)
    )
    if failed:  # samples with a failed call count too
        calls_failed = queries.SampleFilter(where.status, where.tool, True, where.search)
        extra, _ = queries.sample_page(viewer.store, run_id, after, queries.PAGE_MAX, calls_failed)
        passing = sorted(set(passing) | {s["sample_id"] for s in extra})
    candidates = [sid for sid in passing if after is None or sid > after]
    out: list[dict[str, Any]] = []
    while candidates and len(out) <= limit:
        chunk, candidates = candidates[: limit + 1], candidates[limit + 1 :]
        page, _ = queries.sample_page(viewer.store, run_id, None, limit + 1, where, only=chunk)
        out.extend(page)
    more = len(out) > limit
    out = out[:limit]
    return out, (out[-1]["sample_id"] if more and out else None)


def api_sample(request: Request) -> JSONResponse:
    viewer = _viewer(request)
    run_id, sample_id = _path_param(request, "run"), _path_param(request, "sample")
    _check_run(viewer, run_id)
    cursor = viewer.store.change_cursor()
    calls = queries.sample_calls(viewer.store, run_id, sample_id)
    trials = sorted({c["trial"] for c in calls})
    trial = _int(request, "trial", trials[0] if trials else 0)
    out: dict[str, Any] = {
        "run_id": run_id,
        "sample_id": sample_id,
        "trials": trials,
        "trial": trial,
        "cursor": cursor,
        "calls": calls,
        "model_turns": sample_turns(viewer.store, run_id, sample_id),  # the model door's exchanges
        "reference": None,
        "diff": None,
        "metrics": None,
    }
    ref = viewer.bench.refs.get(sample_id) if viewer.bench is not None else None
    if ref is not None and viewer.bench is not None:
        chosen = [c for c in calls if c["trial"] == trial]
        rows = [
            (
                sample_id,
                c["trial"],
                c["turn"],
                c["call_group"],
                c["seq"],
                c["tool"],
                c["arguments"],
                None,
                None,
                c["status"],
            )
            for c in chosen
        ]
        traced = traced_predictions(rows, viewer.turn_base, [c["id"] for c in chosen]).get((sample_id, trial))
        pred = traced.prediction if traced is not None else None
        out["reference"] = reference_view(ref)
        out["diff"] = sample_diff(ref, traced, viewer.bench.canon)
        out["metrics"] = sample_metrics(ref, pred, viewer.bench.canon)
    elif viewer.bench is not None:
        out["reference_missing"] = f"sample {sample_id!r} is not in benchmark {viewer.bench.name}"
    if viewer.state is not None:
        from finmcp.evaluator.viewer.grounding import sample_grounding

        out["grounding"] = sample_grounding(
            viewer.store, viewer.state, run_id, sample_id, trial, viewer.turn_base
        )
    return JSONResponse(out)


def api_new_calls(request: Request) -> JSONResponse:
    viewer = _viewer(request)
    run_id, sample_id = _path_param(request, "run"), _path_param(request, "sample")
    since = _int(request, "since", 0)
    text = request.query_params.get("pending", "")
    try:
        pending = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise BadRequest(f"pending: expected call ids separated by commas, got {text!r}") from None
    cursor = viewer.store.change_cursor()
    calls = (
        []
        if cursor <= since and not pending
        else queries.new_calls(viewer.store, run_id, sample_id, since, pending)
    )
    return JSONResponse({"calls": calls, "cursor": cursor})


def page(request: Request) -> Response:
    return _static_response("index.html")


def static(request: Request) -> Response:
    name = request.path_params["name"]
    if name not in STATIC_TYPES:
        return JSONResponse({"error": f"no static file {name!r}"}, status_code=404)
    return _static_response(name)


def healthz(request: Request) -> JSONResponse:
    return JSONResponse({"ok": True, "store": _viewer(request).store.label})


def _static_response(name: str) -> Response:
    body = resources.files("finmcp.evaluator.viewer").joinpath("static", name).read_bytes()
    return Response(body, media_type=STATIC_TYPES[name], headers={"cache-control": "no-cache"})


class Guard:
    """The listener policy on every request; a token may also come as ``?token=`` (then a cookie)."""

    def __init__(self, app: ASGIApp, policy: ListenerPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        token = self.policy.token
        set_cookie = False
        if token is not None and not self.policy.token_ok(headers):
            request = Request(scope)
            offered = request.query_params.get("token") or request.cookies.get(TOKEN_COOKIE)
            if offered == token:
                headers[b"authorization"] = b"Bearer " + token.encode()
                set_cookie = "token" in request.query_params
        denied = self.policy.check(headers, scope["path"])
        if denied is not None:
            status, message = denied
            await JSONResponse({"error": message}, status_code=status)(scope, receive, send)
            return
        if not set_cookie:
            await self.app(scope, receive, send)
            return

        async def send_with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                cookie = f"{TOKEN_COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict".encode()
                message = {**message, "headers": [*message.get("headers", []), (b"set-cookie", cookie)]}
            await send(message)

        await self.app(scope, receive, send_with_cookie)


class RawPath:
    """Routes on the path as the client sent it (``raw_path``), percent-escapes kept.

    The page builds its URLs with ``encodeURIComponent``, so a run id ``team/a`` arrives as
    ``/runs/team%2Fa``; the server's decoded ``path`` (``/runs/team/a``) would match no route. Route
    parameters are decoded by the handlers (:func:`_path_param`), one segment at a time.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw = scope.get("raw_path") if scope["type"] == "http" else None
        if raw:
            scope = {**scope, "path": raw.partition(b"?")[0].decode("latin-1")}
        await self.app(scope, receive, send)


class Headers:
    """Adds the content security policy (the page loads only its own assets) to every response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                extra = [(b"content-security-policy", CSP.encode()), (b"x-content-type-options", b"nosniff")]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, send_with_headers if scope["type"] == "http" else send)


def build_app(viewer: Viewer, policy: ListenerPolicy | None = None) -> ASGIApp:
    """The ASGI app of one viewer (``policy`` None: loopback only, no token)."""

    async def not_found(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, status_code=404)

    async def bad_request(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, status_code=400)

    app = Starlette(
        routes=[
            Route("/", page),
            Route("/runs/{run}", page),
            Route("/runs/{run}/samples/{sample:path}", page),
            Route("/static/{name}", static),
            Route("/healthz", healthz),
            Route("/favicon.ico", lambda request: Response(status_code=204)),
            Route("/api/runs", api_runs),
            Route("/api/cursor", api_cursor),
            Route("/api/runs/{run}/samples", api_samples),
            Route("/api/runs/{run}/samples/{sample}/calls", api_new_calls),
            Route("/api/runs/{run}/samples/{sample}", api_sample),
        ],
        exception_handlers={NotFound: not_found, BadRequest: bad_request},
    )
    app.state.viewer = viewer
    return RawPath(Guard(Headers(app), policy or ListenerPolicy()))
