"""``POST /v1/responses``: OpenAI's Responses API over the same pipeline as the other facades.

The Responses API is what the OpenAI Agents SDK and Codex speak by default. Like
``/v1/chat/completions`` it reaches any provider with the same config policy,
``X-Session-Id`` storage and cancelling by ``X-Request-Id``; tools are the client's
(calls go back as ``function_call`` items, results come in as ``function_call_output``
items). Unlike OpenAI's own endpoint it stores nothing: see :mod:`.responses_compat`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from ...access.amounts import early_check, responses_amounts
from ...http.bodies import aparse_fields
from ..chat.fields import droppable
from ...http.event_stream import EventStreamResponse
from ...http.failures import openai_body
from ..fields import with_extra_fields
from ...http.wire import SSE_HEADERS, json_bytes, session_id_of
from ..chat.dialect import reply_of
from .dialect import (
    FIELDS,
    ResponsesBody,
    finish_of,
    output_items,
    response_body,
    responses_config,
    responses_session,
    usage_of,
)
from .stream import ResponseStream
from ..runner import FacadeTurn, TurnRoutes, chained, rate_limits

__all__ = ["ResponsesRoutes"]


class ResponsesRoutes(TurnRoutes):
    """The Responses facade's route; mixed into the server, whose attributes and facade helpers it uses."""

    async def responses(self, request: Request) -> Response:
        body, rest = await aparse_fields(await request.body(), ResponsesBody, max_depth=self.settings.max_json_depth,
                                         check=lambda parsed: responses_amounts(parsed).check(self.settings, "input"),
                                         early=early_check(self.settings, "input"))
        client = responses_config(body, self._resolve_model(body.model))
        with_extra_fields(client, rest, self._declared(), "Responses")
        config = self.config_for(request, client)
        resolution = self._fit_config(config, client, FIELDS, droppable, bool(body.stream))
        session = responses_session(session_id_of(request) or uuid.uuid4().hex, body, self.settings.max_messages)
        turn = await self._facade_turn(request, session, config, resolution=resolution)
        headers = {"x-request-id": turn.client_rid}
        created = int(time.time())
        if not body.stream:
            result, saved = await self._run_whole(request, turn)
            reply = reply_of(result.final_messages)
            status, incomplete = finish_of(reply)
            answer = response_body(turn.client_rid, body, created, status=status,
                                   output=output_items(turn.client_rid, reply),
                                   usage=usage_of(result.usage, reply), incomplete=incomplete)
            return Response(json_bytes(answer), media_type="application/json",
                            headers={**rate_limits(reply), **headers, **saved})
        first, failed = await self._open_stream(request, turn)
        if failed is not None:
            return failed
        out = ResponseStream(turn.client_rid, body, created)
        frames = self._responses_frames(turn, out, chained(first, turn.events))
        return EventStreamResponse(self._stream_out([turn], frames, lambda _frame: out.ended),
                                   media_type="text/event-stream", headers={**headers, **SSE_HEADERS})

    async def _responses_frames(self, turn: FacadeTurn, out: ResponseStream,
                                events: AsyncIterator[Any]) -> AsyncIterator[bytes]:
        """The answer as Responses events, from ``response.created`` to ``response.completed``.

        An error, a cancelled request or a failed X-Session-Id save ends it early with an
        ``error`` event and ``response.failed``; so does an upstream retry after text or
        reasoning was sent, since a delta cannot be taken back (a retry before any is not seen).
        """
        yield out.start()
        reply = None
        async for event in events:
            if event.type == "partial":
                frame = out.partial(event.message)
                if frame:
                    yield frame
            elif event.type == "final" and event.message.role == "assistant":
                reply = event.message
                frame = out.final(reply)
                if frame:
                    yield frame
            elif event.type == "retract":
                stop = self._retracted(turn, event, out.streamed_text or out.streamed_reasoning)
                if stop is not None:
                    yield out.error(openai_body(stop)["error"])
                    return
            elif event.type in ("error", "done"):
                stop = await self._early_end(turn, event)
                if stop is not None:
                    yield out.error(openai_body(stop)["error"])
                    return
                if event.type == "done":
                    yield out.end(reply, event.usage)
                    return
