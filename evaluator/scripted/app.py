"""The scripted model's HTTP app: ``[/r/RUN/s/SAMPLE[/k/TRIAL]/t/TURN]/v1/{chat/completions,responses,models}``.

Tags come from the path (served directly) or the ``X-Finmcp-Run/Sample/Trial/Turn`` headers (behind
the proxy's model door, which moves the path tags into headers); headers win. Every error is an
OpenAI-style JSON body (``{"error": {"message", "type", "param", "code"}}``).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from finmcp.evaluator.scripted.plan import Script, ScriptError, Where
from finmcp.evaluator.scripted.wire import (
    MODEL,
    chat_chunks,
    chat_completion,
    chat_conversation,
    error_body,
    response_events,
    response_object,
    responses_conversation,
    sse,
)

PATH_KEYS = {"r": "run", "s": "sample", "t": "turn", "k": "trial"}
HEADERS = {
    "run": "x-finmcp-run",
    "sample": "x-finmcp-sample",
    "turn": "x-finmcp-turn",
    "trial": "x-finmcp-trial",
}


def split_tags(path: str) -> tuple[dict[str, str], str]:
    """``({"run": ..., "sample": ...}, rest)``: the leading ``/{letter}/{value}`` pairs of a path."""
    parts = path.split("/")
    tags: dict[str, str] = {}
    i = 1
    while i + 1 < len(parts) and parts[i] in PATH_KEYS and parts[i + 1]:
        name = PATH_KEYS[parts[i]]
        if name in tags:
            raise ScriptError(f"{name} tag given twice in the path {path!r}", code="invalid_tags")
        tags[name] = unquote(parts[i + 1])
        i += 2
    return tags, "/" + "/".join(parts[i:])


def where_of(path_tags: dict[str, str], headers: Any) -> Where:
    """The task a request names (headers over path tags); bad numbers are a :class:`ScriptError`."""
    tags = dict(path_tags)
    for name, header in HEADERS.items():
        if headers.get(header):
            tags[name] = headers[header]
    numbers: dict[str, int] = {}
    for name in ("turn", "trial"):
        if name in tags:
            try:
                numbers[name] = int(tags[name])
            except ValueError:
                raise ScriptError(
                    f"{name} tag {tags[name]!r} is not an integer", code="invalid_tags"
                ) from None
            if numbers[name] < 0:
                raise ScriptError(f"{name} tag {tags[name]!r} must be >= 0", code="invalid_tags")
    return Where(tags.get("sample"), numbers.get("turn"), numbers.get("trial", 0))


def _error(exc: ScriptError) -> JSONResponse:
    return JSONResponse(error_body(str(exc), exc.code), status_code=exc.status)


def build_app(script: Script) -> Starlette:
    """The app answering every path (see the module docstring)."""

    async def endpoint(request: Request) -> Response:
        try:
            tags, rest = split_tags(request.url.path)
            rest = rest.rstrip("/")
            if rest in ("/v1/models", "/models") and request.method == "GET":
                return JSONResponse(
                    {
                        "object": "list",
                        "data": [{"id": MODEL, "object": "model", "created": 0, "owned_by": "finmcp"}],
                    }
                )
            kind = {
                "/v1/chat/completions": "chat",
                "/chat/completions": "chat",
                "/v1/responses": "responses",
                "/responses": "responses",
            }.get(rest)
            if kind is None:
                raise ScriptError(
                    f"unknown path {request.url.path!r}: use [/r/RUN/s/SAMPLE[/k/TRIAL]/t/TURN]/v1/chat/completions "
                    "or .../v1/responses",
                    404,
                    "unknown_path",
                )
            if request.method != "POST":
                raise ScriptError(f"{request.method} {rest}: use POST", 405, "method_not_allowed")
            where = where_of(tags, request.headers)
            try:
                body = json.loads(await request.body())
            except (ValueError, UnicodeDecodeError) as exc:
                raise ScriptError(f"the request body is not JSON: {exc}", code="invalid_json") from None
            convo = chat_conversation(body) if kind == "chat" else responses_conversation(body)
            reply = script.reply(where, convo)
        except ScriptError as exc:
            return _error(exc)
        stream = bool(body.get("stream"))
        headers = {"x-finmcp-scripted-sample": reply.sample, "x-finmcp-scripted-turn": str(reply.turn)}
        if kind == "chat":
            if stream:
                return StreamingResponse(
                    sse(chat_chunks(body, reply), named=False, done=True),
                    media_type="text/event-stream",
                    headers=headers,
                )
            return JSONResponse(chat_completion(body, reply), headers=headers)
        if stream:
            return StreamingResponse(
                sse(response_events(body, reply), named=True, done=False),
                media_type="text/event-stream",
                headers=headers,
            )
        return JSONResponse(response_object(body, reply), headers=headers)

    methods = ["GET", "POST", "PUT", "DELETE", "PATCH"]
    return Starlette(routes=[Route("/{path:path}", endpoint, methods=methods)])
