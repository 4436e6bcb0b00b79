"""``/v1/sessions``: sessions in the store, one turn at a time, saved with optimistic revisions."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import msgspec
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ... import NATIVE_KEY, encode_event
from ...errors import ConflictError, StoreError, StoreUnavailableError
from ...host_kit import without_native_history
from ...store import iso_time
from ...types import Message, Session
from .approvals import ApprovalNote
from ..http.bodies import aparse_body
from .bodies import CreateSessionBody, TurnBody
from ..http.channel import Channel, chained, drain, pump
from ..http.errors import ApiError, error_body
from ..http.event_stream import EventStreamResponse
from ..http.failures import failure_of
from ..access.gate import ascii_int, check_metadata
from ..access.ids import checked_id, if_match, path_id, request_id_of
from ..http.wire import (
    SSE_HEADERS,
    ConflictNote,
    etag,
    message_of,
    plain,
    session_of,
    sse_frame,
    until_output,
    watch_hangup,
)
from ..state import ServerState, state_of
from .sliced import frame_parts

if TYPE_CHECKING:
    from ...store import Stored


_BUSY = ("enqueue", "reject", "interrupt", "rollback")


def _busy_of(request: Request) -> str:
    """``?busy=``: what a turn does when another turn runs on its session (default ``enqueue``)."""
    raw = request.query_params.get("busy", "enqueue")
    if raw not in _BUSY:
        raise ApiError(400, "invalid_request_error", f"busy must be one of {', '.join(_BUSY)}, got {raw[:40]!r}",
                       param="busy")
    return raw


def _asks_client(request: Request) -> bool:
    """``?approvals=``: ``ask`` sends the turn's tool approvals to its client (``default``: the policy decides)."""
    raw = request.query_params.get("approvals", "default")
    if raw not in ("ask", "default"):
        raise ApiError(400, "invalid_request_error", f"approvals must be ask or default, got {raw[:40]!r}",
                       param="approvals")
    return raw == "ask"


def _canceller(loop: asyncio.AbstractEventLoop, core: Any, rid: str) -> Callable[[], bool]:
    """The lease's ``on_claim``: cancel ``rid`` on the server's loop (the lease calls from its own thread)."""

    async def cancel() -> bool:
        return bool(core.cancel_request(rid))

    def on_claim() -> bool:
        return bool(asyncio.run_coroutine_threadsafe(cancel(), loop).result(timeout=5))

    return on_claim


class _NoLease:
    """A store without leases (one that only speaks the SessionStore protocol): turns race as before."""

    def claim_save(self) -> bool:
        return True

    async def aclaim_save(self) -> bool:
        return True

    def record_turn(self, message: Message, base: int) -> None:
        return None

    async def arecord_turn(self, message: Message, base: int) -> None:
        return None

    async def arelease(self) -> None:
        return None


class _Ask:
    """One turn request on its way to the session's lease."""

    def __init__(self, sid: str, scoped: str, message: Message, config: dict[str, Any], want: int | None,
                 store: Any, raw: Any, rid: str, busy: str) -> None:
        self.sid, self.scoped, self.message, self.config, self.want = sid, scoped, message, config, want
        self.store, self.raw, self.rid, self.busy = store, raw, rid, busy  # raw: the server's store (scoped ids)
        self.arrived = time.time()
        self.gone = asyncio.Event()
        self.on_claim: Callable[[], bool] | None = None


class QueuedNote:
    """The session is busy: the turn waits, and tells its client who it waits for."""

    def __init__(self, ask: _Ask, holder: Any, wait_s: float) -> None:
        ahead = 0 if ask.busy in ("interrupt", "rollback") else ask.raw.leases.lease_waiters(ask.scoped)
        self.frame = {"type": "queued", "session_id": ask.sid, "busy": ask.busy, "wait_limit_s": wait_s,
                      "holder_started_at": holder.started_at if holder is not None else None, "ahead": ahead}


class BusyNote:
    """The wait limit passed: the stream's own 409 (its status was sent with ``queued``)."""

    def __init__(self, sid: str, wait_s: float) -> None:
        message = f"session {sid!r} was running other turns for longer than the wait limit ({wait_s:g} s)"
        self.frame = {"type": "busy", **error_body("session_busy", message, status=409, retry_after=1)}


class DiscardedNote:
    """A later turn rolled this one back (``busy=rollback``): nothing of it was saved."""

    def __init__(self, sid: str) -> None:
        self.frame = {"type": "discarded", "session_id": sid, "attempts": 1}


async def create_session(request: Request) -> Response:
    state = state_of(request)
    body = await aparse_body(await request.body(), CreateSessionBody, max_depth=state.settings.max_json_depth,
                      empty_ok=True)
    sid = checked_id(body.id, "id") if body.id is not None else uuid.uuid4().hex
    messages = body.messages or []
    if len(messages) > state.settings.max_messages:
        raise ApiError(400, "invalid_request_error", f"messages: more than {state.settings.max_messages} "
                       "messages (max_messages)", param="messages")
    policy = state.tenant(request).policy
    check_metadata(body.metadata or {}, policy.allow, policy.how_to_allow)
    built = [message_of(m, f"messages[{i}]") for i, m in enumerate(messages)]
    session = session_of(sid, built, body.metadata or {})
    revision = await state.store_for(request).acreate(session)
    return JSONResponse({"id": sid, "revision": revision}, 201, headers=etag(revision))


async def list_sessions(request: Request) -> Response:
    state = state_of(request)
    limit = ascii_int(request.query_params.get("limit", "100"), "limit", 1, 1000)
    after = request.query_params.get("after")
    if after is not None:
        checked_id(after, "after")
    heads = await state.store_for(request).alist(limit=limit, after=after)
    return JSONResponse({"object": "list", "data": [
        {"id": h.session_id, "revision": h.revision, "message_count": h.message_count,
         "created_at": iso_time(h.created_at), "updated_at": iso_time(h.updated_at)} for h in heads]})


async def get_session(request: Request) -> Response:
    state = state_of(request)
    stored = await state.store_for(request).aget(path_id(request, "session_id"))
    s = stored.session
    metadata = {k: v for k, v in s.metadata.items() if k != NATIVE_KEY}
    body = {"id": s.session_id, "revision": stored.revision, "messages": [m.to_dict() for m in s.messages],
            "metadata": json.loads(json.dumps(metadata, default=plain))}
    return JSONResponse(body, headers=etag(stored.revision))


async def delete_session(request: Request) -> Response:
    state = state_of(request)
    sid = path_id(request, "session_id")
    await state.store_for(request).adelete(sid, expected_revision=if_match(request))
    return Response(status_code=204)


async def turn(request: Request) -> Response:
    """Run one turn on the session once it holds the session's lease (``docs/server.md``, *Busy sessions*)."""
    state = state_of(request)
    sid = path_id(request, "session_id")
    busy = _busy_of(request)
    asks = _asks_client(request)
    body = await aparse_body(await request.body(), TurnBody, max_depth=state.settings.max_json_depth)
    tenant = state.tenant(request)
    client_rid = request_id_of(request)
    ask = _Ask(sid, tenant.scope(sid), message_of(body.message, "message"), state.config_for(request, body.config),
               if_match(request), state.store_for(request), state.store, tenant.scope(client_rid), busy)
    if ask.want is not None:  # a stale If-Match is a 409 before anything waits or runs
        await _check_revision(ask)
    ask.on_claim = _canceller(asyncio.get_running_loop(), state.core, ask.rid)
    lease, holder = await _try_lease(state, ask)
    # The turn runs in its own task, so it ends and saves the same way whether or not the client
    # still listens: a client that hangs up cancels the request, and the cancelled turn is kept,
    # exactly as after DELETE /v1/requests/{id}. The task also waits for the lease and frees it.
    # A client that stops reading holds the turn at its next event (see .channel), not the server's memory.
    channel = Channel()
    hangup = watch_hangup(request, partial(_gone, state, ask, channel))

    def watcher() -> None:  # the response is over: stop watching, and never hold the turn again
        hangup()
        channel.close()

    if asks:  # its ask_user questions go in its stream, for its client to answer
        state.approvals.listen(ask.rid, client_rid, channel.put_nowait)
    task = asyncio.ensure_future(pump(_queued_turn(state, ask, lease, holder), channel, state.running))
    state.tasks.add(task)
    task.add_done_callback(state.tasks.discard)
    task.add_done_callback(lambda _: state.approvals.forget(ask.rid))
    events = drain(channel)
    try:
        first, failed = await _first_events(events)  # a bad config fails here: still a 4xx
    except BaseException:
        watcher()
        raise
    if failed is not None:
        watcher()
        return failed
    renamed = client_rid if tenant.name else None  # the client sees its own id, never the tenant's prefix
    return EventStreamResponse(_turn_stream(state, ask.rid, renamed, first, events, watcher),
                               media_type="text/event-stream", headers={"x-request-id": client_rid, **SSE_HEADERS})


async def _check_revision(ask: _Ask) -> Stored:
    stored = await ask.store.aget(ask.sid)
    if stored.revision != ask.want:
        raise ConflictError(ask.sid, expected=ask.want, current=stored.revision)
    return stored


async def _try_lease(state: ServerState, ask: _Ask) -> tuple[Any, Any]:
    """The lease now, or who holds it; ``busy=reject`` answers 409 here, before the stream starts."""
    if getattr(ask.raw, "leases", None) is None:
        return _NoLease(), None
    for _ in range(2):  # the holder may finish between the try and the look
        lease = await ask.raw.leases.atry_lease(ask.scoped, request_id=ask.rid, on_claim=ask.on_claim)
        if lease is not None:
            return lease, None
        holder = await ask.raw.leases.alease_holder(ask.scoped)
        if holder is not None:
            break
    if ask.busy == "reject":
        raise ApiError(409, "session_busy", f"session {ask.sid!r} is running another turn (busy=reject)",
                       headers={"retry-after": "1"})
    return None, holder


def _gone(state: ServerState, ask: _Ask, channel: Channel) -> None:
    """The client hung up: stop waiting for the lease, cancel the request if it runs."""
    channel.close()  # a turn held at an unread event goes on, and sees the cancel
    ask.gone.set()
    state.approvals.forget(ask.rid)
    state.core.cancel_request(ask.rid)


async def _first_events(events: AsyncIterator[Any]) -> tuple[list[Any], Response | None]:
    """A queued turn streams at once (its ``queued`` event); a running one reads up to its first output."""
    try:
        head = await events.__anext__()
    except StopAsyncIteration:
        return [], None
    if isinstance(head, (QueuedNote, ConflictNote)):  # a note is no engine event: until_output cannot read it
        return [head], None
    return await until_output(chained([head], events))


async def _queued_turn(state: ServerState, ask: _Ask, lease: Any, holder: Any) -> AsyncIterator[Any]:
    """Wait for the lease when the session is busy (claiming its holder for interrupt/rollback), run, free it."""
    try:
        if lease is None:
            yield QueuedNote(ask, holder, state.settings.turn_wait_s)
            lease = await ask.raw.leases.await_lease(ask.scoped, wait_s=state.settings.turn_wait_s, request_id=ask.rid,
                                              on_claim=ask.on_claim, between=partial(_claim, state, ask),
                                              stop=ask.gone, front=ask.busy in ("interrupt", "rollback"))
            if lease is None:
                if not ask.gone.is_set():
                    yield BusyNote(ask.sid, state.settings.turn_wait_s)
                return
        if ask.want is not None:
            try:
                stored = await _check_revision(ask)
            except ConflictError as exc:  # another turn saved while this one waited
                yield ConflictNote(exc)
                return
            await lease.arecord_turn(ask.message, ask.want)  # a process lost from here on: saved as stopped
            turn = _turn_at(state, ask.store, stored.session.with_message(ask.message), ask.want, ask.config,
                                 ask.rid, lease)
        else:
            from ...store import astream_turn

            turn = astream_turn(state.core, ask.store, ask.sid, ask.message, ask.config, retries=state.retries,
                                request_id=ask.rid, lease=lease, keep_partial=True)
        async for event in turn:
            yield event
    finally:
        if lease is not None:
            await lease.arelease()


async def _claim(state: ServerState, ask: _Ask) -> None:
    """``interrupt`` / ``rollback``: ask the turn that was running when this one came to stop.

    The claim goes through the lease row, so a holder in another process sees it (its
    watcher cancels its request); one in this process is cancelled here at once. A turn
    that started after this one arrived is left to run: this one waits for it.
    """
    if ask.busy not in ("interrupt", "rollback"):
        return
    holder = await ask.raw.leases.alease_holder(ask.scoped)
    claim = "interrupt" if ask.busy == "interrupt" else "discard"
    if holder is None or holder.started_at > ask.arrived or holder.claim in ("saving", "discard", claim):
        return
    if await ask.raw.leases.aclaim_lease(ask.scoped, holder.holder, claim) and holder.request_id:
        state.core.cancel_request(holder.request_id)


async def _turn_at(state: ServerState, store: Any, session: Session, expected: int, config: dict[str, Any],
                   rid: str, lease: Any) -> AsyncIterator[Any]:
    """One turn saved at exactly ``expected`` (the caller's If-Match): a conflict is not retried."""
    from ...store import TurnSavedEvent

    done, failed = None, False
    async for event in state.core.astream_request(session, config, request_id=rid):
        failed = failed or event.type == "error"
        done = event if event.type == "done" else done
        yield event
    if failed or done is None:
        return
    if not await lease.aclaim_save():
        yield DiscardedNote(session.session_id)
        return
    try:
        revision = await store.aput(done.session, expected_revision=expected)
    except ConflictError as exc:
        yield ConflictNote(exc)
        return
    yield TurnSavedEvent(session.session_id, revision, 1)


async def _turn_stream(state: ServerState, rid: str, renamed: str | None, first: list[Any], events: AsyncIterator[Any],
                       watcher: Callable[[], None]) -> AsyncIterator[bytes]:
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
            if isinstance(event, (QueuedNote, BusyNote, DiscardedNote, ApprovalNote)):
                yield sse_frame(event.frame)
                continue
            if renamed is not None and getattr(event, "request_id", None) == rid:
                event = msgspec.structs.replace(event, request_id=renamed)
            if event.type == "done":  # the native record is the store's: it would grow every done frame
                event = msgspec.structs.replace(event, session=without_native_history(event.session))
                async for part in frame_parts(event):  # a big session a slice at a time (see .sliced)
                    yield part
                continue
            yield sse_frame(encode_event(event))
        finished = True
    except ConflictError as exc:  # astream_turn lost every retry
        finished = True
        yield sse_frame({"type": "conflict", **error_body("ConflictError", str(exc), current_revision=exc.current)})
    except StoreError as exc:  # the store failed after the stream began (a lost database): its status, in a frame
        finished = True
        failure = failure_of(exc)
        extra = ({"reason": exc.reason, "retry_after": exc.retry_after}
                 if isinstance(exc, StoreUnavailableError) else {})
        yield sse_frame({"type": "error", **error_body(type(exc).__name__, str(exc), status=failure.status, **extra)})
    finally:
        watcher()
        if not finished:
            state.core.cancel_request(rid)
