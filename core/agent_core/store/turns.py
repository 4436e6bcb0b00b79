"""The stateless handler in one call: load, add the message, request, save; retry on conflict.

Theory of operation: :class:`_Turn` writes a turn once, as a generator of
effects, the way the engine writes a request (``agent_core.plugin_kit``): it
yields a :class:`~agent_core.plugin_kit.Call` to load the session, runs the
request inside itself (``yield from core.request_flow(...)``, which passes the
request's events and effects through), yields a ``Call`` to save, and on a
conflict a :class:`TurnRetryEvent` before it starts again. The same
``drive_sync`` / ``drive_async`` the engine uses perform the calls (the
store's sync methods, or their async twins) and hand the events on:
:func:`stream_turn` / :func:`astream_turn` pass them to the caller,
:func:`run_turn` / :func:`arun_turn` drop them and return the turn's result.
One policy, one driver per mode, and ``tests/store/test_turn_parity.py``
checks the modes agree.

A conflict means another handler saved the session after this one loaded it.
The turn is then run again from the new revision: the model is asked again
(a second model call is what a conflict costs), and the losing reply is
dropped, never merged.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Generator, Iterator, Mapping
from contextlib import aclosing
from functools import partial
from typing import Any

import msgspec

# The engine's public names only (the package root and the plugin kit), so the store does not depend on its layout.
from .. import AgentCore, Event, Message, Outcome, RequestResult, Session, Usage
from ..errors import (
    AgentCoreError,
    ConflictError,
    InvalidArgumentError,
    ProviderRequestCancelled,
    SessionNotFoundError,
)
from ..plugin_kit import Call, drive_async, drive_sync
from .protocol import SessionStore
from .values import Stored

__all__ = ["TurnDiscardedEvent", "TurnResult", "TurnRetryEvent", "TurnSavedEvent", "arun_turn", "astream_turn", "run_turn", "stream_turn"]

MessageLike = Message | Mapping[str, Any] | str  # a Message, a message dict, or a user message's text
ConfigLike = Mapping[str, Any] | None


class TurnResult(msgspec.Struct, frozen=True):
    """What :func:`run_turn` returns: the saved session, its revision, the request's result."""

    session: Session
    revision: int
    result: RequestResult
    attempts: int


class _StoreEvent(msgspec.Struct, frozen=True):
    """A store's own event in a streamed turn; ``type`` is its tag, as the engine's events name theirs."""

    @property
    def type(self) -> str:
        return str(self.__struct_config__.tag)


class TurnRetryEvent(_StoreEvent, frozen=True, tag="retry"):
    """Streamed turns: another handler saved first; the events since the last ``start`` are void.

    The turn runs again from ``current_revision``; attempt ``attempt`` begins
    with the next ``start`` event. A UI should drop the reply it was showing.
    """

    session_id: str
    attempt: int
    current_revision: int | None


class TurnSavedEvent(_StoreEvent, frozen=True, tag="saved"):
    """Streamed turns: the last event when the turn was saved, at ``revision``."""

    session_id: str
    revision: int
    attempts: int


class TurnDiscardedEvent(_StoreEvent, frozen=True, tag="discarded"):
    """Streamed turns under a lease: a later turn rolled this one back, so nothing of it was saved."""

    session_id: str
    attempts: int


def _check(session_id: Any, message: Any, retries: Any) -> Message:
    if not isinstance(session_id, str) or not session_id:
        raise InvalidArgumentError(f"session_id must be a non-empty string, got {session_id!r}", argument="session_id")
    if isinstance(message, str):
        message = Message("user", message)
    elif isinstance(message, Mapping):
        message = Message.from_dict(message)
    elif not isinstance(message, Message):
        raise InvalidArgumentError(
            f"message must be a Message, a message dict or a string, got {type(message).__name__}", argument="message"
        )
    if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
        raise InvalidArgumentError(f"retries must be an integer >= 0, got {retries!r}", argument="retries")
    return message


def _load(store: SessionStore, session_id: str) -> Stored | None:
    try:
        return store.get(session_id)
    except SessionNotFoundError:
        return None


async def _aload(store: SessionStore, session_id: str) -> Stored | None:
    try:
        return await store.aget(session_id)
    except SessionNotFoundError:
        return None


def _save(store: SessionStore, session: Session, expected: int) -> int:
    return store.create(session) if expected == 0 else store.put(session, expected_revision=expected)


async def _asave(store: SessionStore, session: Session, expected: int) -> int:
    if expected == 0:
        return await store.acreate(session)
    return await store.aput(session, expected_revision=expected)


class _Turn:
    """One turn: its policy as a generator of effects (:meth:`steps`), its result once saved.

    ``streamed`` turns run the request as :meth:`AgentCore.stream_request`
    would and end as a stream does: a failed request is reported by its
    events and saves nothing, a cancelled one is saved as it was asked (the
    user's message kept) and, with ``keep_partial``, the text the model had
    streamed since its last finished message, as an assistant message marked
    ``stopped: cancelled`` in its metadata, so what a reader saw is not lost.
    Other turns run it as :meth:`AgentCore.request` would and raise what it raises.
    """

    def __init__(
        self, core: AgentCore, store: SessionStore, session_id: str, message: MessageLike, config: ConfigLike,
        retries: int, *, request_id: str | None = None, streamed: bool, lease: Any = None, keep_partial: bool = False,
    ) -> None:
        message = _check(session_id, message, retries)
        self.core, self.store, self.session_id, self.message = core, store, session_id, message
        self.config, self.retries, self.request_id, self.streamed = config, retries, request_id, streamed
        self.lease = lease  # a SessionLease: a turn a waiter rolled back must not be saved
        self.result: TurnResult | None = None
        self.keep_partial = keep_partial
        self.heard: list[str] = []  # streamed turns: the text streamed since the last finished message

    def note(self, event: Any) -> None:
        """Keep what a streamed event says of the reply so far (the caller hands each event over).

        The request's events reach the driver's caller without passing through
        :meth:`steps` (the engine pumps its chunks straight out), so the driver's loop
        shows them here. A ``final`` or ``retract`` voids what was heard: a finished
        message is the engine's to keep, and a retracted attempt's words were never the answer.
        """
        if not self.keep_partial:
            return
        kind = getattr(event, "type", None)
        if kind == "partial" and isinstance(event.message.content, str):
            self.heard.append(event.message.content)
        elif kind in ("final", "retract"):
            self.heard.clear()

    def steps(self) -> Generator[Any, Any, None]:
        """Load, ask, save; on a conflict, a retry event and the same again from the new revision.

        Ends without a result when a streamed request failed. Raises ConflictError
        after ``retries`` lost saves, and what the store raises.
        """
        store, sid = self.store, self.session_id
        attempt = 1
        while True:
            stored: Stored | None = yield Call(partial(_load, store, sid), partial(_aload, store, sid), "load")
            expected = stored.revision if stored is not None else 0
            asked = (stored.session if stored is not None else Session(sid)).with_message(self.message)
            if self.lease is not None:  # should this process die before the save, the next holder saves it as stopped
                lease, message = self.lease, self.message
                yield Call(partial(lease.record_turn, message, expected), partial(lease.arecord_turn, message, expected),
                           "record")
            result = yield from self._ask(asked)
            if result is None:
                return
            if self.lease is not None and not (yield Call(self.lease.claim_save, self.lease.aclaim_save, "claim")):
                yield TurnDiscardedEvent(sid, attempt)
                return
            save = (partial(_save, store, result.session, expected), partial(_asave, store, result.session, expected))
            try:
                revision = yield Call(*save, "save")
            except ConflictError as exc:
                if attempt > self.retries:
                    raise
                attempt += 1
                yield TurnRetryEvent(sid, attempt, exc.current)
                continue
            self.result = TurnResult(result.session, revision, result, attempt)
            yield TurnSavedEvent(sid, revision, attempt)
            return

    def _ask(self, asked: Session) -> Generator[Any, Any, RequestResult | None]:
        """The request as effects; its result, or None when a streamed request failed (its events said so)."""
        flow = self.core.request_flow(asked, self.config, request_id=self.request_id, stream=self.streamed)
        self.heard.clear()
        try:
            result = yield from flow
        except ProviderRequestCancelled as exc:
            if not self.streamed:
                raise
            # A stream keeps a cancelled request: its done event carries the session as it was asked.
            cancelled = Outcome("stopped", "cancelled", str(exc))
            result = RequestResult(asked, [], cancelled, exc.request_id or "", Usage())
        except AgentCoreError:
            if not self.streamed:
                raise
            return None
        text = "".join(self.heard)
        if result.outcome.reason != "cancelled" or not text:
            return result
        # ... and the words its reader had already seen, marked as cut short.
        stopped = Message(role="assistant", content=text, metadata={"stopped": "cancelled"})
        return msgspec.structs.replace(result, session=result.session.with_message(stopped),
                                       final_messages=[*result.final_messages, stopped])


def run_turn(
    core: AgentCore, store: SessionStore, session_id: str, message: MessageLike, config: ConfigLike = None, *,
    retries: int = 3,
) -> TurnResult:
    """Load ``session_id`` (a new session when absent), add ``message``, run the request, save.

    On :class:`ConflictError` (another handler saved first) the turn runs
    again from the new revision, up to ``retries`` more times.

    Returns:
        TurnResult with the saved session and revision, the RequestResult and
        how many attempts it took.

    Raises:
        ConflictError: still losing after ``retries`` retries.
        Whatever ``core.request`` raises (LLMError, PluginError...): nothing is saved.
        InvalidArgumentError: a bad ``session_id``, ``message`` or ``retries``.
    """
    turn = _Turn(core, store, session_id, message, config, retries, streamed=False)
    for _event in drive_sync(turn.steps()):
        pass
    assert turn.result is not None  # a turn that is not streamed ends saved or raises
    return turn.result


async def arun_turn(
    core: AgentCore, store: SessionStore, session_id: str, message: MessageLike, config: ConfigLike = None, *,
    retries: int = 3,
) -> TurnResult:
    """Async twin of :func:`run_turn` (the request's async path and the store's async methods)."""
    turn = _Turn(core, store, session_id, message, config, retries, streamed=False)
    async with aclosing(drive_async(turn.steps())) as events:
        async for _event in events:
            pass
    assert turn.result is not None
    return turn.result


def stream_turn(
    core: AgentCore, store: SessionStore, session_id: str, message: MessageLike, config: ConfigLike = None, *,
    retries: int = 3, request_id: str | None = None, lease: Any = None, keep_partial: bool = False,
) -> Iterator[Event | TurnRetryEvent | TurnSavedEvent | TurnDiscardedEvent]:
    """:func:`run_turn` as a stream: the request's events, then ``saved`` (a :class:`TurnSavedEvent`).

    A conflict yields a :class:`TurnRetryEvent` and the next attempt's events
    follow. ``request_id`` names the request (every attempt), so another
    thread can ``core.cancel_request`` it; a cancelled request is saved as it
    was asked, and with ``keep_partial`` the text streamed so far as a reply
    whose metadata says ``stopped: cancelled`` (what a chat page showed stays). A request that fails ends as a
    stream does (``error``, then ``done`` with a stopped outcome) and nothing
    is saved: no ``saved`` event.

    With ``lease`` (a :class:`~agent_core.store.lease.SessionLease` the caller holds on the
    session), the turn records itself in it as it starts (so a turn whose process dies is saved
    as stopped by the lease's next holder) and asks it before saving: a turn a waiter rolled back
    ends with a ``discarded`` event (:class:`TurnDiscardedEvent`) instead of ``saved``, and nothing is saved.

    Raises:
        ConflictError: still losing after ``retries`` retries (after the last ``done``).
    """
    turn = _Turn(core, store, session_id, message, config, retries, request_id=request_id, streamed=True,
                 lease=lease, keep_partial=keep_partial)
    for event in drive_sync(turn.steps()):
        turn.note(event)
        yield event


async def astream_turn(
    core: AgentCore, store: SessionStore, session_id: str, message: MessageLike, config: ConfigLike = None, *,
    retries: int = 3, request_id: str | None = None, lease: Any = None, keep_partial: bool = False,
) -> AsyncIterator[Event | TurnRetryEvent | TurnSavedEvent | TurnDiscardedEvent]:
    """Async twin of :func:`stream_turn`."""
    turn = _Turn(core, store, session_id, message, config, retries, request_id=request_id, streamed=True,
                 lease=lease, keep_partial=keep_partial)
    async with aclosing(drive_async(turn.steps())) as events:
        async for event in events:
            turn.note(event)
            yield event
