"""``POST /v1/messages``: the Anthropic Messages facade over the same pipeline as the OpenAI one.

An Anthropic client (the ``anthropic`` SDK, or anything speaking the Messages API)
reaches every installed provider and plugin, as an OpenAI client does through
``/v1/chat/completions``: the same config policy, the same ``X-Session-Id`` storage,
the same cancelling by ``X-Request-Id``. Tools are the client's: calls go back as
``tool_use`` blocks and the server never runs them.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from .dialect import (
    DROPPABLE,
    FIELDS,
    AnthropicBody,
    message_body,
    messages_config,
    messages_session,
)
from ...access.amounts import early_check, messages_amounts
from .stream import MessageStream
from ...http.bodies import aparse_fields
from ...http.event_stream import EventStreamResponse
from ...http.failures import anthropic_body
from ..fields import with_extra_fields
from ...http.wire import SSE_HEADERS, json_bytes, session_id_of
from ..chat.dialect import reply_of
from ..runner import FacadeTurn, TurnRoutes, chained, rate_limits

__all__ = ["MessagesRoutes"]


class MessagesRoutes(TurnRoutes):
    """The Messages facade's route; mixed into the server, whose attributes and facade helpers it uses."""

    async def messages(self, request: Request) -> Response:
        body, rest = await aparse_fields(await request.body(), AnthropicBody, max_depth=self.settings.max_json_depth,
                                         check=lambda parsed: messages_amounts(parsed).check(self.settings),
                                         early=early_check(self.settings))
        client = messages_config(body, self._resolve_model(body.model))
        with_extra_fields(client, rest, self._declared(), "Messages")
        config = self.config_for(request, client)
        resolution = self._fit_config(config, client, FIELDS, lambda key, _value: key in DROPPABLE, bool(body.stream))
        session = messages_session(session_id_of(request) or uuid.uuid4().hex, body, self.settings.max_messages)
        turn = await self._facade_turn(request, session, config, resolution=resolution)
        headers = {"x-request-id": turn.client_rid, "request-id": turn.client_rid}
        if not body.stream:
            result, saved = await self._run_whole(request, turn)
            reply = reply_of(result.final_messages)
            return Response(json_bytes(message_body(turn.client_rid, body.model, reply, result.usage)),
                            media_type="application/json", headers={**rate_limits(reply), **headers, **saved})
        first, failed = await self._open_stream(request, turn)
        if failed is not None:
            return failed
        out = MessageStream(turn.client_rid, body.model)
        frames = self._messages_frames(turn, out, chained(first, turn.events))
        return EventStreamResponse(self._stream_out([turn], frames, lambda _frame: out.ended),
                                   media_type="text/event-stream", headers={**headers, **SSE_HEADERS})

    async def _messages_frames(self, turn: FacadeTurn, out: MessageStream,
                               events: AsyncIterator[Any]) -> AsyncIterator[bytes]:
        """The answer as the Messages API's events, from ``message_start`` to ``message_stop``.

        An error, a cancelled request or a failed X-Session-Id save ends it early with an
        ``error`` event, as the Messages API does mid-stream; so does an upstream retry after
        text or thinking was sent (a retry before it is not seen).
        """
        yield out.start()
        reply = None
        async for event in events:
            if event.type == "partial":
                yield out.partial(event.message)
            elif event.type == "final" and event.message.role == "assistant":
                reply = event.message
                yield out.final(reply)
            elif event.type == "retract":  # the Messages API cannot take back what was sent
                stop = self._retracted(turn, event, out.streamed_text or out.streamed_reasoning)
                if stop is not None:
                    error = anthropic_body(stop)["error"]
                    yield out.error(error["type"], error["message"])
                    return
            elif event.type in ("error", "done"):
                stop = await self._early_end(turn, event)
                if stop is not None:
                    error = anthropic_body(stop)["error"]
                    yield out.error(error["type"], error["message"])
                    return
                if event.type == "done":
                    yield out.end(reply, event.usage)
                    return
