"""One function runs any facade's request: :func:`run_facade`.

The dialects differ in their bodies and their frames, not in how a turn runs. So a
request goes the same way whichever facade it came in by: the facade reads the body into
a :class:`~.protocol.Plan`; the tenant's policy and the provider's declared keys shape its
config (:func:`~.turn.fit_config`); its turns run (``n`` side by side for a Chat
Completions ``n``), whole or streamed; and the facade writes what came back. The steps of
a turn are in :mod:`.turn`; the stream's events pass through :func:`stream_frames` on
their way to the facade's :class:`~.protocol.Frames`, one loop for every dialect.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from ..http.channel import chained, merged
from ..http.event_stream import EventStreamResponse, Pushed
from ..http.ready import Relay
from ..access.ids import session_id_of
from ..http.wire import SSE_HEADERS
from ..state import ServerState, state_of
from .protocol import Facade, Frames
from .turn import FacadeTurn, abandon, cut_short, early_end, fit_config, open_stream, release, retracted, run_whole, start_turn

__all__ = ["rate_limits", "run_facade", "stream_frames"]


async def run_facade(facade: Facade, request: Request) -> Response:
    """Answer ``request`` in ``facade``'s dialect: plan, fit, run its turns, write the answer whole or streamed."""
    state = state_of(request)
    # the client's X-Session-Id names the session its exchange is kept under; else the session is the request's own
    session_id = session_id_of(request) or os.urandom(16).hex()
    plan = await facade.plan(state, request, await request.body(), session_id)
    config = state.config_for(request, plan.client)
    resolution = fit_config(state, config, plan.client, plan.fields, plan.droppable, plan.stream)
    turns = [await start_turn(state, request, plan.session, config, choice=i, resolution=None if i else resolution)
             for i in range(plan.choices)]
    for turn in turns:
        turn.group = [t.rid for t in turns]
    rid = turns[0].client_rid
    headers = facade.headers(rid)
    if not plan.stream:
        results = await _run_all(state, request, turns)
        body, reply = facade.answer(plan, rid, [result for result, _ in results])
        return Response(body, media_type="application/json", headers={**rate_limits(reply), **headers, **results[0][1]})
    if len(turns) == 1:  # the usual single choice opens in this task; gather would make one for it
        opened = [await open_stream(state, request, turns[0])]
    else:
        opened = await asyncio.gather(*(open_stream(state, request, t) for t in turns))
    failed = next((f for _, f in opened if f is not None), None)
    if failed is not None:
        await abandon(state, turns)
        return failed
    streams = [chained(first, t.events) for (first, _), t in zip(opened, turns, strict=True)]
    events = streams[0] if len(streams) == 1 else merged(streams)  # one choice: its events, not (0, event)
    out = facade.frames(plan, rid)
    frames = stream_frames(state, turns, out, events)
    return EventStreamResponse(_stream_out(state, turns, frames, out), media_type="text/event-stream",
                               headers={**headers, **SSE_HEADERS})


async def _run_all(state: ServerState, request: Request, turns: Sequence[FacadeTurn]) -> list[tuple[Any, dict[str, str]]]:
    """Run every choice's turn side by side; one failing stops the others."""
    try:
        if len(turns) == 1:  # the usual single choice runs in this task; gather would make one for it
            return [await run_whole(state, request, turns[0])]
        return list(await asyncio.gather(*(run_whole(state, request, t) for t in turns)))
    except BaseException:
        for turn in turns:
            state.core.cancel_request(turn.rid)
        raise


async def stream_frames(state: ServerState, turns: Sequence[FacadeTurn], out: Frames,
                        events: AsyncIterator[Any]) -> AsyncIterator[bytes]:
    """The turns' events as ``out`` writes them, from its opening to its closing.

    An error, a cancelled request or a failed X-Session-Id save ends the stream early with
    ``out``'s failure frames; so does an upstream retry after text or reasoning of that
    choice was shown (a retry before any is not seen).
    """
    frame = out.opening()
    if frame:
        yield frame
    many = len(turns) > 1
    async for item in events:  # several choices: (index, event) pairs (merged); one: its events
        i, event = item if many else (0, item)
        kind = event.type
        if kind == "partial":
            frame = out.partial(i, event.message)
        elif kind == "final":
            if event.message.role != "assistant":
                continue
            frame = out.final(i, event.message)
        elif kind == "retract":  # no dialect's wire can take back what was sent
            stop = retracted(state, turns[i], event, out.shown(i))
            if stop is not None:
                yield out.failed(stop)
                return
            continue
        elif kind == "error" or kind == "done":
            stop = await early_end(state, turns[i], event)
            if stop is not None:
                yield out.failed(stop)
                return
            if kind == "error":
                continue
            frame = out.done(i, event.usage)
        else:
            continue
        if frame:
            yield frame
    frame = out.closing()
    if frame:
        yield frame


def _stream_out(state: ServerState, turns: Sequence[FacadeTurn], frames: AsyncIterator[bytes], out: Frames) -> Pushed:
    """The body that sends ``frames`` and owns the request's end: a client gone before the last frame cancels upstream.

    The frames that were ready together go out in one message, sent by the response's
    own loop (:class:`~agent_core.server.http.ready.Relay`).
    """

    async def end(finished: bool) -> None:
        if not finished:
            await abandon(state, turns)
            return
        for turn in turns:
            release(state, turn)
            await turn.events.aclose()

    return Pushed(Relay(frames, out.is_last, lambda: cut_short(state, turns), end).send_all)


def rate_limits(reply: Any) -> dict[str, str]:
    """The upstream's rate-limit headers the provider kept with a reply, for the client's own pacing.

    Only a non-streamed answer has them in time: a streamed one sends its headers before the
    reply is complete.
    """
    limits = reply.metadata.get("rate_limits") if reply is not None else None
    return {str(k): str(v) for k, v in limits.items()} if limits else {}
