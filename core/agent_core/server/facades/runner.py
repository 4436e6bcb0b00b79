"""One facade request's run, shared by the OpenAI and the Anthropic facades.

The two facades differ in their bodies and their frames, not in how a turn runs:
both scope the client's request id to its tenant, keep an ``X-Session-Id`` exchange
in the store, cancel upstream when the client hangs up, answer an error that comes
before the first output with a status, and end a stream early on an error, a
cancelled request or a failed save. That is written once here; each facade turns
the events into its own wire shape.

A provider that retries after its stream broke midway (when the operator allows
retries: the facades' default is ``max_retries: 0``) sends a ``retract`` event.
Neither wire can take text back, so the facades pass a retry on only while it
changes nothing the client has: before any text of the answer was sent the new
attempt simply streams in its place; after, the stream ends with the failure
that broke it, in the API's own error shape, as it would have without the retry
(:meth:`TurnRoutes._retracted`), and the request is cancelled upstream.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from ... import NATIVE_KEY, Resolution
from ...errors import (
    ConflictError,
    InvalidArgumentError,
    SessionNotFoundError,
    StoreError,
)
from ...types import Session
from ..sessions.channel import UNREAD
from ..http.failures import Failure, dialect_of, failure_of, failure_of_info
from .fields import declared_by, fit_to_provider, keys_by_plugin
from ..http.wire import request_id_of, session_id_of, until_output, watch_hangup
from ..http.event_stream import Pushed
from ..http.ready import Relay

__all__ = ["FACADE_DEFAULTS", "FacadeTurn", "TurnRoutes", "chained", "merged", "rate_limits"]

#: config the facades run with unless the operator's config sets the key (see ``_fit_config``):
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


class TurnRoutes:
    """Mixed into the server: the turn-running steps both facades use."""

    async def _facade_turn(self, request: Request, session: Session, config: dict[str, Any], *,
                           choice: int = 0, resolution: Resolution | None = None) -> FacadeTurn:
        """The turn for ``session``; with ``X-Session-Id`` it is stored, and keeps the stored metadata.

        ``choice`` numbers the turns of one request that asks for several answers (``n``): the
        first keeps the request's id, so ``DELETE /v1/requests/{id}`` reaches it; the others
        are ``{id}.{choice}``. ``resolution`` (from :meth:`_fit_config`) goes to the engine
        unless the stored metadata lists the session's plugins, which it was not made for.
        """
        store = self.store_for(request) if session_id_of(request) is not None else None
        if store is not None:  # the exchange is kept under that id: carry the stored metadata (a title...)
            session = await self._with_stored_metadata(store, session)
        client_rid = request_id_of(request)
        rid = self.tenant(request).scope(client_rid if choice == 0 else f"{client_rid}.{choice}")
        if "plugins" in session.metadata and config.get("session_plugins") != "ignore":
            resolution = None  # made without the session's list, which this config reads
        # the scope's path, not request.url.path: the same answer, without building a URL (4 µs a request)
        return FacadeTurn(client_rid, rid, session, config, store, dialect_of(request.scope["path"]), resolution)

    def _fit_config(self, config: dict[str, Any], client: Mapping[str, Any], fields: Mapping[str, str],
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
        likely = self._likely_declared(config.get("provider"))
        added = {k: v for k, v in FACADE_DEFAULTS.items() if k in likely and k not in self.config}
        replaced = {k: config[k] for k in added if k in config}
        config.update(added)
        config.update(max_iterations=1, run_pending_tool_calls=False, stream=stream)
        if stream:  # send the headers once the upstream answers, not at the first token (as _open_stream does)
            config["announce_answer"] = True
        resolution = self.core.resolve(config)
        declared = declared_by(self.core, resolution)
        changed = fit_to_provider(config, client, declared, fields, droppable)
        for key in added.keys() - declared:
            changed = True
            if key in replaced:
                config[key] = replaced[key]
            else:
                del config[key]
        return None if changed else resolution

    def _likely_declared(self, provider: Any) -> frozenset[str]:
        """The keys the chosen provider (every provider when none is named) or any non-provider plugin declares."""
        by_plugin = keys_by_plugin(self.core)
        memo = self.__dict__.setdefault("_likely_memo", {})  # per registered provider: a few entries at most
        known = memo.get(provider) if provider is None or isinstance(provider, str) else None
        if known is not None and known[0] is by_plugin:  # made from the same registrations
            return known[1]  # type: ignore[no-any-return]
        providers = set(self.core.plugins("provider"))
        keys = frozenset().union(*(keys for name, keys in by_plugin.items()
                                   if name not in providers or provider is None or name == provider))
        if provider is None or (isinstance(provider, str) and provider in providers):  # no made-up names: kept small
            memo[provider] = (by_plugin, keys)
        return keys

    def _watch(self, request: Request, turn: FacadeTurn) -> None:
        """Cancel the turn upstream if the client hangs up; the turn counts as running until ``_release``.

        One request has one connection to listen to: the first choice's watcher cancels them all.
        """
        if turn.rid == turn.group[0]:
            def gone() -> None:
                for rid in turn.group:
                    self.core.cancel_request(rid)

            turn.watcher = watch_hangup(request, gone)
        self._running.add(turn.rid)

    def _release(self, turn: FacadeTurn) -> None:
        if turn.watcher is not None:
            # Dropped as well as stopped: ``gone`` holds the turn, and what stops the watch holds
            # ``gone`` (the connection's watch) or the cancelled task whose traceback does (a task's
            # watch). With the turn still holding it, that cycle kept each request's whole graph
            # (session, plugins, upstream response) for the cyclic collector instead of freeing it.
            turn.watcher()
            turn.watcher = None
        self._running.discard(turn.rid)

    def _cut_short(self, turns: Sequence[FacadeTurn]) -> None:
        """The request's task was cancelled (the server's grace ran out): count what still ran, release it.

        Counted and released in one step, with no await between, so the shutdown's stop line
        (which adds these to what is still running) counts each turn once, however soon the
        cancelled request unwinds.
        """
        for turn in turns:
            if turn.rid in self._running:
                self._cut += 1
            self._release(turn)

    async def _run_whole(self, request: Request, turn: FacadeTurn) -> tuple[Any, dict[str, str]]:
        """Run a non-streamed turn; its result and the headers the answer carries (the stored revision)."""
        self._watch(request, turn)
        try:
            result = await self.core.arequest(turn.session, turn.config, request_id=turn.rid,
                                              resolution=turn.resolution)
        except asyncio.CancelledError:
            self._cut_short([turn])
            raise
        finally:
            self._release(turn)
        headers = {}
        if turn.store is not None:
            headers["x-session-revision"] = str(await self._save_exchange(turn.store, result.session))
        return result, headers

    async def _open_stream(self, request: Request, turn: FacadeTurn) -> tuple[list[Any], Response | None]:
        """Start a streamed turn and read up to its first output.

        A failure before that is returned as a response with its status (the body has not
        started, so a 429 or a 400 can still say so); then the turn is already released.
        """
        self._watch(request, turn)
        turn.config["announce_answer"] = True  # send the headers once the upstream answers, not at the first token
        try:
            turn.events = self.core.astream_request(turn.session, turn.config, request_id=turn.rid,
                                                    resolution=turn.resolution)
            first, failed = await until_output(turn.events, dialect=turn.dialect)
        except BaseException:
            self._release(turn)
            raise
        if failed is not None:
            self._release(turn)
        return first, failed

    def _stream_out(self, turns: Sequence[FacadeTurn], frames: AsyncIterator[bytes],
                    is_last: Callable[[bytes], bool]) -> Pushed:
        """The body that sends ``frames`` and owns the request's end: a client gone before the last frame cancels upstream.

        The frames that were ready together go out in one message, sent by the response's
        own loop (:class:`~agent_core.server.http.ready.Relay`).
        """

        async def end(finished: bool) -> None:
            if not finished:
                await self._abandon(turns)
                return
            for turn in turns:
                self._release(turn)
                await turn.events.aclose()

        return Pushed(Relay(frames, is_last, lambda: self._cut_short(turns), end).send_all)

    async def _abandon(self, turns: Sequence[FacadeTurn]) -> None:
        """Stop the turns that are still running (another choice failed, or the client left)."""
        for turn in turns:
            self._release(turn)
            self.core.cancel_request(turn.rid)
            if turn.events is not None:
                await turn.events.aclose()

    async def _early_end(self, turn: FacadeTurn, event: Any) -> Failure | None:
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
                await self._save_exchange(turn.store, event.session)
            except (StoreError, InvalidArgumentError) as exc:
                return failure_of(exc)
        return None

    def _retracted(self, turn: FacadeTurn, event: Any, shown: bool) -> Failure | None:
        """Why the stream ends at a ``retract`` event, or None when the client saw nothing to take back.

        ``shown``: text (or reasoning) of the answer was already sent. Then the
        turn is cancelled upstream (the retry is wasted on a client that cannot
        use it) and the failure that broke the attempt is returned, for the
        facade to send in its own shape.
        """
        if not shown:
            return None
        self.core.cancel_request(turn.rid)
        if event.error is not None:
            return failure_of_info(event.error)
        return Failure(status=502, kind="ProviderUnavailableError",
                       message="the upstream stream broke after part of the answer was sent")

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


def chained(first: list[Any], events: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """The events ``until_output`` already read, then the rest."""
    return _Chained(first, events)


class _Chained:
    """:func:`chained`'s iterator. Not an async generator: once ``first`` is used up,
    ``__anext__`` is the stream's own, so a relayed chunk passes through no frame of ours.
    Closing it does not close ``events``, which stay the turn's to close.
    """

    __slots__ = ("_events", "_first")

    def __init__(self, first: list[Any], events: AsyncIterator[Any]) -> None:
        self._first = list(first)
        self._events = events

    def __aiter__(self) -> _Chained:
        return self

    def __anext__(self) -> Awaitable[Any]:
        if self._first:
            return _ready(self._first.pop(0))
        return self._events.__anext__()

    async def aclose(self) -> None:
        self._first = []


async def _ready(value: Any) -> Any:
    return value


_END = object()


def merged(streams: Sequence[AsyncIterator[Any]]) -> AsyncIterator[tuple[int, Any]]:
    """The items of several streams as they come, each with the index of its stream.

    A single stream needs none of this: its reader takes the stream as it is (see
    ``facade._chat_frames``), with no step of ours per item.
    """
    return _merged(streams)


async def _merged(streams: Sequence[AsyncIterator[Any]]) -> AsyncIterator[tuple[int, Any]]:
    # bounded: a client that stops reading holds the choices' streams, and so the upstream, where they are
    queue: asyncio.Queue[tuple[int, Any]] = asyncio.Queue(maxsize=UNREAD * len(streams))

    async def pump(index: int, stream: AsyncIterator[Any]) -> None:
        try:
            async for item in stream:
                await queue.put((index, item))
        except Exception as exc:  # noqa: BLE001 - handed to the reader, who raises it
            await queue.put((index, exc))
        finally:
            await queue.put((index, _END))

    tasks = [asyncio.ensure_future(pump(i, s)) for i, s in enumerate(streams)]
    try:
        left = len(tasks)
        while left:
            index, item = await queue.get()
            if item is _END:
                left -= 1
            elif isinstance(item, Exception):
                raise item
            else:
                yield index, item
    finally:
        for task in tasks:
            task.cancel()


def rate_limits(reply: Any) -> dict[str, str]:
    """The upstream's rate-limit headers the provider kept with a reply, for the client's own pacing.

    Only a non-streamed answer has them in time: a streamed one sends its headers before the
    reply is complete.
    """
    limits = reply.metadata.get("rate_limits") if reply is not None else None
    return {str(k): str(v) for k, v in limits.items()} if limits else {}
