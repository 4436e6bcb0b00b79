"""The stateless handler in one call: load, add the message, request, save; retry on conflict.

Theory of operation: :func:`_turn_steps` is the whole policy as a generator.
It yields three kinds of steps, :class:`_Load`, :class:`_Request` and
:class:`_Save`, and is sent each step's result (or thrown its error). The
drivers only perform steps: :func:`run_turn` with ``core.request`` and the
sync store, :func:`arun_turn` with ``core.arequest`` and the async twins,
:func:`stream_turn` / :func:`astream_turn` with the streaming requests, passing
every event through. One policy, four ways to run it.

A conflict means another handler saved the session after this one loaded it.
The turn is then run again from the new revision: the model is asked again
(a second model call is what a conflict costs), and the losing reply is
dropped, never merged.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Generator, Iterator, Mapping
from typing import Any

import msgspec

# The engine's public names only (the package root), so the store does not depend on its layout.
from .. import AgentCore, DoneEvent, ErrorEvent, Event, Message, RequestResult, Session
from ..errors import ConflictError, InvalidArgumentError, SessionNotFoundError
from .protocol import SessionStore
from .values import Stored

__all__ = ["TurnResult", "TurnRetryEvent", "TurnSavedEvent", "arun_turn", "astream_turn", "run_turn", "stream_turn"]


class TurnResult(msgspec.Struct, frozen=True):
    """What :func:`run_turn` returns: the saved session, its revision, the request's result."""

    session: Session
    revision: int
    result: RequestResult
    attempts: int


class TurnRetryEvent(msgspec.Struct, frozen=True, tag="retry"):
    """Streamed turns: another handler saved first; the events since the last ``start`` are void.

    The turn runs again from ``current_revision``; attempt ``attempt`` begins
    with the next ``start`` event. A UI should drop the reply it was showing.
    """

    session_id: str
    attempt: int
    current_revision: int | None

    @property
    def type(self) -> str:
        return "retry"


class TurnSavedEvent(msgspec.Struct, frozen=True, tag="saved"):
    """Streamed turns: the last event when the turn was saved, at ``revision``."""

    session_id: str
    revision: int
    attempts: int

    @property
    def type(self) -> str:
        return "saved"


class _Load(msgspec.Struct, frozen=True):
    session_id: str


class _Request(msgspec.Struct, frozen=True):
    session: Session


class _Save(msgspec.Struct, frozen=True):
    session: Session
    expected_revision: int


class _Retry(msgspec.Struct, frozen=True):
    attempt: int
    current_revision: int | None


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


def _turn_steps(session_id: str, message: Message, retries: int) -> Generator[Any, Any, TurnResult]:
    attempt = 1
    while True:
        stored: Stored | None = yield _Load(session_id)
        base = stored.session if stored is not None else Session(session_id)
        expected = stored.revision if stored is not None else 0
        result: RequestResult = yield _Request(base.with_message(message))
        try:
            revision = yield _Save(result.session, expected)
        except ConflictError as exc:
            if attempt > retries:
                raise
            attempt += 1
            yield _Retry(attempt, exc.current)
            continue
        return TurnResult(result.session, revision, result, attempt)


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


def _save(store: SessionStore, step: _Save) -> int:
    if step.expected_revision == 0:
        return store.create(step.session)
    return store.put(step.session, expected_revision=step.expected_revision)


async def _asave(store: SessionStore, step: _Save) -> int:
    if step.expected_revision == 0:
        return await store.acreate(step.session)
    return await store.aput(step.session, expected_revision=step.expected_revision)


def _advance(steps: Generator[Any, Any, TurnResult], send: Any, error: BaseException | None) -> Any:
    return steps.throw(error) if error is not None else steps.send(send)


def run_turn(
    core: AgentCore,
    store: SessionStore,
    session_id: str,
    message: Message | Mapping[str, Any] | str,
    config: Mapping[str, Any] | None = None,
    *,
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
    steps = _turn_steps(session_id, _check(session_id, message, retries), retries)
    send: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = _advance(steps, send, error)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        send, error = None, None
        try:
            if isinstance(step, _Load):
                send = _load(store, step.session_id)
            elif isinstance(step, _Request):
                send = core.request(step.session, config)
            elif isinstance(step, _Save):
                send = _save(store, step)
        except ConflictError as exc:
            error = exc


async def arun_turn(
    core: AgentCore,
    store: SessionStore,
    session_id: str,
    message: Message | Mapping[str, Any] | str,
    config: Mapping[str, Any] | None = None,
    *,
    retries: int = 3,
) -> TurnResult:
    """Async twin of :func:`run_turn` (``core.arequest`` and the store's async methods)."""
    steps = _turn_steps(session_id, _check(session_id, message, retries), retries)
    send: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = _advance(steps, send, error)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        send, error = None, None
        try:
            if isinstance(step, _Load):
                send = await _aload(store, step.session_id)
            elif isinstance(step, _Request):
                send = await core.arequest(step.session, config)
            elif isinstance(step, _Save):
                send = await _asave(store, step)
        except ConflictError as exc:
            error = exc


def _result_of(done: DoneEvent) -> RequestResult:
    return RequestResult(done.session, done.final_messages, done.outcome, done.request_id, done.usage)


def stream_turn(
    core: AgentCore,
    store: SessionStore,
    session_id: str,
    message: Message | Mapping[str, Any] | str,
    config: Mapping[str, Any] | None = None,
    *,
    retries: int = 3,
    request_id: str | None = None,
) -> Iterator[Event | TurnRetryEvent | TurnSavedEvent]:
    """:func:`run_turn` as a stream: the request's events, then ``saved`` (a :class:`TurnSavedEvent`).

    A conflict yields a :class:`TurnRetryEvent` and the next attempt's events
    follow. ``request_id`` names the request (every attempt), so another
    thread can ``core.cancel_request`` it. A request that fails ends as a stream does (``error``, then
    ``done`` with a stopped outcome) and nothing is saved: no ``saved`` event.

    Raises:
        ConflictError: still losing after ``retries`` retries (after the last ``done``).
    """
    steps = _turn_steps(session_id, _check(session_id, message, retries), retries)
    send: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = _advance(steps, send, error)
        except StopIteration as stop:
            turn: TurnResult = stop.value
            yield TurnSavedEvent(session_id, turn.revision, turn.attempts)
            return
        send, error = None, None
        try:
            if isinstance(step, _Load):
                send = _load(store, step.session_id)
            elif isinstance(step, _Request):
                done, failed = None, False
                for event in core.stream_request(step.session, config, request_id=request_id):
                    failed = failed or isinstance(event, ErrorEvent)
                    if isinstance(event, DoneEvent):
                        done = event
                    yield event
                if failed or done is None:
                    steps.close()
                    return
                send = _result_of(done)
            elif isinstance(step, _Save):
                send = _save(store, step)
            elif isinstance(step, _Retry):
                yield TurnRetryEvent(session_id, step.attempt, step.current_revision)
        except ConflictError as exc:
            error = exc


async def astream_turn(
    core: AgentCore,
    store: SessionStore,
    session_id: str,
    message: Message | Mapping[str, Any] | str,
    config: Mapping[str, Any] | None = None,
    *,
    retries: int = 3,
    request_id: str | None = None,
) -> AsyncIterator[Event | TurnRetryEvent | TurnSavedEvent]:
    """Async twin of :func:`stream_turn`."""
    steps = _turn_steps(session_id, _check(session_id, message, retries), retries)
    send: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = _advance(steps, send, error)
        except StopIteration as stop:
            turn: TurnResult = stop.value
            yield TurnSavedEvent(session_id, turn.revision, turn.attempts)
            return
        send, error = None, None
        try:
            if isinstance(step, _Load):
                send = await _aload(store, step.session_id)
            elif isinstance(step, _Request):
                done, failed = None, False
                async for event in core.astream_request(step.session, config, request_id=request_id):
                    failed = failed or isinstance(event, ErrorEvent)
                    if isinstance(event, DoneEvent):
                        done = event
                    yield event
                if failed or done is None:
                    steps.close()
                    return
                send = _result_of(done)
            elif isinstance(step, _Save):
                send = await _asave(store, step)
            elif isinstance(step, _Retry):
                yield TurnRetryEvent(session_id, step.attempt, step.current_revision)
        except ConflictError as exc:
            error = exc
