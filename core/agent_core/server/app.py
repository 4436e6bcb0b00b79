"""The routes of ``agent-core serve``: an OpenAI-compatible facade and a sessions API.

Stateless on purpose: a handler holds no session between requests. The
facade's conversation arrives whole in each request; the sessions API loads
from the store, runs one turn and saves with the revision it loaded, so any
number of server processes can share one store. The only per-process table is
the engine's own list of running requests (for ``DELETE /v1/requests/{id}``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import math
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ..engine import AgentCore
from ..errors import (
    ActionInputError,
    ConfigError,
    ConflictError,
    InvalidArgumentError,
    InvalidValueError,
    LLMError,
    PluginError,
    ProviderRequestCancelled,
    SessionNotFoundError,
    StoreError,
)
from ..events import encode_event
from ..native_history import NATIVE_KEY
from ..types import Message, Session
from .client_tools import ClientTools
from .errors import ApiError, error_body, error_response, sse_error, status_for_name
from .openai_compat import chat_config, chat_session, chunk, completion_body, finish_reason, usage_body, wire_calls

__all__ = ["create_app"]

_SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


def _sse(data: Any) -> bytes:
    return b"data: " + (data if isinstance(data, bytes) else json.dumps(data).encode()) + b"\n\n"


async def _json(request: Request) -> dict[str, Any]:
    raw = await request.body()
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise ApiError(400, "invalid_json", f"the request body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise ApiError(400, "invalid_json", f"the request body must be a JSON object, got {type(body).__name__}")
    return body


def _if_match(request: Request) -> int | None:
    raw = request.headers.get("if-match")
    if raw is None:
        return None
    text = raw.strip().removeprefix("W/").strip('"')
    if not text.isdigit() or int(text) < 1:
        raise ApiError(400, "invalid_if_match", f"If-Match must be a revision number (e.g. \"3\"), got {raw!r}")
    return int(text)


def _request_id(request: Request) -> str:
    """The client's ``X-Request-Id`` (so it can cancel a request before any answer), else a fresh one."""
    given = request.headers.get("x-request-id")
    if given is None:
        return uuid.uuid4().hex
    if not 1 <= len(given) <= 200 or not given.isprintable():
        raise ApiError(400, "invalid_request_id", "X-Request-Id must be 1 to 200 printable characters")
    return given


def _session_id(request: Request) -> str | None:
    given = request.headers.get("x-session-id")
    if given is not None and (not 1 <= len(given) <= 200 or not given.isprintable()):
        raise ApiError(400, "invalid_session_id", "X-Session-Id must be 1 to 200 printable characters")
    return given


def _retry_after(seconds: float | None) -> dict[str, str]:
    """``retry-after`` in whole seconds, rounded up, when the upstream API said how long."""
    return {} if seconds is None else {"retry-after": str(max(0, math.ceil(seconds)))}


def _etag(revision: int) -> dict[str, str]:
    return {"etag": f'"{revision}"'}


async def _watch_disconnect(request: Request, on_gone: Callable[[], Any]) -> None:
    """Wait for the client to hang up, then call ``on_gone`` (cancels the upstream request)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            on_gone()
            return


async def _until_output(events: AsyncIterator[Any], rid: list[str] | None = None) -> tuple[list[Any], Response | None]:
    """Read events up to the first output; a failure before it becomes an error response with its status.

    Until the first byte of the body is sent, the status can still say what went wrong
    (429 with retry-after, 400 for a bad config...), so an early ``error`` event is not streamed.
    """
    first: list[Any] = []
    async for event in events:
        first.append(event)
        kind = getattr(event, "type", None)
        if kind == "start" and rid is not None:
            rid.append(event.request_id)
        if kind in ("partial", "final", "error", "done"):
            break
    if first and first[-1].type == "error":
        info = first[-1].error
        async for _ in events:
            pass
        return first, JSONResponse(error_body(info.type, info.message), status_for_name(info.type),
                                   headers=_retry_after(info.retry_after))
    return first, None


class _Server:
    def __init__(self, core: AgentCore, store: Any, token: str | None, config: Mapping[str, Any],
                 retries: int) -> None:
        self.core = core
        self.retries = retries
        self._tasks: set[asyncio.Future[None]] = set()  # running turns (kept referenced until they end)
        self._running: set[str] = set()  # ids of the requests this process runs (cancelled at shutdown)
        self.relay: Any = None  # a PgCancelRelay when cancels reach the other processes
        self._store = store
        self.token = token
        self.config = dict(config)

    @property
    def store(self) -> Any:
        if self._store is None:  # opened on first use: the facade alone needs no database
            from ..store import open_store

            self._store = open_store()
        return self._store

    # -- facade ------------------------------------------------------------

    def _declared(self) -> set[str]:
        return {entry["key"] for entry in self.core.get_config_schema()}

    async def chat(self, request: Request) -> Response:
        body = await _json(request)
        config, model = chat_config(body, self.core.plugins("provider"), self._declared(), self.config)
        sid = _session_id(request)
        session = chat_session(sid or uuid.uuid4().hex, body.get("messages"))
        if sid is not None:  # the exchange is kept under that id: carry the stored metadata (a title...)
            session = await self._with_stored_metadata(session)
        rid = _request_id(request)
        headers = {"x-request-id": rid}
        if not config["stream"]:
            watcher = asyncio.ensure_future(_watch_disconnect(request, lambda: self.core.cancel_request(rid)))
            self._running.add(rid)
            try:
                result = await self.core.arequest(session, config, request_id=rid)
            finally:
                watcher.cancel()
                self._running.discard(rid)
            if sid is not None:
                headers["x-session-revision"] = str(await self._save_exchange(result.session))
            return JSONResponse(completion_body(rid, model, result.final_messages, result.usage), headers=headers)
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        watcher = asyncio.ensure_future(_watch_disconnect(request, lambda: self.core.cancel_request(rid)))
        self._running.add(rid)
        try:
            events = self.core.astream_request(session, config, request_id=rid)
            first, failed = await _until_output(events)
        except BaseException:
            watcher.cancel()
            self._running.discard(rid)
            raise
        if failed is not None:
            watcher.cancel()
            self._running.discard(rid)
            return failed
        stream = self._chat_stream(rid, model, first, events, include_usage, watcher, sid is not None)
        return StreamingResponse(stream, media_type="text/event-stream", headers={**headers, **_SSE_HEADERS})

    async def _chat_stream(self, rid: str, model: str, first: list[Any], events: AsyncIterator[Any],
                           include_usage: bool, watcher: asyncio.Future[None], save: bool) -> AsyncIterator[bytes]:
        finished = False
        created = int(time.time())
        try:
            yield _sse(chunk(rid, model, created, {"role": "assistant", "content": ""}))
            streamed, reply, usage = False, None, None

            async def all_events() -> AsyncIterator[Any]:
                for event in first:
                    yield event
                async for event in events:
                    yield event

            async for event in all_events():
                if event.type == "partial":
                    text = event.message.content
                    if isinstance(text, str) and text:
                        streamed = True
                        yield _sse(chunk(rid, model, created, {"content": text}))
                elif event.type == "final" and event.message.role == "assistant":
                    reply = event.message
                    if not streamed and isinstance(reply.content, str) and reply.content:
                        yield _sse(chunk(rid, model, created, {"content": reply.content}))
                    calls = wire_calls(reply)
                    if calls:
                        delta = [{"index": i, **c} for i, c in enumerate(calls)]
                        yield _sse(chunk(rid, model, created, {"tool_calls": delta}))
                elif event.type == "error":
                    yield sse_error(event.error.type, event.error.message)
                    finished = True
                    yield b"data: [DONE]\n\n"
                    return
                elif event.type == "done":
                    usage = event.usage
                    if event.outcome.reason == "cancelled":  # DELETE /v1/requests/{id}: not a normal end
                        yield sse_error("request_cancelled", f"request {rid} was cancelled: {event.outcome.detail}")
                        finished = True
                        yield b"data: [DONE]\n\n"
                        return
                    if save:  # X-Session-Id: kept before the stream says it is over
                        try:
                            await self._save_exchange(event.session)
                        except (StoreError, InvalidArgumentError) as exc:
                            yield sse_error(type(exc).__name__, str(exc))
                            finished = True
                            yield b"data: [DONE]\n\n"
                            return
            yield _sse(chunk(rid, model, created, {}, finish_reason(reply)))
            if include_usage and usage is not None:
                yield _sse(chunk(rid, model, created, None, usage=usage_body(usage)))
            finished = True
            yield b"data: [DONE]\n\n"
        finally:
            watcher.cancel()
            self._running.discard(rid)
            if not finished:  # the client went away mid-stream: stop the upstream request too
                self.core.cancel_request(rid)
            await events.aclose()  # type: ignore[attr-defined]

    async def _with_stored_metadata(self, session: Session) -> Session:
        try:
            stored = await self.store.aget(session.session_id)
        except SessionNotFoundError:
            return session
        meta = {k: v for k, v in stored.session.metadata.items() if k != NATIVE_KEY}
        return Session(session.session_id, list(session.messages), meta)

    async def _save_exchange(self, session: Session) -> int:
        """Store a facade exchange (X-Session-Id): the client's conversation plus the reply.

        The client sent the whole conversation, so it is the truth: a save that loses a race is
        simply made again on the newer revision (no model call is repeated).
        """
        last: ConflictError | None = None
        for _ in range(self.retries + 1):
            try:
                expected = (await self.store.aget(session.session_id)).revision
            except SessionNotFoundError:
                expected = 0
            try:
                return int(await self.store.aput(session, expected_revision=expected))
            except ConflictError as exc:
                last = exc
        assert last is not None
        raise last

    async def models(self, request: Request) -> Response:
        data = []
        for provider in self.core.plugins("provider"):
            try:
                listed = await asyncio.to_thread(self.core.get_models, {**self.config, "provider": provider})
            except Exception:  # noqa: BLE001 - a provider without credentials lists nothing, the rest still list
                continue
            for m in listed:
                mid = m.get("id") if isinstance(m, Mapping) else None
                if isinstance(mid, str):
                    data.append({"id": f"{provider}/{mid}", "object": "model", "created": 0, "owned_by": provider})
        return JSONResponse({"object": "list", "data": data})

    async def cancel(self, request: Request) -> Response:
        rid = request.path_params["request_id"]
        if self.core.cancel_request(rid):
            return Response(status_code=204)
        if self.relay is not None and await asyncio.to_thread(self.relay.forward, rid):
            return Response(status_code=204)  # another process that shares the store ran it
        where = "in any server process on this store" if self.relay is not None else "in this server process"
        raise ApiError(404, "request_not_found", f"no request {rid!r} is running {where}")

    async def health(self, request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    # -- sessions ------------------------------------------------------------

    async def create_session(self, request: Request) -> Response:
        body = await _json(request) if await request.body() else {}
        sid = body.get("id") or uuid.uuid4().hex
        if not isinstance(sid, str):
            raise ApiError(400, "invalid_request_error", f"id must be a string, got {type(sid).__name__}")
        metadata = body.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise ApiError(400, "invalid_request_error", "metadata must be an object")
        messages = [_message(m, f"messages[{i}]") for i, m in enumerate(body.get("messages") or [])]
        revision = await self.store.acreate(Session(sid, messages, metadata))
        return JSONResponse({"id": sid, "revision": revision}, 201, headers=_etag(revision))

    async def list_sessions(self, request: Request) -> Response:
        raw = request.query_params.get("limit", "100")
        if not raw.isdigit() or not 1 <= int(raw) <= 1000:
            raise ApiError(400, "invalid_request_error", f"limit must be an integer from 1 to 1000, got {raw!r}")
        heads = await self.store.alist(limit=int(raw), after=request.query_params.get("after"))
        return JSONResponse({"object": "list", "data": [
            {"id": h.session_id, "revision": h.revision, "message_count": h.message_count,
             "created_at": h.created_at, "updated_at": h.updated_at} for h in heads]})

    async def get_session(self, request: Request) -> Response:
        stored = await self.store.aget(request.path_params["session_id"])
        s = stored.session
        metadata = {k: v for k, v in s.metadata.items() if k != NATIVE_KEY}
        body = {"id": s.session_id, "revision": stored.revision, "messages": [m.to_dict() for m in s.messages],
                "metadata": json.loads(json.dumps(metadata, default=_plain))}
        return JSONResponse(body, headers=_etag(stored.revision))

    async def delete_session(self, request: Request) -> Response:
        await self.store.adelete(request.path_params["session_id"], expected_revision=_if_match(request))
        return Response(status_code=204)

    async def turn(self, request: Request) -> Response:
        sid = request.path_params["session_id"]
        body = await _json(request)
        if "message" not in body:
            raise ApiError(400, "invalid_request_error", "a turn needs a message (a string or a message object)")
        message = _message(body["message"], "message")
        config = body.get("config")
        config = {} if config is None else config
        if not isinstance(config, dict):
            raise ApiError(400, "invalid_request_error", "config must be an object")
        config = {**self.config, **config}
        want = _if_match(request)
        if want is not None:
            stored = await self.store.aget(sid)
            if stored.revision != want:
                raise ConflictError(sid, expected=want, current=stored.revision)
            events: AsyncIterator[Any] = self._turn_at(stored.session.with_message(message), want, config)
        else:
            from ..store import astream_turn

            events = astream_turn(self.core, self.store, sid, message, config, retries=self.retries)
        rid: list[str] = []  # the request's id, from its start event (a retried turn has several)
        watcher = asyncio.ensure_future(
            _watch_disconnect(request, lambda: rid and self.core.cancel_request(rid[-1])))
        # The turn runs in its own task, so it ends and saves the same way whether or not the client
        # still listens: a client that hangs up cancels the request, and the cancelled turn is kept,
        # exactly as after DELETE /v1/requests/{id}.
        queue: asyncio.Queue[Any] = asyncio.Queue()
        task = asyncio.ensure_future(_pump(events, queue, self._running))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        events = _drain(queue)
        try:
            first, failed = await _until_output(events, rid)  # a bad config fails here: still a 4xx
        except BaseException:
            watcher.cancel()
            raise
        if failed is not None:
            watcher.cancel()
            return failed
        return StreamingResponse(self._turn_stream(rid, first, events, watcher), media_type="text/event-stream",
                                 headers=_SSE_HEADERS)

    async def _turn_at(self, session: Session, expected: int, config: dict[str, Any]) -> AsyncIterator[Any]:
        """One turn saved at exactly ``expected`` (the caller's If-Match): a conflict is not retried."""
        from ..store import TurnSavedEvent

        done, failed = None, False
        async for event in self.core.astream_request(session, config):
            failed = failed or event.type == "error"
            done = event if event.type == "done" else done
            yield event
        if failed or done is None:
            return
        try:
            revision = await self.store.aput(done.session, expected_revision=expected)
        except ConflictError as exc:
            yield _ConflictNote(exc)
            return
        yield TurnSavedEvent(session.session_id, revision, 1)

    async def _turn_stream(self, rid: list[str], first: list[Any], events: AsyncIterator[Any],
                           watcher: asyncio.Future[None]) -> AsyncIterator[bytes]:
        finished = False
        pending = list(first)
        try:
            while True:
                if pending:
                    event = pending.pop(0)
                else:
                    try:
                        event = await events.__anext__()
                    except StopAsyncIteration:
                        break
                if isinstance(event, _ConflictNote):
                    yield _sse({"type": "conflict", **error_body("ConflictError", str(event.exc),
                                                                 current_revision=event.exc.current)})
                else:
                    if event.type == "start":
                        rid.append(event.request_id)
                    yield _sse(encode_event(event))
            finished = True
        except ConflictError as exc:  # astream_turn lost every retry
            finished = True
            yield _sse({"type": "conflict", **error_body("ConflictError", str(exc), current_revision=exc.current)})
        finally:
            watcher.cancel()
            if not finished and rid:
                self.core.cancel_request(rid[-1])

    # -- plugins, UI, actions ------------------------------------------------

    def _query_config(self, request: Request) -> dict[str, Any]:
        """The config of a GET: the server's keys, then one query parameter per key (JSON values, as ``-c``)."""
        config = dict(self.config)
        for key, raw in request.query_params.items():
            try:
                config[key] = json.loads(raw)
            except ValueError:
                config[key] = raw
        return config

    async def plugins(self, request: Request) -> Response:
        config = self._query_config(request)
        res = await asyncio.to_thread(self.core.resolve, config)
        on = {str(res.provider), *map(str, res.extensions), *map(str, res.features), *map(str, res.tools)}
        data = [
            {"kind": kind, "name": name, "enabled": name in on,
             "reason": res.reasons.get(name) or "off: not the selected provider"}
            for kind in ("provider", "extension", "feature", "tool") for name in self.core.plugins(kind)
        ]
        return JSONResponse({"object": "list", "data": data, "warnings": list(res.warnings)})

    async def ui_schema(self, request: Request) -> Response:
        elements = await asyncio.to_thread(self.core.get_ui_schema, self._query_config(request))
        return JSONResponse({"object": "list", "data": json.loads(json.dumps(elements, default=_plain))})

    async def actions(self, request: Request) -> Response:
        actions = await asyncio.to_thread(self.core.get_actions, self._query_config(request))
        return JSONResponse({"object": "list", "data": json.loads(json.dumps(actions, default=_plain))})

    async def session_action(self, request: Request) -> Response:
        """Run an action on a stored session and save what it changed, at the revision it was loaded at."""
        sid, action_id = request.path_params["session_id"], request.path_params["action_id"]
        body = await _json(request) if await request.body() else {}
        params, config = body.get("params"), body.get("config")
        for name, value in (("params", params), ("config", config)):
            if value is not None and not isinstance(value, dict):
                raise ApiError(400, "invalid_request_error", f"{name} must be an object")
        stored = await self.store.aget(sid)
        want = _if_match(request)
        if want is not None and want != stored.revision:
            raise ConflictError(sid, expected=want, current=stored.revision)
        result = await asyncio.to_thread(self.core.execute_action, stored.session, action_id, params or {},
                                         {**self.config, **(config or {})})
        revision = await self.store.aput(result.session, expected_revision=stored.revision)
        return JSONResponse({"id": sid, "revision": revision, "payload": json.loads(json.dumps(result.payload,
                                                                                               default=_plain))},
                            headers=_etag(revision))

    # -- app -----------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Any) -> AsyncIterator[None]:
        """On shutdown, after the server's grace period: cancel what still runs, let turns save."""
        if self.relay is not None:
            await asyncio.to_thread(self.relay.start)
        yield
        if self.relay is not None:
            await asyncio.to_thread(self.relay.close)
        for rid in list(self._running):
            self.core.cancel_request(rid)
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=10)

    def routes(self) -> list[Route]:
        return [
            Route("/healthz", self.health, methods=["GET"]),
            Route("/v1/chat/completions", self.chat, methods=["POST"]),
            Route("/v1/models", self.models, methods=["GET"]),
            Route("/v1/requests/{request_id}", self.cancel, methods=["DELETE"]),
            Route("/v1/sessions", self.create_session, methods=["POST"]),
            Route("/v1/sessions", self.list_sessions, methods=["GET"]),
            Route("/v1/sessions/{session_id}", self.get_session, methods=["GET"]),
            Route("/v1/sessions/{session_id}", self.delete_session, methods=["DELETE"]),
            Route("/v1/sessions/{session_id}/turns", self.turn, methods=["POST"]),
            Route("/v1/sessions/{session_id}/actions/{action_id}", self.session_action, methods=["POST"]),
            Route("/v1/plugins", self.plugins, methods=["GET"]),
            Route("/v1/ui-schema", self.ui_schema, methods=["GET"]),
            Route("/v1/actions", self.actions, methods=["GET"]),
        ]


# Raised by the engine or the store: answered with their status, not logged as a server crash.
_LIBRARY_ERRORS = (ActionInputError, ConfigError, InvalidArgumentError, InvalidValueError, LLMError, PluginError,
                   ProviderRequestCancelled, StoreError)


_END = object()


async def _pump(events: AsyncIterator[Any], queue: asyncio.Queue[Any], running: set[str]) -> None:
    """Run a turn's events into ``queue``; its failure travels as a ``_Raised`` item, then ``_END``.

    The ids of its requests are in ``running`` while it runs (a retried turn makes several).
    """
    ids: list[str] = []
    try:
        async for event in events:
            if getattr(event, "type", None) == "start":
                ids.append(event.request_id)
                running.add(event.request_id)
            queue.put_nowait(event)
    except Exception as exc:  # noqa: BLE001 - handed to the reader, who answers with its status
        queue.put_nowait(_Raised(exc))
    finally:
        running.difference_update(ids)
        queue.put_nowait(_END)


async def _drain(queue: asyncio.Queue[Any]) -> AsyncIterator[Any]:
    while (item := await queue.get()) is not _END:
        if isinstance(item, _Raised):
            raise item.exc
        yield item


class _Raised:
    def __init__(self, exc: Exception) -> None:
        self.exc = exc


class _ConflictNote:
    """The If-Match turn's save lost: told to the client as a ``conflict`` event."""

    def __init__(self, exc: ConflictError) -> None:
        self.exc = exc


def _plain(value: Any) -> Any:
    from ..frozen import thaw

    return thaw(value)


def _message(value: Any, where: str) -> Message:
    if isinstance(value, str):
        return Message("user", value)
    if not isinstance(value, Mapping):
        raise ApiError(400, "invalid_request_error", f"{where} must be a string or a message object")
    try:
        return Message.from_dict(value)
    except (TypeError, ValueError, KeyError) as exc:
        raise ApiError(400, "invalid_request_error", f"{where}: {exc}") from None


class _Auth:
    """Every route needs ``Authorization: Bearer <token>`` when a token is set (compared in constant time)."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope["headers"]).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                response = JSONResponse(
                    error_body("authentication_error", "missing or wrong bearer token (Authorization: Bearer ...)"),
                    401, headers={"www-authenticate": "Bearer"})
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


async def _on_error(request: Request, exc: Exception) -> Response:
    if isinstance(exc, HTTPException):
        kind = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        detail = f"{request.method} {request.url.path}: {exc.detail}"
        return JSONResponse(error_body(kind, detail), exc.status_code, headers=dict(exc.headers or {}))
    if isinstance(exc, (ApiError,)) or type(exc).__module__.startswith("agent_core"):
        return error_response(exc)
    return JSONResponse(error_body("internal_error", f"{type(exc).__name__} while serving {request.url.path}"), 500)


def create_app(core: AgentCore | None = None, store: Any = None, token: str | None = None, *,
               config: Mapping[str, Any] | None = None, retries: int = 3, cancel_url: str | None = None) -> Any:
    """The ASGI app of ``agent-core serve``.

    Args:
        core: the pipeline (default :meth:`AgentCore.discover`). The ``client_tools``
            tool plugin is registered on it, so OpenAI clients' ``tools`` reach the model.
        store: a session store for ``/v1/sessions`` (default: ``open_store()``, opened on first use).
        token: when set, every route wants ``Authorization: Bearer <token>``.
        config: config keys every request starts from (e.g. ``base_url``); the request's own win.
        retries: how often a turn without ``If-Match`` starts again after losing a save race
            (each retry is another model call; see ``docs/store.md``).
        cancel_url: a ``postgresql://`` URL (the store's): ``DELETE /v1/requests/{id}`` then also
            reaches requests running in the other processes listening there (LISTEN/NOTIFY).
    """
    if core is None:
        core = AgentCore.discover(tools=[ClientTools])
    elif "client_tools" not in core.plugins("tool"):
        core.register_tool(ClientTools)
    server = _Server(core, store, token, config or {}, retries)
    if cancel_url is not None:
        from .relay import PgCancelRelay

        server.relay = PgCancelRelay(cancel_url, core.cancel_request)
    handlers: Mapping[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
        cls: _on_error for cls in (Exception, HTTPException, ApiError, *_LIBRARY_ERRORS)
    }
    app = Starlette(routes=server.routes(), exception_handlers=dict(handlers), lifespan=server.lifespan)
    app.state.server = server
    return _Auth(app, token) if token else app
