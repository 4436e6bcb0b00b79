"""The steps of one facade turn, whichever dialect asked for it.

Every facade scopes the client's request id to its tenant, keeps an ``X-Session-Id``
exchange in the store, cancels upstream when the client hangs up, answers an error that
comes before the first output with a status, and ends a stream early on an error, a
cancelled request or a failed save. Those steps are written once here, as functions of the
:class:`~agent_core.server.state.ServerState`; :mod:`.runner` puts them in order.

A provider that retries after its stream broke midway (when the operator allows
retries: the facades' default is ``max_retries: 0``) sends a ``retract`` event.
No facade's wire can take text back, so a retry is passed on only while it changes
nothing the client has: before any text of the answer was sent the new attempt simply
streams in its place; after, the stream ends with the failure that broke it, in the API's
own error shape, as it would have without the retry (:func:`retracted`), and the request
is cancelled upstream.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from ... import NATIVE_KEY, Resolution
from ...errors import ConflictError, InvalidArgumentError, SessionNotFoundError, StoreError
from ...types import Session
from ..http.failures import Failure, dialect_of, failure_of, failure_of_info
from ..access.ids import request_id_of, session_id_of
from ..http.wire import until_output, watch_hangup
from ..state import ServerState
from .fields import declared_by, fit_to_provider, likely_declared

__all__ = ["FACADE_DEFAULTS", "FacadeTurn", "abandon", "cut_short", "early_end", "fit_config", "open_stream",
           "release", "retracted", "run_whole", "start_turn"]

#: config the facades run with unless the operator's config sets the key (see :func:`fit_config`):
#: one upstream attempt per client attempt (a stale pooled connection is still resent at once)
FACADE_DEFAULTS: dict[str, Any] = {"rate_limit_retries": 0, "max_retries": 0}


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


async def start_turn(state: ServerState, request: Request, session: Session, config: dict[str, Any], *,
                     choice: int = 0, resolution: Resolution | None = None) -> FacadeTurn:
    """The turn for ``session``; with ``X-Session-Id`` it is stored, and keeps the stored metadata.

    ``choice`` numbers the turns of one request that asks for several answers (``n``): the
    first keeps the request's id, so ``DELETE /v1/requests/{id}`` reaches it; the others
    are ``{id}.{choice}``. ``resolution`` (from :func:`fit_config`) goes to the engine
    unless the stored metadata lists the session's plugins, which it was not made for.
    """
    store = state.store_for(request) if session_id_of(request) is not None else None
    if store is not None:  # the exchange is kept under that id: carry the stored metadata (a title...)
        session = await _with_stored_metadata(store, session)
    client_rid = request_id_of(request)
    rid = state.tenant(request).scope(client_rid if choice == 0 else f"{client_rid}.{choice}")
    if "plugins" in session.metadata and config.get("session_plugins") != "ignore":
        resolution = None  # made without the session's list, which this config reads
    # the scope's path, not request.url.path: the same answer, without building a URL (4 µs a request)
    return FacadeTurn(client_rid, rid, session, config, store, dialect_of(request.scope["path"]), resolution)


def fit_config(state: ServerState, config: dict[str, Any], client: Mapping[str, Any], fields: Mapping[str, str],
               droppable: Callable[[str, Any], bool], stream: bool) -> Resolution | None:
    """Fit the client's fields to the plugins that run, add the facade's keys; the resolution, when it still holds.

    Which fields can be honoured depends on the plugins that run (:func:`.fields.fit_to_provider`),
    so the config is resolved here; the engine can then take that resolution instead of
    making its own (about a third of a non-streamed request's CPU), but only if it was made
    for the config the request runs with. So the facade's keys go in first: the retry policy
    for each key the chosen provider or a plugin of another kind declares, taken out again
    (and the resolution with it) when no running plugin does. A field renamed or dropped
    also leaves the resolution unused: the engine resolves the config as it ends up.

    The retry policy applies where the operator set none (``docs/server.md``): the clients
    of an API gateway retry on their own (the SDKs do, with the upstream's ``retry-after``),
    so a 429 or a 5xx passed on at once keeps one client retry one upstream request;
    retrying here too would multiply them (3 x 3 = 9 requests).
    """
    likely = likely_declared(state.core, config.get("provider"))
    added = {k: v for k, v in FACADE_DEFAULTS.items() if k in likely and k not in state.config}
    replaced = {k: config[k] for k in added if k in config}
    config.update(added)
    config.update(max_iterations=1, run_pending_tool_calls=False, stream=stream)
    if stream:  # send the headers once the upstream answers, not at the first token (as open_stream does)
        config["announce_answer"] = True
    resolution = state.core.resolve(config)
    declared = declared_by(state.core, resolution)
    changed = fit_to_provider(config, client, declared, fields, droppable)
    for key in added.keys() - declared:
        changed = True
        if key in replaced:
            config[key] = replaced[key]
        else:
            del config[key]
    return None if changed else resolution


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
