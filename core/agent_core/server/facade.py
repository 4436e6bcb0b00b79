"""``/v1/chat/completions`` and ``/v1/models``: the OpenAI-compatible facade over the engine.

The client's conversation arrives whole in each request; ``X-Session-Id``
also keeps the exchange in the store (see ``docs/server.md``).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from .bodies import ChatBody, parse_body
from .errors import sse_error
from .http import SSE_HEADERS, session_id_of, sse_frame
from .openai_compat import (
    chat_config,
    chat_session,
    chunk,
    completion_body,
    finish_reason,
    usage_body,
    wire_calls,
)
from .turns import FacadeTurn, TurnRoutes, chained


class FacadeRoutes(TurnRoutes):
    """The facade's routes; mixed into the server, whose attributes they use."""

    async def chat(self, request: Request) -> Response:
        body = parse_body(await request.body(), ChatBody, max_depth=self.settings.max_json_depth)
        client = chat_config(body, self.core.plugins("provider"), self._declared())
        config = self.config_for(request, client)
        config.update(max_iterations=1, run_pending_tool_calls=False, stream=bool(body.stream))
        session = chat_session(session_id_of(request) or uuid.uuid4().hex, body.messages, self.settings.max_messages)
        turn = await self._facade_turn(request, session, config)
        headers = {"x-request-id": turn.client_rid}
        if not body.stream:
            result, saved = await self._run_whole(request, turn)
            return JSONResponse(completion_body(turn.client_rid, body.model, result.final_messages, result.usage),
                                headers={**headers, **saved})
        first, failed = await self._open_stream(request, turn)
        if failed is not None:
            return failed
        include_usage = bool(body.stream_options and body.stream_options.include_usage)
        frames = self._chat_frames(turn, body.model, chained(first, turn.events), include_usage)
        return StreamingResponse(self._stream_out(turn, frames, lambda frame: frame is _DONE),
                                 media_type="text/event-stream", headers={**headers, **SSE_HEADERS})

    async def _chat_frames(self, turn: FacadeTurn, model: str, events: AsyncIterator[Any],
                           include_usage: bool) -> AsyncIterator[bytes]:
        """The role chunk, the reply's chunks as they come, the finish chunk (and usage), then ``[DONE]``.

        An error, a cancelled request or a failed X-Session-Id save ends the stream early: an
        error frame, then ``[DONE]``. The chunks and errors name the client's request id.
        """
        rid, created = turn.client_rid, int(time.time())
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
                stop = await self._early_end(turn, event)
                if stop is not None:
                    yield sse_error(*stop)
                    yield _DONE
                    return
        yield sse_frame(chunk(rid, model, created, {}, finish_reason(reply)))
        if include_usage and usage is not None:
            yield sse_frame(chunk(rid, model, created, None, usage=usage_body(usage)))
        yield _DONE

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
