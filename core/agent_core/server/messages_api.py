"""``POST /v1/messages``: the Anthropic Messages facade over the same pipeline as the OpenAI one.

An Anthropic client (the ``anthropic`` SDK, or anything speaking the Messages API)
reaches every installed provider and plugin, as an OpenAI client does through
``/v1/chat/completions``: the same config policy, the same ``X-Session-Id`` storage,
the same cancelling by ``X-Request-Id``. Tools are the client's: calls go back as
``tool_use`` blocks and the server never runs them.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from ..errors import InvalidArgumentError, StoreError
from .anthropic_compat import (
    DROPPABLE,
    FIELDS,
    AnthropicBody,
    error_type_for,
    message_body,
    messages_config,
    messages_session,
)
from .anthropic_stream import MessageStream
from .bodies import parse_body
from .errors import status_for_name
from .fields import declared_for, fit_to_provider
from .http import (
    SSE_HEADERS,
    request_id_of,
    session_id_of,
    until_output,
    watch_disconnect,
)
from .openai_compat import reply_of, split_model

__all__ = ["MessagesRoutes", "anthropic_error", "as_anthropic"]


def anthropic_error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """An error in the Messages API's shape: ``{"type": "error", "error": {"type", "message"}}``."""
    return JSONResponse({"type": "error", "error": {"type": error_type_for(status), "message": message}}, status,
                        headers=headers)


def as_anthropic(response: Response) -> Response:
    """An error response of the routes' shape (``{"error": {...}}``) in the Messages API's shape."""
    import json

    try:
        message = json.loads(bytes(response.body))["error"]["message"]
    except (ValueError, KeyError, TypeError):
        message = "the request failed"
    headers = {k: v for k, v in response.headers.items() if k in ("retry-after", "etag")}
    return anthropic_error(response.status_code, message, headers)


class MessagesRoutes:
    """The Messages facade's route; mixed into the server, whose attributes and facade helpers it uses."""

    async def messages(self, request: Request) -> Response:
        body = parse_body(await request.body(), AnthropicBody, max_depth=self.settings.max_json_depth)
        split_model(body.model, self.core.plugins("provider"))
        client = messages_config(body)
        config = self.config_for(request, client)
        fit_to_provider(config, client, declared_for(self.core, config), FIELDS, DROPPABLE)
        config.update(max_iterations=1, run_pending_tool_calls=False, stream=bool(body.stream))
        sid = session_id_of(request)
        session = messages_session(sid or uuid.uuid4().hex, body, self.settings.max_messages)
        store = self.store_for(request) if sid is not None else None
        if store is not None:
            session = await self._with_stored_metadata(store, session)
        client_rid = request_id_of(request)
        rid = self.tenant(request).scope(client_rid)
        headers = {"x-request-id": client_rid, "request-id": client_rid}
        watcher = asyncio.ensure_future(watch_disconnect(request, lambda: self.core.cancel_request(rid)))
        self._running.add(rid)
        if not config["stream"]:
            try:
                result = await self.core.arequest(session, config, request_id=rid)
            finally:
                watcher.cancel()
                self._running.discard(rid)
            if store is not None:
                headers["x-session-revision"] = str(await self._save_exchange(store, result.session))
            reply = reply_of(result.final_messages)
            return JSONResponse(message_body(client_rid, body.model, reply, result.usage), headers=headers)
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
            return as_anthropic(failed)
        stream = self._messages_stream(rid, MessageStream(client_rid, body.model), first, events, watcher, store)
        return StreamingResponse(stream, media_type="text/event-stream", headers={**headers, **SSE_HEADERS})

    async def _messages_stream(self, rid: str, out: MessageStream, first: list[Any], events: AsyncIterator[Any],
                               watcher: asyncio.Future[None], store: Any) -> AsyncIterator[bytes]:
        """The answer as the Messages API's events; ``rid`` is the engine's id."""
        finished = False
        reply = None
        try:
            yield out.start()

            async def all_events() -> AsyncIterator[Any]:
                for event in first:
                    yield event
                async for event in events:
                    yield event

            async for event in all_events():
                if event.type == "partial":
                    yield out.partial(event.message)
                elif event.type == "final" and event.message.role == "assistant":
                    reply = event.message
                    yield out.final(reply)
                elif event.type == "error":
                    finished = True
                    yield out.error(error_type_for(status_for_name(event.error.type)), event.error.message)
                    return
                elif event.type == "done":
                    if event.outcome.reason == "cancelled":
                        finished = True
                        yield out.error("api_error", f"request {out.request_id} was cancelled: {event.outcome.detail}")
                        return
                    if store is not None:
                        try:
                            await self._save_exchange(store, event.session)
                        except (StoreError, InvalidArgumentError) as exc:
                            finished = True
                            yield out.error("api_error", str(exc))
                            return
                    finished = True
                    yield out.end(reply, event.usage)
        finally:
            watcher.cancel()
            self._running.discard(rid)
            if not finished:
                self.core.cancel_request(rid)
            await events.aclose()  # type: ignore[attr-defined]

