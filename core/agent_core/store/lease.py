"""One turn at a time per session, across processes and machines: the session lease.

Theory of operation. Optimistic revisions already keep two turns from overwriting each
other, but the loser pays a second model call. A lease keeps the second turn from
starting at all until the first is saved. Taking it never blocks: :meth:`LeaseAttempt.take`
either wins at once or returns ``None``, and a waiter polls (``wait_lease``), so a waiter can
give up at its limit, notice its client left, or claim the running turn between tries.

- **SQLite** (one machine): the row in ``agent_core_leases`` *is* the lease. It is taken by
  an upsert that succeeds only when no row exists or the row's ``expires_at`` has passed,
  and the store's watcher thread pushes the holder's ``expires_at`` forward every third of
  the TTL. A holder that dies (even by SIGKILL) stops renewing, so its session frees
  itself at most ``lease_ttl_s`` later.
- **PostgreSQL**: a session-level advisory lock on a connection of the lease's own,
  outside the pool. A transaction-level lock would free itself as well, but only by
  keeping a transaction open for the whole turn, which pins the vacuum horizon and holds
  a pooled connection idle in transaction; a session-level lock on a dedicated
  connection frees itself the moment that connection drops, so a holder that dies frees
  the session at once, and nothing else waits on it. The row only says who holds the lock.

The row also carries ``claim``, how waiters talk to the holder in any process:
``interrupt`` (stop and save what you have), ``discard`` (stop and save nothing) and
``saving``, which the holder sets, in one conditional update, just before it saves. So a
``discard`` either lands before the save (the holder sees it and does not save) or fails
because the holder is saving already (the waiter then simply waits): never both. The
store's watcher thread reads each held lease's claim every ``TICK_S`` and calls
``on_claim`` (cancel the request), so a claim reaches a holder in another process without
any channel. A store's ``leases`` (:mod:`agent_core.store.leases`) are how callers use them.

The row's ``running`` column records the turn its holder runs, so that a holder that dies
before saving leaves what to save as stopped; a take keeps it, and the new holder saves it
before it gets the lease (:mod:`agent_core.store.lost_turns`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Container
from typing import Any, Literal

import msgspec

from .. import Message
from ..errors import InvalidArgumentError, StoreError
from .lost_turns import running_record, save_left

__all__ = ["PG_LOCKED", "TICK_S", "Claim", "LeaseAttempt", "LeaseInfo", "SessionBusyError", "SessionLease", "Watcher",
           "read_holder", "write_claim"]

TICK_S = 0.2  # how often a holder reads its claim (the delay of an interrupt from another process)
_log = logging.getLogger("agent_core.store.lease")
Claim = Literal["interrupt", "discard"]

_COLUMNS = "session_id, holder, request_id, started_at, claim"
_INSERT = (
    "INSERT INTO agent_core_leases (session_id, holder, request_id, started_at, expires_at, claim) "
    "VALUES (?, ?, ?, ?, ?, NULL) ON CONFLICT (session_id) DO UPDATE SET holder = excluded.holder, "
    "request_id = excluded.request_id, started_at = excluded.started_at, expires_at = excluded.expires_at, "
    "claim = NULL, running = CASE WHEN agent_core_leases.claim = 'discard' THEN NULL ELSE agent_core_leases.running END"
)  # ``running`` outlives its dead holder, for the new one to save, unless a waiter had it discarded
_PG_KEY = "hashtextextended(current_schema() || '/' || {}, 0)"  # the schema too: advisory locks are per database
PG_LOCKED = (  # a row's advisory lock is held (by a live lease)
    "EXISTS (SELECT 1 FROM pg_locks k WHERE k.locktype = 'advisory' AND k.granted AND k.objsubid = 1"
    " AND k.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    " AND ((k.classid::bigint << 32) | k.objid::bigint) = " + _PG_KEY.format("session_id") + ")"
)
_PG_HELD = " AND " + PG_LOCKED
_CLAIM_FROM = {"interrupt": "claim IS NULL", "discard": "(claim IS NULL OR claim = 'interrupt')"}


class SessionBusyError(StoreError):
    """Another turn held the session's lease for longer than the caller would wait."""


class LeaseInfo(msgspec.Struct, frozen=True):
    """Who runs a turn on a session: what a waiter shows its client and addresses a claim to."""

    session_id: str
    holder: str
    request_id: str | None
    started_at: float
    claim: str | None


def _info(row: Any) -> LeaseInfo:
    return LeaseInfo(str(row[0]), str(row[1]), row[2], float(row[3]), row[4])


class _Rows:
    """Statements on a lease's own PostgreSQL connection, or in SQLite transactions: one shape for both."""

    def __init__(self, backend: Any, conn: Any = None) -> None:
        self._backend, self._conn = backend, conn

    def run(self, sql: str, params: tuple[Any, ...]) -> int:
        if self._conn is not None:
            return max(self._conn.execute(sql.replace("?", "%s"), params).rowcount, 0)
        with self._backend.transaction(write=True) as tx:
            return tx.run(sql, params)

    def rows(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        if self._conn is not None:
            return list(self._conn.execute(sql.replace("?", "%s"), params).fetchall())
        with self._backend.transaction(write=False) as tx:
            return tx.rows(sql, params)

    def claim_of(self, sid: str, holder: str) -> str | None:
        found = self.rows("SELECT claim FROM agent_core_leases WHERE session_id = ? AND holder = ?", (sid, holder))
        return found[0][0] if found else None


class Watcher:
    """One thread per store that ticks every held lease: reads its claim, renews it (SQLite).

    One thread, not one per lease, so a busy server does not start a thread per turn, and
    on SQLite its reads use one connection (the backend keeps a connection per thread).
    It lives as long as the store is open. It also keeps the PostgreSQL lock connections
    that are free again (unlocked), since opening one costs more than the rest of a lease.
    """

    max_idle = 8

    def __init__(self, backend: Any, max_open: int = 32) -> None:
        self._backend = backend
        self._leases: set[SessionLease] = set()
        self._idle: list[Any] = []
        self._lock = threading.Lock()
        self._pid = os.getpid()
        #: most lock connections open at once (held leases, waiters' and idle ones); beyond it a
        #: turn on a free session waits as if the session were busy, instead of PostgreSQL
        #: refusing a connection ("too many clients") and the turn failing
        self.max_open = max_open
        self._open = 0
        threading.Thread(target=self._run, name="agent-core-leases", daemon=True).start()

    def borrow(self) -> tuple[Any, bool]:
        """A lock connection and whether it was used before (it may have died since); ``(None, False)`` at the cap."""
        with self._lock:
            if self._idle:
                return self._idle.pop(), True
            if self._open >= self.max_open:
                return None, False
            self._open += 1
        try:
            return self._backend.dedicated(), False
        except BaseException:
            with self._lock:
                self._open -= 1
            raise

    def give_back(self, conn: Any) -> None:
        """Unlock everything the connection holds and keep it, or close it."""
        try:
            conn.execute("SELECT pg_advisory_unlock_all()")
            with self._lock:
                if len(self._idle) < self.max_idle and not getattr(self._backend, "_closed", False):
                    self._idle.append(conn)
                    return
        except Exception as exc:  # noqa: BLE001 - a dead connection holds no lock: close it
            _log.debug("a lock connection did not come back: %s", exc)
        self.drop(conn)

    def drop(self, conn: Any) -> None:
        """Close a lock connection (dropping any lock it holds) and free its place under the cap."""
        with self._lock:
            self._open = max(0, self._open - 1)
        conn.close()

    def add(self, lease: SessionLease) -> None:
        with self._lock:
            self._leases.add(lease)

    def discard(self, lease: SessionLease) -> None:
        with self._lock:
            self._leases.discard(lease)

    def alive(self) -> bool:
        return self._pid == os.getpid()  # a forked child has no such thread: it starts its own

    def _run(self) -> None:
        while not getattr(self._backend, "_closed", False):
            time.sleep(TICK_S)
            with self._lock:
                leases = list(self._leases)
            for lease in leases:
                lease.tick()
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            self.drop(conn)


class SessionLease:
    """A held lease: the session is this turn's until :meth:`release` (or the holder's death).

    ``on_claim`` is called from the store's watcher thread when a waiter claims the turn
    (``interrupt`` or ``discard``), again every tick until it returns True (the request
    it cancels may not have started yet). ``lost`` turns True when the lease went away
    under the holder (a SQLite renewal came too late, the PostgreSQL connection dropped):
    the turn may still save, and the store's revisions still guard that save.
    ``recovered`` is the revision at which the take saved a dead holder's turn as stopped, if it did.
    """

    def __init__(self, rows: _Rows, info: LeaseInfo, on_claim: Callable[[], bool] | None,
                 ttl_s: float | None, watcher: Watcher, conn: Any = None) -> None:
        self.info, self.lost = info, False
        self.recovered: int | None = None
        self.unreleased = False  # the release could not delete the row (the database was away)
        self._rows, self._on_claim, self._ttl, self._conn, self._watcher = rows, on_claim, ttl_s, conn, watcher
        #: called once the lease is released (the store wakes the next waiter in its own line)
        self.on_release: Callable[[], None] | None = None
        self._lock = threading.Lock()  # a tick and the release never overlap
        self._released = self._answered = False
        self._renew_at = time.monotonic() + (ttl_s or 0) / 3
        watcher.add(self)

    def tick(self) -> None:
        """One look at the row: the claim (and on SQLite a renewal every third of the TTL)."""
        sid, holder = self.info.session_id, self.info.holder
        with self._lock:
            if self._released or self.lost:
                return
            try:
                claim = self._rows.claim_of(sid, holder)
                if self._ttl is not None and time.monotonic() >= self._renew_at:
                    self._renew_at = time.monotonic() + self._ttl / 3
                    if not self._rows.run("UPDATE agent_core_leases SET expires_at = ? WHERE session_id = ? AND "
                                          "holder = ?", (time.time() + self._ttl, sid, holder)):
                        self._lose("its row expired before it was renewed")
                        return
            except Exception as exc:  # noqa: BLE001 - a dropped connection: the lock went with it
                self._lose(f"{type(exc).__name__}: {exc}")
                return
            if claim in ("interrupt", "discard") and not self._answered and self._on_claim is not None:
                try:
                    self._answered = bool(self._on_claim())
                except Exception:  # noqa: BLE001 - the callback is the caller's; keep watching
                    _log.exception("lease on_claim callback failed")

    def _lose(self, why: str) -> None:
        self.lost = True
        _log.warning("the lease on session %r was lost: %s", self.info.session_id, why)

    def claim_save(self) -> bool:
        """Mark the turn as saving; False when a waiter asked to discard it first (then do not save).

        One conditional update, so a ``discard`` and a save never both happen. A lease that
        is gone (lost) answers True: the save is then guarded by revisions alone.
        """
        sid, holder = self.info.session_id, self.info.holder
        try:
            if self._rows.run("UPDATE agent_core_leases SET claim = 'saving' WHERE session_id = ? AND holder = ? AND "
                              + _CLAIM_FROM["discard"], (sid, holder)):
                return True
            return self._rows.claim_of(sid, holder) != "discard"
        except Exception as exc:  # noqa: BLE001 - see lost
            self._lose(f"{type(exc).__name__}: {exc}")
            return True

    async def aclaim_save(self) -> bool:
        return await asyncio.to_thread(self.claim_save)

    def record_turn(self, message: Message, base: int) -> None:
        """Record the turn starting now, adding ``message`` at revision ``base`` (one write; StoreError if it fails).

        Should this process die before the turn is saved, the lease's next holder saves
        ``message`` as stopped (:mod:`agent_core.store.lost_turns`).
        """
        record = running_record(message, base, self.info.request_id)
        self._rows.run("UPDATE agent_core_leases SET running = ? WHERE session_id = ? AND holder = ?",
                       (record, self.info.session_id, self.info.holder))

    async def arecord_turn(self, message: Message, base: int) -> None:
        await asyncio.to_thread(self.record_turn, message, base)

    def release(self) -> None:
        """Free the session (idempotent): delete the row, close the lock's connection."""
        self._free("DELETE FROM agent_core_leases WHERE session_id = ? AND holder = ?")

    def abandon(self) -> None:
        """Free the session but keep the row and what it records, for the next holder (an expired row on SQLite)."""
        self._free("UPDATE agent_core_leases SET expires_at = 0 WHERE session_id = ? AND holder = ?")

    def _free(self, sql: str) -> None:
        with self._lock:
            if self._released:
                return
            self._released = True
        self._watcher.discard(self)
        try:
            self._rows.run(sql, (self.info.session_id, self.info.holder))
        except Exception as exc:  # noqa: BLE001 - SQLite: the row expires; PostgreSQL: closing frees the lock
            _log.warning("releasing the lease on %r: %s", self.info.session_id, exc)
            self.unreleased = True  # its row, and the turn it records, stay: see agent_core.store.lost_turns
        finally:
            if self._conn is not None:
                self._watcher.give_back(self._conn)
            if self.on_release is not None:
                self.on_release()

    async def arelease(self) -> None:
        await asyncio.to_thread(self.release)


class LeaseAttempt:
    """One turn's way to a session's lease: :meth:`take` as often as it likes, then :meth:`close`.

    On PostgreSQL the attempt keeps its connection between tries (a waiter polls on
    one connection instead of opening one per try) and hands it to the lease it wins.
    """

    def __init__(self, backend: Any, session_id: str, request_id: str | None,
                 on_claim: Callable[[], bool] | None, ttl_s: float, watcher: Watcher) -> None:
        if not isinstance(session_id, str) or not session_id:
            raise InvalidArgumentError(f"session_id must be a non-empty string, got {session_id!r}",
                                       argument="session_id")
        self._backend, self.session_id, self.request_id = backend, session_id, request_id
        self._on_claim, self._ttl, self._watcher = on_claim, ttl_s, watcher
        self.holder = uuid.uuid4().hex
        self._conn: Any = None
        #: request ids of turns this store ended unsaved but could not clear: a take does not save them as lost
        self.ended: Container[str] = ()

    def take(self) -> SessionLease | None:
        """The lease, or None while another turn holds it. Raises StoreError when the database is away."""
        if self._backend.dialect == "postgresql":
            return self._take_pg()
        sid, now = self.session_id, time.time()
        with self._backend.transaction(write=False) as tx:  # a read first: a busy session costs no write lock
            row = tx.rows("SELECT expires_at FROM agent_core_leases WHERE session_id = ?", (sid,))
        if row and float(row[0][0]) >= now:
            return None
        with self._backend.transaction(write=True) as tx:
            won = tx.rows(_INSERT + " WHERE agent_core_leases.expires_at < ? RETURNING running",
                          (sid, self.holder, self.request_id, now, now + self._ttl, now))
        if not won:
            return None
        info = LeaseInfo(sid, self.holder, self.request_id, now, None)
        lease = SessionLease(_Rows(self._backend), info, self._on_claim, self._ttl, self._watcher)
        return save_left(self._backend, lease, won[0][0], self.ended)

    def _take_pg(self) -> SessionLease | None:
        import psycopg

        reused = True
        while True:
            try:
                if self._conn is None:
                    self._conn, reused = self._watcher.borrow()
                    if self._conn is None:  # this process holds as many lock connections as it may
                        return None
                key = _PG_KEY.format("%s")
                if not self._conn.execute(f"SELECT pg_try_advisory_lock({key})", (self.session_id,)).fetchone()[0]:
                    return None
                now = time.time()
                rows = _Rows(self._backend, self._conn)
                running = rows.rows(_INSERT + " RETURNING running",
                                    (self.session_id, self.holder, self.request_id, now, now))[0][0]
                break
            except psycopg.Error as exc:
                conn, self._conn = self._conn, None
                if conn is not None:
                    self._watcher.drop(conn)  # closing drops a lock it may have taken
                if not reused:
                    raise StoreError(f"cannot take the lease on session {self.session_id!r}: "
                                     f"{type(exc).__name__}", session_id=self.session_id) from None
        conn, self._conn = self._conn, None
        info = LeaseInfo(self.session_id, self.holder, self.request_id, now, None)
        lease = SessionLease(rows, info, self._on_claim, None, self._watcher, conn)
        return save_left(self._backend, lease, running, self.ended)

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            self._watcher.give_back(conn)


def read_holder(backend: Any, session_id: str) -> LeaseInfo | None:
    """The live holder's row: on SQLite one not expired, on PostgreSQL one whose lock is held."""
    sqlite = backend.dialect == "sqlite"
    held = " AND expires_at >= ?" if sqlite else _PG_HELD
    with backend.transaction(write=False) as tx:
        found = tx.rows(f"SELECT {_COLUMNS} FROM agent_core_leases WHERE session_id = ?{held}",
                        (session_id, time.time()) if sqlite else (session_id,))
    return _info(found[0]) if found else None


def write_claim(backend: Any, session_id: str, holder: str, claim: Claim) -> bool:
    """Set ``claim`` on ``holder``'s row if it may still be set (see the module's docstring)."""
    if claim not in _CLAIM_FROM:
        raise InvalidArgumentError(f"claim must be 'interrupt' or 'discard', got {claim!r}", argument="claim")
    with backend.transaction(write=True) as tx:
        return bool(tx.run(f"UPDATE agent_core_leases SET claim = ? WHERE session_id = ? AND holder = ? AND "
                           f"{_CLAIM_FROM[claim]}", (claim, session_id, holder)))
