"""``/v1/chat/completions`` and ``/v1/models``: the OpenAI-compatible facade over the engine.

The client's conversation arrives whole in each request; ``X-Session-Id``
also keeps the exchange in the store (see ``docs/server.md``).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import aclosing
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from ..errors import (
    ConflictError,
    InvalidArgumentError,
    SessionNotFoundError,
    StoreError,
)
from ..types import Session
from ..values.native_history import NATIVE_KEY
from .bodies import ChatBody, parse_body
from .errors import sse_error
from .http import (
    SSE_HEADERS,
    request_id_of,
    session_id_of,
    sse_frame,
    until_output,
    watch_disconnect,
)
from .openai_compat import (
    chat_config,
    chat_session,
    chunk,
    completion_body,
    finish_reason,
    usage_body,
    wire_calls,
)


class FacadeRoutes:
    """The facade's routes; mixed into the server, whose attributes they use."""

    async def chat(self, request: Request) -> Response:
        body = parse_body(await request.body(), ChatBody, max_depth=self.settings.max_json_depth)
        client = chat_config(body, self.core.plugins("provider"), self._declared())
        config = self.config_for(request, client)
        config.update(max_iterations=1, run_pending_tool_calls=False, stream=bool(body.stream))
        model = body.model
        sid = session_id_of(request)
        session = chat_session(sid or uuid.uuid4().hex, body.messages, self.settings.max_messages)
        store = self.store_for(request) if sid is not None else None
        if store is not None:  # the exchange is kept under that id: carry the stored metadata (a title...)
            session = await self._with_stored_metadata(store, session)
        client_rid = request_id_of(request)
        rid = self.tenant(request).scope(client_rid)  # the engine's id: no tenant can name another's
        headers = {"x-request-id": client_rid}
        if not config["stream"]:
            watcher = asyncio.ensure_future(watch_disconnect(request, lambda: self.core.cancel_request(rid)))
            self._running.add(rid)
            try:
                result = await self.core.arequest(session, config, request_id=rid)
            finally:
                watcher.cancel()
                self._running.discard(rid)
            if store is not None:
                headers["x-session-revision"] = str(await self._save_exchange(store, result.session))
            return JSONResponse(completion_body(client_rid, model, result.final_messages, result.usage),
                                headers=headers)
        include_usage = bool(body.stream_options and body.stream_options.include_usage)
        watcher = asyncio.ensure_future(watch_disconnect(request, lambda: self.core.cancel_request(rid)))
        self._running.add(rid)
        try:
            events = self.core.astream_request(session, config, request_id=rid)
            first, failed = await until_output(events)
        except BaseException:
            watcher.cancel()
            self._running.discard(rid)
            raise
        if failed is not None:
            watcher.cancel()
            self._running.discard(rid)
            return failed
        stream = self._chat_stream(rid, client_rid, model, first, events, include_usage, watcher, store)
        return StreamingResponse(stream, media_type="text/event-stream", headers={**headers, **SSE_HEADERS})

    async def _chat_stream(self, rid: str, client_rid: str, model: str, first: list[Any],
                           events: AsyncIterator[Any], include_usage: bool, watcher: asyncio.Future[None],
                           store: Any) -> AsyncIterator[bytes]:
        """The answer as ``chat.completion.chunk`` frames; ``rid`` is the engine's id, ``client_rid`` the client's.

        The frames are :meth:`_chat_frames`'; this generator owns the request's end: a client that
        goes away before ``[DONE]`` cancels the upstream request too.
        """
        finished = False
        try:
            frames = self._chat_frames(client_rid, model, _chained(first, events), include_usage, store)
            async with aclosing(frames):
                async for frame in frames:
                    finished = frame is _DONE  # the last frame, however the stream ends
                    yield frame
        finally:
            watcher.cancel()
            self._running.discard(rid)
            if not finished:  # the client went away mid-stream: stop the upstream request too
                self.core.cancel_request(rid)
            await events.aclose()  # type: ignore[attr-defined]

    async def _chat_frames(self, rid: str, model: str, events: AsyncIterator[Any], include_usage: bool,
                           store: Any) -> AsyncIterator[bytes]:
        """The role chunk, the reply's chunks as they come, the finish chunk (and usage), then ``[DONE]``.

        An error, a cancelled request or a failed X-Session-Id save ends the stream early: an
        error frame, then ``[DONE]``. The chunks and errors name ``rid``, the client's id.
        """
        created = int(time.time())
        yield sse_frame(chunk(rid, model, created, {"role": "assistant", "content": ""}))
        streamed, reply, usage = False, None, None
        async for event in events:
            if event.type == "partial":
                text = event.message.content
                if isinstance(text, str) and text:
                    streamed = True
                    yield sse_frame(chunk(rid, model, created, {"content": text}))
            elif event.type == "final" and event.message.role == "assistant":
                reply = event.message
                for frame in _reply_frames(rid, model, created, reply, streamed):
                    yield frame
            elif event.type in ("error", "done"):
                usage = event.usage if event.type == "done" else usage
                stop = await self._chat_stop(rid, event, store)
                if stop is not None:
                    yield stop
                    yield _DONE
                    return
        yield sse_frame(chunk(rid, model, created, {}, finish_reason(reply)))
        if include_usage and usage is not None:
            yield sse_frame(chunk(rid, model, created, None, usage=usage_body(usage)))
        yield _DONE

    async def _chat_stop(self, rid: str, event: Any, store: Any) -> bytes | None:
        """The error frame that ends the stream at ``event`` (an error, a cancelled or unsaved request), or None.

        A done event is where an X-Session-Id exchange is saved: before the stream says it is over.
        """
        if event.type == "error":
            return sse_error(event.error.type, event.error.message)
        if event.outcome.reason == "cancelled":  # DELETE /v1/requests/{id}: not a normal end
            return sse_error("request_cancelled", f"request {rid} was cancelled: {event.outcome.detail}")
        if store is not None:
            try:
                await self._save_exchange(store, event.session)
            except (StoreError, InvalidArgumentError) as exc:
                return sse_error(type(exc).__name__, str(exc))
        return None

    async def _with_stored_metadata(self, store: Any, session: Session) -> Session:
        try:
            stored = await store.aget(session.session_id)
        except SessionNotFoundError:
            return session
        meta = {k: v for k, v in stored.session.metadata.items() if k != NATIVE_KEY}
        return Session(session.session_id, list(session.messages), meta)

    async def _save_exchange(self, store: Any, session: Session) -> int:
        """Store a facade exchange (X-Session-Id): the client's conversation plus the reply.

        The client sent the whole conversation, so it is the truth: a save that loses a race is
        simply made again on the newer revision (no model call is repeated).
        """
        last: ConflictError | None = None
        for _ in range(self.retries + 1):
            try:
                expected = (await store.aget(session.session_id)).revision
            except SessionNotFoundError:
                expected = 0
            try:
                return int(await store.aput(session, expected_revision=expected))
            except ConflictError as exc:
                last = exc
        assert last is not None
        raise last

    async def models(self, request: Request) -> Response:
        policy = self.tenant(request).policy
        data = []
        for provider in self.core.plugins("provider"):
            try:
                listed = await asyncio.to_thread(self.core.get_models, {**self.config, "provider": provider})
            except Exception:  # noqa: BLE001 - a provider without credentials lists nothing, the rest still list
                continue
            for m in listed:
                mid = m.get("id") if isinstance(m, Mapping) else None
                if isinstance(mid, str) and policy.offers(provider, mid):
                    data.append({"id": f"{provider}/{mid}", "object": "model", "created": 0, "owned_by": provider})
        return JSONResponse({"object": "list", "data": data})


_DONE = b"data: [DONE]\n\n"


async def _chained(first: list[Any], events: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """The events ``until_output`` already read, then the rest."""
    for event in first:
        yield event
    async for event in events:
        yield event


def _reply_frames(rid: str, model: str, created: int, reply: Any, streamed: bool) -> list[bytes]:
    """A final reply's frames: its text when no partial carried it, then its tool calls."""
    frames = []
    if not streamed and isinstance(reply.content, str) and reply.content:
        frames.append(sse_frame(chunk(rid, model, created, {"content": reply.content})))
    calls = wire_calls(reply)
    if calls:
        delta = [{"index": i, **c} for i, c in enumerate(calls)]
        frames.append(sse_frame(chunk(rid, model, created, {"tool_calls": delta})))
    return frames
