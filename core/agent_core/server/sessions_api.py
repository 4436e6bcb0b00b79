"""``/v1/sessions``: sessions in the store, one turn at a time, saved with optimistic revisions."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from .. import NATIVE_KEY, encode_event
from ..errors import (
    ConflictError,
)
from ..types import Session
from .bodies import ActionBody, CreateSessionBody, TurnBody, parse_body
from .errors import ApiError, error_body
from .http import (
    SSE_HEADERS,
    ConflictNote,
    checked_id,
    drain,
    etag,
    if_match,
    message_of,
    path_id,
    plain,
    pump,
    request_id_of,
    session_of,
    sse_frame,
    until_output,
    watch_disconnect,
)


class SessionRoutes:
    """The sessions API's routes; mixed into the server, whose attributes they use."""

    async def create_session(self, request: Request) -> Response:
        body = parse_body(await request.body(), CreateSessionBody, max_depth=self.settings.max_json_depth,
                          empty_ok=True)
        sid = checked_id(body.id, "id") if body.id is not None else uuid.uuid4().hex
        messages = body.messages or []
        if len(messages) > self.settings.max_messages:
            raise ApiError(400, "invalid_request_error", f"messages: more than {self.settings.max_messages} "
                           "messages (max_messages)", param="messages")
        built = [message_of(m, f"messages[{i}]") for i, m in enumerate(messages)]
        session = session_of(sid, built, body.metadata or {})
        revision = await self.store_for(request).acreate(session)
        return JSONResponse({"id": sid, "revision": revision}, 201, headers=etag(revision))

    async def list_sessions(self, request: Request) -> Response:
        raw = request.query_params.get("limit", "100")
        if not raw.isdigit() or len(raw) > 4 or not 1 <= int(raw) <= 1000:
            raise ApiError(400, "invalid_request_error", f"limit must be an integer from 1 to 1000, got {raw[:20]!r}",
                           param="limit")
        after = request.query_params.get("after")
        if after is not None:
            checked_id(after, "after")
        heads = await self.store_for(request).alist(limit=int(raw), after=after)
        return JSONResponse({"object": "list", "data": [
            {"id": h.session_id, "revision": h.revision, "message_count": h.message_count,
             "created_at": h.created_at, "updated_at": h.updated_at} for h in heads]})

    async def get_session(self, request: Request) -> Response:
        stored = await self.store_for(request).aget(path_id(request, "session_id"))
        s = stored.session
        metadata = {k: v for k, v in s.metadata.items() if k != NATIVE_KEY}
        body = {"id": s.session_id, "revision": stored.revision, "messages": [m.to_dict() for m in s.messages],
                "metadata": json.loads(json.dumps(metadata, default=plain))}
        return JSONResponse(body, headers=etag(stored.revision))

    async def delete_session(self, request: Request) -> Response:
        sid = path_id(request, "session_id")
        await self.store_for(request).adelete(sid, expected_revision=if_match(request))
        return Response(status_code=204)

    async def turn(self, request: Request) -> Response:
        sid = path_id(request, "session_id")
        body = parse_body(await request.body(), TurnBody, max_depth=self.settings.max_json_depth)
        message = message_of(body.message, "message")
        config = self.config_for(request, body.config)
        want = if_match(request)
        store = self.store_for(request)
        tenant = self.tenant(request)
        client_rid = request_id_of(request)
        engine_rid = tenant.scope(client_rid)
        if want is not None:
            stored = await store.aget(sid)
            if stored.revision != want:
                raise ConflictError(sid, expected=want, current=stored.revision)
            events: AsyncIterator[Any] = self._turn_at(store, stored.session.with_message(message), want, config,
                                                       engine_rid)
        else:
            from ..store import astream_turn

            events = astream_turn(self.core, store, sid, message, config, retries=self.retries,
                                  request_id=engine_rid)
        watcher = asyncio.ensure_future(watch_disconnect(request, lambda: self.core.cancel_request(engine_rid)))
        # The turn runs in its own task, so it ends and saves the same way whether or not the client
        # still listens: a client that hangs up cancels the request, and the cancelled turn is kept,
        # exactly as after DELETE /v1/requests/{id}.
        queue: asyncio.Queue[Any] = asyncio.Queue()
        task = asyncio.ensure_future(pump(events, queue, self._running))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        events = drain(queue)
        try:
            first, failed = await until_output(events)  # a bad config fails here: still a 4xx
        except BaseException:
            watcher.cancel()
            raise
        if failed is not None:
            watcher.cancel()
            return failed
        renamed = client_rid if tenant.name else None  # the client sees its own id, never the tenant's prefix
        return StreamingResponse(self._turn_stream(engine_rid, renamed, first, events, watcher),
                                 media_type="text/event-stream", headers={"x-request-id": client_rid, **SSE_HEADERS})

    async def _turn_at(self, store: Any, session: Session, expected: int, config: dict[str, Any],
                       rid: str) -> AsyncIterator[Any]:
        """One turn saved at exactly ``expected`` (the caller's If-Match): a conflict is not retried."""
        from ..store import TurnSavedEvent

        done, failed = None, False
        async for event in self.core.astream_request(session, config, request_id=rid):
            failed = failed or event.type == "error"
            done = event if event.type == "done" else done
            yield event
        if failed or done is None:
            return
        try:
            revision = await store.aput(done.session, expected_revision=expected)
        except ConflictError as exc:
            yield ConflictNote(exc)
            return
        yield TurnSavedEvent(session.session_id, revision, 1)

    async def _turn_stream(self, rid: str, renamed: str | None, first: list[Any], events: AsyncIterator[Any],
                           watcher: asyncio.Future[None]) -> AsyncIterator[bytes]:
        """The turn's events as SSE frames; ``rid`` is the engine's id, ``renamed`` the client's when they differ."""
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
                if isinstance(event, ConflictNote):
                    yield sse_frame({"type": "conflict", **error_body("ConflictError", str(event.exc),
                                                                 current_revision=event.exc.current)})
                    continue
                if renamed is not None and getattr(event, "request_id", None) == rid:
                    event = msgspec.structs.replace(event, request_id=renamed)
                yield sse_frame(encode_event(event))
            finished = True
        except ConflictError as exc:  # astream_turn lost every retry
            finished = True
            yield sse_frame({"type": "conflict", **error_body("ConflictError", str(exc), current_revision=exc.current)})
        finally:
            watcher.cancel()
            if not finished:
                self.core.cancel_request(rid)

    # -- plugins, UI, actions ------------------------------------------------

    async def session_action(self, request: Request) -> Response:
        """Run an action on a stored session and save what it changed, at the revision it was loaded at."""
        sid, action_id = path_id(request, "session_id"), request.path_params["action_id"]
        if len(action_id) > 200:
            raise ApiError(400, "invalid_request_error", "the action id is longer than 200 characters",
                           param="action_id")
        body = parse_body(await request.body(), ActionBody, max_depth=self.settings.max_json_depth, empty_ok=True)
        config = self.config_for(request, body.config)
        store = self.store_for(request)
        stored = await store.aget(sid)
        want = if_match(request)
        if want is not None and want != stored.revision:
            raise ConflictError(sid, expected=want, current=stored.revision)
        result = await asyncio.to_thread(self.core.execute_action, stored.session, action_id, body.params or {},
                                         config)
        revision = await store.aput(result.session, expected_revision=stored.revision)
        return JSONResponse({"id": sid, "revision": revision, "payload": json.loads(json.dumps(result.payload,
                                                                                               default=plain))},
                            headers=etag(revision))
