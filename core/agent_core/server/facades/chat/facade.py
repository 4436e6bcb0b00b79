"""``/v1/chat/completions``: the OpenAI-compatible facade over the engine.

The client's conversation arrives whole in each request; ``X-Session-Id`` also keeps
the exchange in the store (see ``docs/server.md``). What each request field becomes is
in :mod:`.chat_fields`; how a name becomes a model, in :mod:`.models`. ``n`` choices are
``n`` turns run side by side, their streams merged into one, as the API interleaves them.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from ...access.amounts import chat_amounts, early_check
from ...http.bodies import ChatBody, aparse_fields
from .fields import chat_config, droppable
from ...http.errors import ApiError
from ...http.event_stream import EventStreamResponse
from ...http.failures import sse_error_frame
from ...http.wire import SSE_HEADERS, json_bytes, session_id_of, sse_frame
from ..models import ModelRoutes
from .dialect import (
    TextFrames,
    chat_session,
    choice_finish,
    chunk,
    completion_body,
    logprobs_of,
    reply_of,
    usage_body,
    wire_calls,
)
from ..runner import FacadeTurn, TurnRoutes, chained, merged, rate_limits


class FacadeRoutes(TurnRoutes, ModelRoutes):
    """The facade's routes; mixed into the server, whose attributes they use."""

    async def chat(self, request: Request) -> Response:
        body, rest = await aparse_fields(await request.body(), ChatBody, max_depth=self.settings.max_json_depth,
                                         check=lambda parsed: chat_amounts(parsed.messages).check(self.settings),
                                         early=early_check(self.settings))
        client = chat_config(body, rest, self._resolve_model(body.model), self._declared())
        config = self.config_for(request, client)
        resolution = self._fit_config(config, client, {}, droppable, bool(body.stream))
        session = chat_session(session_id_of(request) or os.urandom(16).hex(), body.messages, self.settings.max_messages)
        turns = [await self._facade_turn(request, session, config, choice=i, resolution=None if i else resolution)
                 for i in range(self._choices(request, body))]
        for turn in turns:
            turn.group = [t.rid for t in turns]
        headers = {"x-request-id": turns[0].client_rid}
        legacy = body.functions is not None
        if not body.stream:
            results = await self._run_all(request, turns)
            replies = [reply_of(result.final_messages) for result, _ in results]
            answer = completion_body(turns[0].client_rid, body.model, replies,
                                     usage_body(*(result.usage for result, _ in results)), legacy)
            return Response(json_bytes(answer), media_type="application/json",
                            headers={**rate_limits(replies[0]), **headers, **results[0][1]})
        if len(turns) == 1:  # the usual single choice opens in this task; gather would make one for it
            opened = [await self._open_stream(request, turns[0])]
        else:
            opened = await asyncio.gather(*(self._open_stream(request, t) for t in turns))
        failed = next((f for _, f in opened if f is not None), None)
        if failed is not None:
            await self._abandon(turns)
            return failed
        include_usage = bool(body.stream_options and body.stream_options.include_usage)
        streams = [chained(first, t.events) for (first, _), t in zip(opened, turns, strict=True)]
        events = streams[0] if len(streams) == 1 else merged(streams)  # one choice: its events, not (0, event)
        frames = self._chat_frames(turns, body.model, events, include_usage, legacy)
        return EventStreamResponse(self._stream_out(turns, frames, lambda frame: frame is _DONE),
                                   media_type="text/event-stream", headers={**headers, **SSE_HEADERS})

    def _choices(self, request: Request, body: ChatBody) -> int:
        """How many choices (``n``) the request asks for, within the operator's ``max_choices``."""
        n = 1 if body.n is None else body.n
        if not 1 <= n <= self.settings.max_choices:
            raise ApiError(400, "invalid_request_error",
                           f"n: must be from 1 to {self.settings.max_choices} on this server (max_choices), got {n}",
                           param="n")
        if n > 1 and session_id_of(request) is not None:
            raise ApiError(400, "invalid_request_error",
                           "n: a stored exchange (X-Session-Id) keeps one reply; ask for n=1", param="n")
        return n

    async def _run_all(self, request: Request, turns: Sequence[FacadeTurn]) -> list[tuple[Any, dict[str, str]]]:
        """Run every choice's turn side by side; one failing stops the others."""
        try:
            if len(turns) == 1:  # the usual single choice runs in this task; gather would make one for it
                return [await self._run_whole(request, turns[0])]
            return list(await asyncio.gather(*(self._run_whole(request, t) for t in turns)))
        except BaseException:
            for turn in turns:
                self.core.cancel_request(turn.rid)
            raise

    async def _chat_frames(self, turns: Sequence[FacadeTurn], model: str, events: AsyncIterator[Any],
                           include_usage: bool, legacy: bool) -> AsyncIterator[bytes]:
        """A role chunk per choice, the replies' chunks as they come, a finish chunk per choice, usage, ``[DONE]``.

        An error, a cancelled request or a failed X-Session-Id save ends the stream early: an
        error frame, then ``[DONE]``; so does an upstream retry after text of that choice was
        sent (a retry before it is not seen). The chunks and errors name the client's request id.
        """
        rid, created, n = turns[0].client_rid, int(time.time()), len(turns)
        texts = TextFrames(rid, model, created, n)
        # Each choice's role chunk waits for its first output, so it can say what OpenAI's does: content ""
        # ahead of text, null ahead of tool calls (a client that appends content to "" never meets a null).
        opened = [False] * n

        def role(i: int, content: str | None) -> bytes:
            opened[i] = True
            return sse_frame(chunk(rid, model, created, {"role": "assistant", "content": content, "refusal": None},
                                   index=i))

        streamed, replies, usages = [False] * n, [None] * n, [None] * n
        async for item in events:  # several choices: (index, event) pairs (merged); one: its events
            i, event = item if n > 1 else (0, item)
            if event.type == "partial":
                text = event.message.content
                if isinstance(text, str) and text:
                    if not opened[i]:
                        yield role(i, "")
                    streamed[i] = True
                    yield texts.frame(text, i)
            elif event.type == "final" and event.message.role == "assistant":
                replies[i] = event.message
                if not opened[i]:
                    content = event.message.content
                    yield role(i, None if wire_calls(event.message) and not (isinstance(content, str) and content)
                               else "")
                for frame in _reply_frames(rid, model, created, event.message, streamed[i], i, legacy):
                    yield frame
            elif event.type == "retract":  # the wire cannot take back what was sent
                stop = self._retracted(turns[i], event, streamed[i])
                if stop is not None:
                    yield sse_error_frame(stop, "openai")
                    yield _DONE
                    return
            elif event.type in ("error", "done"):
                stop = await self._early_end(turns[i], event)
                if stop is not None:
                    yield sse_error_frame(stop, "openai")
                    yield _DONE
                    return
                if event.type == "done":
                    if not opened[i]:  # no reply at all: the role chunk still opens the choice
                        yield role(i, "")
                    usages[i] = event.usage
                    # the reply's log-probabilities, when asked for, ride on its last chunk (they come whole)
                    yield sse_frame(chunk(rid, model, created, {}, choice_finish(replies[i], legacy), index=i,
                                          logprobs=logprobs_of(replies[i])))
        if include_usage:
            yield sse_frame(chunk(rid, model, created, None, usage=usage_body(*usages)))
        yield _DONE


_DONE = b"data: [DONE]\n\n"


def _reply_frames(rid: str, model: str, created: int, reply: Any, streamed: bool, index: int,
                  legacy: bool) -> list[bytes]:
    """A final reply's frames: its text when no partial carried it, then its tool calls (or legacy function call)."""
    frames = []
    if not streamed and isinstance(reply.content, str) and reply.content:
        frames.append(sse_frame(chunk(rid, model, created, {"content": reply.content}, index=index)))
    calls = wire_calls(reply)
    if calls and legacy:
        frames.append(sse_frame(chunk(rid, model, created, {"function_call": calls[0]["function"]}, index=index)))
    elif calls:
        delta = [{"index": i, **c} for i, c in enumerate(calls)]
        frames.append(sse_frame(chunk(rid, model, created, {"tool_calls": delta}, index=index)))
    return frames
