"""``/v1/sessions``: sessions in the store, one turn at a time, saved with optimistic revisions."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from ..errors import (
    ConflictError,
)
from ..events import encode_event
from ..native_history import NATIVE_KEY
from ..types import Session
from .errors import ApiError, error_body
from .http import (
    SSE_HEADERS,
    ConflictNote,
    drain,
    etag,
    if_match,
    json_body,
    message_of,
    plain,
    pump,
    sse_frame,
    until_output,
    watch_disconnect,
)


class SessionRoutes:
    """The sessions API's routes; mixed into the server, whose attributes they use."""

    async def create_session(self, request: Request) -> Response:
        body = await json_body(request) if await request.body() else {}
        sid = body.get("id") or uuid.uuid4().hex
        if not isinstance(sid, str):
            raise ApiError(400, "invalid_request_error", f"id must be a string, got {type(sid).__name__}")
        metadata = body.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise ApiError(400, "invalid_request_error", "metadata must be an object")
        messages = [message_of(m, f"messages[{i}]") for i, m in enumerate(body.get("messages") or [])]
        revision = await self.store.acreate(Session(sid, messages, metadata))
        return JSONResponse({"id": sid, "revision": revision}, 201, headers=etag(revision))

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
                "metadata": json.loads(json.dumps(metadata, default=plain))}
        return JSONResponse(body, headers=etag(stored.revision))

    async def delete_session(self, request: Request) -> Response:
        await self.store.adelete(request.path_params["session_id"], expected_revision=if_match(request))
        return Response(status_code=204)

    async def turn(self, request: Request) -> Response:
        sid = request.path_params["session_id"]
        body = await json_body(request)
        if "message" not in body:
            raise ApiError(400, "invalid_request_error", "a turn needs a message (a string or a message object)")
        message = message_of(body["message"], "message")
        config = body.get("config")
        config = {} if config is None else config
        if not isinstance(config, dict):
            raise ApiError(400, "invalid_request_error", "config must be an object")
        config = {**self.config, **config}
        want = if_match(request)
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
            watch_disconnect(request, lambda: rid and self.core.cancel_request(rid[-1])))
        # The turn runs in its own task, so it ends and saves the same way whether or not the client
        # still listens: a client that hangs up cancels the request, and the cancelled turn is kept,
        # exactly as after DELETE /v1/requests/{id}.
        queue: asyncio.Queue[Any] = asyncio.Queue()
        task = asyncio.ensure_future(pump(events, queue, self._running))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        events = drain(queue)
        try:
            first, failed = await until_output(events, rid)  # a bad config fails here: still a 4xx
        except BaseException:
            watcher.cancel()
            raise
        if failed is not None:
            watcher.cancel()
            return failed
        return StreamingResponse(self._turn_stream(rid, first, events, watcher), media_type="text/event-stream",
                                 headers=SSE_HEADERS)

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
            yield ConflictNote(exc)
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
                if isinstance(event, ConflictNote):
                    yield sse_frame({"type": "conflict", **error_body("ConflictError", str(event.exc),
                                                                 current_revision=event.exc.current)})
                else:
                    if event.type == "start":
                        rid.append(event.request_id)
                    yield sse_frame(encode_event(event))
            finished = True
        except ConflictError as exc:  # astream_turn lost every retry
            finished = True
            yield sse_frame({"type": "conflict", **error_body("ConflictError", str(exc), current_revision=exc.current)})
        finally:
            watcher.cancel()
            if not finished and rid:
                self.core.cancel_request(rid[-1])

    # -- plugins, UI, actions ------------------------------------------------

    async def session_action(self, request: Request) -> Response:
        """Run an action on a stored session and save what it changed, at the revision it was loaded at."""
        sid, action_id = request.path_params["session_id"], request.path_params["action_id"]
        body = await json_body(request) if await request.body() else {}
        params, config = body.get("params"), body.get("config")
        for name, value in (("params", params), ("config", config)):
            if value is not None and not isinstance(value, dict):
                raise ApiError(400, "invalid_request_error", f"{name} must be an object")
        stored = await self.store.aget(sid)
        want = if_match(request)
        if want is not None and want != stored.revision:
            raise ConflictError(sid, expected=want, current=stored.revision)
        result = await asyncio.to_thread(self.core.execute_action, stored.session, action_id, params or {},
                                         {**self.config, **(config or {})})
        revision = await self.store.aput(result.session, expected_revision=stored.revision)
        return JSONResponse({"id": sid, "revision": revision, "payload": json.loads(json.dumps(result.payload,
                                                                                               default=plain))},
                            headers=etag(revision))
