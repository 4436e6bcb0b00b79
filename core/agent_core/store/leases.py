"""A store's session leases (``store.leases``): take one, wait in line for one, see who holds one, claim it.

How a lease is held on each database, and why, is in :mod:`agent_core.store.lease`. Waiting is
polling on purpose: a waiter can then stop at its limit, when its client leaves, or claim the
running turn between two tries, without a blocked connection or thread to undo. The waiters of
one session in one store object stand in a :class:`_Line`: only the first polls the database
(a hundred waiters cost one poll and, on PostgreSQL, one connection), and they win in the order
they came. Across processes the lines race, so order across processes is not kept.

The wait itself is one flow of effects (:meth:`SessionLeases._waiting`), driven by the same
drivers as a request: :meth:`~SessionLeases.wait_lease` runs it on this thread, and
:meth:`~SessionLeases.await_lease` on the event loop, where a database try runs on a worker
thread and a pause is an ``asyncio`` wait.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator
from contextlib import asynccontextmanager, contextmanager
from functools import partial
from typing import Any

from ..host_kit import complete_async, complete_sync
from ..plugin_kit import Call

from .lease import (
    Claim,
    LeaseAttempt,
    LeaseInfo,
    SessionBusyError,
    SessionLease,
    Watcher,
    read_holder,
    write_claim,
)

__all__ = ["SessionLeases"]


class _Line:
    """Each session's waiters in this store object, first come first served (``front`` jumps the line).

    A lease taken through this store object wakes the line when it is released (and so does a
    waiter leaving), so a turn waiting behind another turn of the same process starts at once
    instead of at its next poll; a holder in another process is still seen by polling.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lines: dict[str, deque[object]] = {}
        self._changed = threading.Condition(self._lock)
        self._generation: dict[str, int] = {}  # bumped by every wake-up, so none is missed between two looks
        self._sleepers: dict[str, list[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}

    def generation(self, session_id: str) -> int:
        with self._lock:
            return self._generation.get(session_id, 0)

    def wake(self, session_id: str) -> None:
        """The session may be free now: wake its waiters in this store object."""
        with self._lock:
            if session_id not in self._lines:
                return
            self._generation[session_id] = self._generation.get(session_id, 0) + 1
            self._changed.notify_all()
            sleepers = list(self._sleepers.get(session_id, ()))
        for loop, event in sleepers:
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:  # pragma: no cover - that loop closed; its waiter is gone
                pass

    def pause(self, session_id: str, seen: int, seconds: float) -> None:
        """Sleep up to ``seconds``, or until a wake-up after generation ``seen``."""
        with self._lock:
            self._changed.wait_for(lambda: self._generation.get(session_id, 0) != seen, seconds)

    async def apause(self, session_id: str, seen: int, seconds: float) -> None:
        """Async twin of :meth:`pause`."""
        event = asyncio.Event()
        entry = (asyncio.get_running_loop(), event)
        with self._lock:
            if self._generation.get(session_id, 0) != seen:
                return
            self._sleepers.setdefault(session_id, []).append(entry)
        try:
            await asyncio.wait_for(event.wait(), seconds)
        except TimeoutError:
            pass
        finally:
            with self._lock:
                sleepers = self._sleepers.get(session_id)
                if sleepers is not None:
                    sleepers.remove(entry)
                    if not sleepers:
                        del self._sleepers[session_id]

    def join(self, session_id: str, front: bool) -> object:
        ticket = object()
        with self._lock:
            line = self._lines.setdefault(session_id, deque())
            (line.appendleft if front else line.append)(ticket)
        return ticket

    def first(self, session_id: str, ticket: object) -> bool:
        with self._lock:
            line = self._lines.get(session_id)
            return bool(line) and line[0] is ticket

    def waiting(self, session_id: str) -> int:
        with self._lock:
            return len(self._lines.get(session_id, ()))

    def leave(self, session_id: str, ticket: object) -> None:
        with self._lock:
            line = self._lines.get(session_id)
            if line is not None and ticket in line:
                first = line[0] is ticket
                line.remove(ticket)
                if not line:
                    del self._lines[session_id]
                    self._generation.pop(session_id, None)
                elif first:  # the next one is first now
                    self._generation[session_id] = self._generation.get(session_id, 0) + 1
                    self._changed.notify_all()
                    for loop, event in self._sleepers.get(session_id, ()):
                        loop.call_soon_threadsafe(event.set)


class SessionLeases:
    """Every session's lease in one store (``store.leases``), sync with async twins.

    One object per store, so the waiters of one session in this process share one line and
    the lock connections one limit.
    """

    def __init__(self, backend: Any, *, lease_ttl_s: float = 10.0, max_lease_connections: int = 32) -> None:
        self._backend = backend
        #: SQLite: how long a lease outlives its holder's last renewal (a dead holder frees the session after this)
        self.lease_ttl_s = lease_ttl_s
        #: PostgreSQL: most lock connections this store opens at once (a held lease keeps one); past it a turn
        #: waits for one as for a busy session, rather than the database refusing connections
        self.max_lease_connections = max_lease_connections
        self._line = _Line()
        self._watcher: Watcher | None = None
        self._watcher_lock = threading.Lock()
        #: request ids of turns that ended here unsaved while their lease row could not be deleted (the
        #: database away): their record must not be saved as a lost turn's (agent_core.store.lost_turns)
        self._ended: deque[str] = deque(maxlen=4096)

    def lease_attempt(self, session_id: str, *, request_id: str | None = None,
                      on_claim: Callable[[], bool] | None = None) -> LeaseAttempt:
        """A way to the lease of ``session_id`` for one turn; ``request_id`` tells waiters what to cancel."""
        with self._watcher_lock:
            watcher = self._watcher
            if watcher is None or not watcher.alive():
                watcher = self._watcher = Watcher(self._backend, self.max_lease_connections)
        attempt = LeaseAttempt(self._backend, session_id, request_id, on_claim, self.lease_ttl_s, watcher)
        attempt.ended = self._ended
        return attempt

    def lease_waiters(self, session_id: str) -> int:
        """How many turns wait for the session's lease through this store."""
        return self._line.waiting(session_id)

    def try_lease(self, session_id: str, *, request_id: str | None = None,
                  on_claim: Callable[[], bool] | None = None) -> SessionLease | None:
        """The lease if the session is free now, else None (never waits; never passes a waiter in line)."""
        if self._line.waiting(session_id):
            return None
        attempt = self.lease_attempt(session_id, request_id=request_id, on_claim=on_claim)
        try:
            return self._woken_on_release(attempt.take(), session_id)
        finally:
            attempt.close()

    def _woken_on_release(self, lease: SessionLease | None, session_id: str) -> SessionLease | None:
        if lease is not None:
            lease.on_release = partial(self._released, lease)
        return lease

    def _released(self, lease: SessionLease) -> None:
        rid = lease.info.request_id
        if lease.unreleased and rid is not None:
            self._ended.append(rid)
        self._line.wake(lease.info.session_id)

    async def atry_lease(self, session_id: str, *, request_id: str | None = None,
                         on_claim: Callable[[], bool] | None = None) -> SessionLease | None:
        return await _taken_in_thread(lambda: self.try_lease(session_id, request_id=request_id, on_claim=on_claim))

    def wait_lease(self, session_id: str, *, wait_s: float, request_id: str | None = None,
                   on_claim: Callable[[], bool] | None = None, between: Callable[[], Any] | None = None,
                   front: bool = False, poll_s: float = 0.05) -> SessionLease | None:
        """Wait in line and try every ``poll_s`` until the lease is won (returned) or ``wait_s`` passed (None).

        ``between`` runs after each lost try, wherever this waiter stands in line (a chance to
        claim the holder); ``front`` puts this waiter first in line (a turn that interrupts).
        """
        attempt = self.lease_attempt(session_id, request_id=request_id, on_claim=on_claim)
        try:
            return complete_sync(self._waiting(attempt, session_id, wait_s, poll_s, front,  # type: ignore[no-any-return]
                                               Call(between) if between else None, None))
        finally:
            attempt.close()

    async def await_lease(self, session_id: str, *, wait_s: float, request_id: str | None = None,
                          on_claim: Callable[[], bool] | None = None,
                          between: Callable[[], Awaitable[Any]] | None = None, stop: asyncio.Event | None = None,
                          front: bool = False, poll_s: float = 0.05) -> SessionLease | None:
        """Async twin of :meth:`wait_lease`; also gives up (None) once ``stop`` is set."""
        attempt = self.lease_attempt(session_id, request_id=request_id, on_claim=on_claim)
        try:
            return await complete_async(self._waiting(attempt, session_id, wait_s, poll_s,  # type: ignore[no-any-return]
                                                      front, Call(None, between) if between else None, stop))
        finally:
            await asyncio.to_thread(attempt.close)

    def _waiting(self, attempt: LeaseAttempt, session_id: str, wait_s: float, poll_s: float, front: bool,
                 between: Call | None, stop: asyncio.Event | None) -> Generator[Any, Any, SessionLease | None]:
        """Stand in line and try until won or out of time: the steps both waits share, as effects.

        Joining and leaving the line touch no I/O, so they stay here, and leaving runs however
        the wait ends (won, out of time, an error, a cancelled task closing the flow).
        """
        line, deadline = self._line, time.monotonic() + wait_s
        ticket = line.join(session_id, front)
        take = Call(attempt.take, partial(_taken_in_thread, attempt.take), label="taking a session lease")
        try:
            while True:
                seen = line.generation(session_id)
                if line.first(session_id, ticket) and (lease := (yield take)) is not None:
                    return self._woken_on_release(lease, session_id)
                if time.monotonic() >= deadline or (stop is not None and stop.is_set()):
                    return None
                if between is not None:
                    yield between
                pause = min(poll_s, max(0.0, deadline - time.monotonic()))
                yield Call(partial(line.pause, session_id, seen, pause), partial(line.apause, session_id, seen, pause))
        finally:
            line.leave(session_id, ticket)

    @contextmanager
    def lease(self, session_id: str, *, wait_s: float = 60.0, request_id: str | None = None,
              on_claim: Callable[[], bool] | None = None) -> Iterator[SessionLease]:
        """Hold the session's lease for the ``with`` block, waiting up to ``wait_s`` for it.

        Raises:
            SessionBusyError: another turn held it all that time.
        """
        lease = self.wait_lease(session_id, wait_s=wait_s, request_id=request_id, on_claim=on_claim)
        if lease is None:
            raise SessionBusyError(f"session {session_id!r} was busy for {wait_s:g} s", session_id=session_id)
        try:
            yield lease
        finally:
            lease.release()

    @asynccontextmanager
    async def alease(self, session_id: str, *, wait_s: float = 60.0, request_id: str | None = None,
                     on_claim: Callable[[], bool] | None = None) -> AsyncIterator[SessionLease]:
        """Async twin of :meth:`lease`."""
        lease = await self.await_lease(session_id, wait_s=wait_s, request_id=request_id, on_claim=on_claim)
        if lease is None:
            raise SessionBusyError(f"session {session_id!r} was busy for {wait_s:g} s", session_id=session_id)
        try:
            yield lease
        finally:
            await lease.arelease()

    def lease_holder(self, session_id: str) -> LeaseInfo | None:
        """Who holds the session's lease now, or None."""
        return read_holder(self._backend, session_id)

    async def alease_holder(self, session_id: str) -> LeaseInfo | None:
        return await asyncio.to_thread(self.lease_holder, session_id)

    def claim_lease(self, session_id: str, holder: str, claim: Claim) -> bool:
        """Ask ``holder`` to stop (``interrupt``: save what it has; ``discard``: save nothing).

        Returns False when it is too late (the holder is saving, or gone) or already asked.
        """
        return write_claim(self._backend, session_id, holder, claim)

    async def aclaim_lease(self, session_id: str, holder: str, claim: Claim) -> bool:
        return await asyncio.to_thread(self.claim_lease, session_id, holder, claim)


async def _taken_in_thread(take: Callable[[], SessionLease | None]) -> SessionLease | None:
    """``take()`` on a worker thread; cancelled meanwhile, the take still ends there, and a lease it won is freed.

    A thread cannot be stopped: a take under way when its task is cancelled may still win the
    lease, which nobody would then hold or release (the session stays busy for good on
    PostgreSQL). So the cancel waits for that one database round trip, frees what it won, and
    then goes on.
    """
    taking = asyncio.ensure_future(asyncio.to_thread(take))
    try:
        return await asyncio.shield(taking)
    except asyncio.CancelledError:
        try:
            won = await taking
        except Exception:  # noqa: BLE001 - the take failed: nothing was won
            won = None
        if won is not None:
            await asyncio.to_thread(won.release)
        raise
