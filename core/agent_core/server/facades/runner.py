"""The shared turn runner: one function, :func:`run_facade`, answers any facade's request.

The dialects differ in their bodies and their frames, not in how a turn runs. So a
request goes the same way whichever facade it came in by: the facade reads the body into
a :class:`~.protocol.Plan`; the tenant's policy and the provider's declared keys shape its
config (:func:`~.fields.fit_config`); its turns run (``n`` side by side for a Chat
Completions ``n``), whole or streamed; and the facade writes what came back, whole
(:meth:`~.protocol.Facade.answer`) or as the frames its :class:`~.protocol.Frames` makes of
each event, in the one loop every dialect shares (:func:`stream_frames`).

What every turn does is written once, below: the client's request id scoped to its
tenant, an ``X-Session-Id`` exchange kept in the store, the upstream cancelled when the
client hangs up, an error before the first output answered with a status, and a stream
ended early by an error, a cancelled request or a failed save.

A provider that retries after its stream broke midway (when the operator allows
retries: the facades' default is ``max_retries: 0``) sends a ``retract`` event. No
facade's wire can take text back, so a retry is passed on only while it changes nothing
the client has: before any text of the answer was sent the new attempt simply streams in
its place; after, the stream ends with the failure that broke it, in the API's own error
shape, as it would have without the retry (:func:`retracted`), and the request is
cancelled upstream.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, TypeVar

from starlette.requests import Request
from starlette.responses import Response

from ... import NATIVE_KEY, Resolution
from ...errors import ConflictError, InvalidArgumentError, SessionNotFoundError, StoreError
from ...types import Session
from ..access.amounts import Amounts, early_check
from ..access.ids import request_id_of, session_id_of
from ..http.bodies import aparse_fields
from ..http.channel import chained, merged
from ..http.event_stream import EventStreamResponse, Pushed
from ..http.failures import Failure, failure_of, failure_of_info
from ..http.ready import Relay
from ..http.wire import SSE_HEADERS, until_output, watch_hangup
from ..state import ServerState, state_of
from .fields import fit_config
from .protocol import Facade, Frames, Plan
from .server_tools import client_tool_names, for_client

__all__ = ["FacadeTurn", "abandon", "rate_limits", "read_body", "release", "run_facade", "stream_frames"]

T = TypeVar("T")


async def run_facade(facade: Facade, request: Request) -> Response:
    """Answer ``request`` in ``facade``'s dialect: plan, fit, run its turns, write the answer whole or streamed."""
    state = state_of(request)
    # the client's X-Session-Id names the session its exchange is kept under; else the session is the request's own
    kept = session_id_of(request)
    plan = await facade.plan(state, request, await request.body(), kept or os.urandom(16).hex())
    config = state.config_for(request, plan.client)
    resolution = fit_config(state.core, state.config, config, plan.client, plan.fields, plan.droppable, plan.stream,
                            state.settings.facade_server_tools)
    turns = await start_turns(state, request, facade, plan, config, resolution, kept is not None)
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


async def read_body(state: ServerState, raw: bytes, kind: type[T], counted: Callable[[T], Amounts],
                    where: str = "messages") -> tuple[T, dict[str, Any]]:
    """A facade's body parsed into ``kind`` and the fields it does not declare, held to the operator's limits.

    ``counted`` says what the parsed body becomes; a large body is first counted shallowly
    (:func:`~agent_core.server.access.amounts.early_check`), so one over a limit is refused
    before it is parsed whole. ``where`` names the body's list of messages in a refusal.
    """
    settings = state.settings
    return await aparse_fields(raw, kind, max_depth=settings.max_json_depth,
                               check=lambda parsed: counted(parsed).check(settings, where),
                               early=early_check(settings, where))


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
    declared = client_tool_names(turns[0].config)  # a client that declared no tools is shown no call
    async for item in events:  # several choices: (index, event) pairs (merged); one: its events
        i, event = item if many else (0, item)
        kind = event.type
        if kind == "partial":
            frame = out.partial(i, event.message)
        elif kind == "final":
            if event.message.role != "assistant":
                continue
            frame = out.final(i, for_client(event.message, declared))
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


# -- the steps of one turn ----------------------------------------------------------------------


class FacadeTurn:
    """A facade request on its way through the engine.

    ``client_rid`` is the id the client sent (or was given) and sees in every answer;
    ``rid`` is the engine's, scoped to the tenant so no tenant can cancel another's
    request. ``store`` is set only when the client asked for its exchange to be kept.
    """

    __slots__ = ("client_rid", "config", "dialect", "events", "group", "resolution", "rid", "session", "store",
                 "watcher")

    def __init__(self, client_rid: str, rid: str, session: Session, config: dict[str, Any], store: Any,
                 dialect: str, resolution: Resolution | None = None) -> None:
        self.dialect = dialect  # the API the client speaks: its errors are written in that shape
        self.client_rid = client_rid
        self.rid = rid
        self.session = session
        self.config = config
        self.store = store
        self.watcher: Callable[[], None] | None = None  # stops watching for the client hanging up
        self.events: Any = None
        self.group = [rid]  # the engine ids of every choice of the request, the first one's own first
        self.resolution = resolution  # the facade's own, made for this config: the engine need not resolve again


async def start_turns(state: ServerState, request: Request, facade: Facade, plan: Plan, config: dict[str, Any],
                      resolution: Resolution | None, kept: bool) -> list[FacadeTurn]:
    """The request's turns, one per choice; ``kept`` (``X-Session-Id``): stored, keeping the stored metadata.

    Several choices (``n``) are turns run side by side: the first keeps the request's id, so
    ``DELETE /v1/requests/{id}`` reaches it, and the others are ``{id}.{choice}``. ``resolution``
    (from :func:`~.fields.fit_config`) goes to the first turn's engine call unless the stored
    metadata lists the session's plugins, which it was not made for.
    """
    store = state.store_for(request) if kept else None
    session = plan.session
    if store is not None:  # the exchange is kept under that id: carry the stored metadata (a title...)
        session = await _with_stored_metadata(store, session)
    if "plugins" in session.metadata and config.get("session_plugins") != "ignore":
        resolution = None  # made without the session's list, which this config reads
    client_rid = request_id_of(request)
    tenant = state.tenant(request)
    turns = [FacadeTurn(client_rid, tenant.scope(client_rid if i == 0 else f"{client_rid}.{i}"), session, config, store,
                        facade.dialect, None if i else resolution) for i in range(plan.choices)]
    group = [turn.rid for turn in turns]
    for turn in turns:
        turn.group = group
    return turns


def watch(state: ServerState, request: Request, turn: FacadeTurn) -> None:
    """Cancel the turn upstream if the client hangs up; the turn counts as running until :func:`release`.

    One request has one connection to listen to: the first choice's watcher cancels them all.
    """
    if turn.rid == turn.group[0]:
        def gone() -> None:
            for rid in turn.group:
                state.core.cancel_request(rid)

        turn.watcher = watch_hangup(request, gone)
    state.running.add(turn.rid)


def release(state: ServerState, turn: FacadeTurn) -> None:
    if turn.watcher is not None:
        # Dropped as well as stopped: ``gone`` holds the turn, and what stops the watch holds
        # ``gone`` (the connection's watch) or the cancelled task whose traceback does (a task's
        # watch). With the turn still holding it, that cycle kept each request's whole graph
        # (session, plugins, upstream response) for the cyclic collector instead of freeing it.
        turn.watcher()
        turn.watcher = None
    state.running.discard(turn.rid)


def cut_short(state: ServerState, turns: Sequence[FacadeTurn]) -> None:
    """The request's task was cancelled (the server's grace ran out): count what still ran, release it.

    Counted and released in one step, with no await between, so the shutdown's stop line
    (which adds these to what is still running) counts each turn once, however soon the
    cancelled request unwinds.
    """
    for turn in turns:
        if turn.rid in state.running:
            state.cut += 1
        release(state, turn)


async def run_whole(state: ServerState, request: Request, turn: FacadeTurn) -> tuple[Any, dict[str, str]]:
    """Run a non-streamed turn; its result and the headers the answer carries (the stored revision)."""
    watch(state, request, turn)
    try:
        result = await state.core.arequest(turn.session, turn.config, request_id=turn.rid,
                                           resolution=turn.resolution)
    except asyncio.CancelledError:
        cut_short(state, [turn])
        raise
    finally:
        release(state, turn)
    headers = {}
    if turn.store is not None:
        headers["x-session-revision"] = str(await save_exchange(state, turn.store, result.session))
    return result, headers


async def open_stream(state: ServerState, request: Request, turn: FacadeTurn) -> tuple[list[Any], Response | None]:
    """Start a streamed turn and read up to its first output.

    A failure before that is returned as a response with its status (the body has not
    started, so a 429 or a 400 can still say so); then the turn is already released.
    """
    watch(state, request, turn)
    turn.config["announce_answer"] = True  # send the headers once the upstream answers, not at the first token
    try:
        turn.events = state.core.astream_request(turn.session, turn.config, request_id=turn.rid,
                                                 resolution=turn.resolution)
        first, failed = await until_output(turn.events, dialect=turn.dialect)
    except BaseException:
        release(state, turn)
        raise
    if failed is not None:
        release(state, turn)
    return first, failed


async def abandon(state: ServerState, turns: Sequence[FacadeTurn]) -> None:
    """Stop the turns that are still running (another choice failed, or the client left)."""
    for turn in turns:
        release(state, turn)
        state.core.cancel_request(turn.rid)
        if turn.events is not None:
            await turn.events.aclose()


async def early_end(state: ServerState, turn: FacadeTurn, event: Any) -> Failure | None:
    """Why the stream ends at ``event`` without an answer, or None.

    An error event, a cancelled request (``DELETE /v1/requests/{id}``) and a failed save
    end it; a done event is where an ``X-Session-Id`` exchange is saved, before the
    stream says it is over.
    """
    if event.type == "error":
        return failure_of_info(event.error)
    if event.type != "done":
        return None
    if event.outcome.reason == "cancelled":
        return Failure(status=499, kind="request_cancelled",
                       message=f"request {turn.client_rid} was cancelled: {event.outcome.detail}")
    if turn.store is not None:
        try:
            await save_exchange(state, turn.store, event.session)
        except (StoreError, InvalidArgumentError) as exc:
            return failure_of(exc)
    return None


def retracted(state: ServerState, turn: FacadeTurn, event: Any, shown: bool) -> Failure | None:
    """Why the stream ends at a ``retract`` event, or None when the client saw nothing to take back.

    ``shown``: text (or reasoning) of the answer was already sent. Then the turn is
    cancelled upstream (the retry is wasted on a client that cannot use it) and the
    failure that broke the attempt is returned, for the facade to send in its own shape.
    """
    if not shown:
        return None
    state.core.cancel_request(turn.rid)
    if event.error is not None:
        return failure_of_info(event.error)
    return Failure(status=502, kind="ProviderUnavailableError",
                   message="the upstream stream broke after part of the answer was sent")


async def _with_stored_metadata(store: Any, session: Session) -> Session:
    try:
        stored = await store.aget(session.session_id)
    except SessionNotFoundError:
        return session
    meta = {k: v for k, v in stored.session.metadata.items() if k != NATIVE_KEY}
    return Session(session.session_id, list(session.messages), meta)


async def save_exchange(state: ServerState, store: Any, session: Session) -> int:
    """Store a facade exchange (X-Session-Id): the client's conversation plus the reply.

    The client sent the whole conversation, so it is the truth: a save that loses a race is
    simply made again on the newer revision (no model call is repeated).
    """
    last: ConflictError | None = None
    for _ in range(state.retries + 1):
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
