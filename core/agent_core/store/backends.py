"""Connections and transactions for the two databases, behind one small interface.

A backend gives out transactions (``with backend.transaction(write) as tx``)
whose ``tx.rows`` / ``tx.run`` / ``tx.many`` take SQL written with ``?``
placeholders; everything above this module is database-neutral. A write
transaction holds the lock that makes "check the revision, then write" one
step: SQLite's ``BEGIN IMMEDIATE`` (one writer at a time), PostgreSQL's
``SELECT ... FOR UPDATE`` on the session's head row (``tx.for_update``).

Connections are per thread (SQLite) or pooled (PostgreSQL), and per process:
a store used after ``fork`` opens fresh connections in the child rather than
sharing sockets or file locks with the parent.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from ..errors import ConfigError, StoreError, StoreUnavailableError, install_hint

__all__ = ["PostgresBackend", "SqliteBackend", "Tx"]

Trace = Callable[[str, int, int], None]  # (sql, rows written, bytes of parameters)


def _param_bytes(params: Sequence[Any]) -> int:
    return sum(len(p) for p in params if isinstance(p, (str, bytes)))


class Tx:
    """One open transaction: run statements, read rows."""

    def __init__(self, cursor: Any, dialect: str, trace: Trace | None) -> None:
        self._cur = cursor
        self.dialect = dialect
        self.for_update = " FOR UPDATE" if dialect == "postgresql" else ""
        self._trace = trace

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self.dialect == "postgresql" else sql

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        self._cur.execute(self._sql(sql), params)
        return list(self._cur.fetchall())

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        self._cur.execute(self._sql(sql), params)
        count = max(self._cur.rowcount, 0)
        if self._trace is not None:
            self._trace(sql, count, _param_bytes(params))
        return count

    def many(self, sql: str, seq: Iterable[Sequence[Any]]) -> int:
        batch = list(seq)
        if not batch:
            return 0
        self._cur.executemany(self._sql(sql), batch)
        if self._trace is not None:
            self._trace(sql, len(batch), sum(_param_bytes(p) for p in batch))
        return len(batch)


#: SQLite's primary result codes that mean "not now" or "not here", and how soon a retry may help
_SQLITE_UNAVAILABLE = {
    "BUSY": ("busy", 1.0), "LOCKED": ("busy", 1.0), "READONLY": ("read_only", None),
    "FULL": ("disk_full", None), "IOERR": ("io", None),
}


def _read_only(path: str) -> bool:
    """Whether the database's file or directory refuses writes (a read-only mount, or its permissions)."""
    directory = os.path.dirname(os.path.abspath(path))
    try:
        if os.statvfs(directory).f_flag & os.ST_RDONLY:
            return True
    except OSError:
        return False
    target = path if os.path.exists(path) else directory
    return not os.access(target, os.W_OK)


def sqlite_failure(exc: sqlite3.Error, path: str, busy_timeout_s: float) -> StoreError:
    """The store's own error for what SQLite raised, so no ``sqlite3`` exception leaves the store.

    SQLite (Python 3.11+) names its result code on the exception (``SQLITE_BUSY``,
    ``SQLITE_READONLY_DBMOVED``...); the primary code decides the reason.
    """
    name = getattr(exc, "sqlite_errorname", None) or ""
    primary = name.split("_")[1] if name.startswith("SQLITE_") else ""
    if primary == "CANTOPEN" and _read_only(path):  # WAL needs its -shm file, which a read-only place cannot hold
        primary = "READONLY"
    if primary in _SQLITE_UNAVAILABLE:
        reason, retry_after = _SQLITE_UNAVAILABLE[primary]
        why = (f"another writer held it past the store's {busy_timeout_s:g} s busy timeout"
               if reason == "busy" else str(exc))
        return StoreUnavailableError(f"the session database {path} is unavailable ({reason}): {why}",
                                     reason=reason, retry_after=retry_after)
    return StoreError(f"the session database {path} failed: {exc} ({name or type(exc).__name__})")


def _wal(conn: sqlite3.Connection, timeout_s: float) -> None:
    """Switch to WAL, waiting for the other openers of a fresh file.

    Setting the journal mode wants the file to itself and SQLite answers "database is locked"
    at once rather than calling the busy handler, so threads or processes opening a new
    database together (two servers starting) would fail without this wait.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


class SqliteBackend:
    """A SQLite file in WAL mode: readers never wait for the writer, writers take turns."""

    dialect = "sqlite"

    def __init__(self, path: str, *, busy_timeout_s: float = 60.0) -> None:
        self.path = path
        self._timeout = busy_timeout_s
        self._local = threading.local()
        self._lock = threading.Lock()
        self._conns: list[sqlite3.Connection] = []
        self._closed = False
        self.trace: Trace | None = None

    def _conn(self) -> sqlite3.Connection:
        if self._closed:
            raise StoreError(f"the session store at {self.path} is closed")
        conn, pid = getattr(self._local, "conn", None), getattr(self._local, "pid", None)
        if conn is None or pid != os.getpid():
            try:
                conn = sqlite3.connect(self.path, timeout=self._timeout, isolation_level=None, check_same_thread=False)
                _wal(conn, self._timeout)
            except sqlite3.Error as exc:
                failure = sqlite_failure(exc, self.path, self._timeout)
                if not isinstance(failure, StoreUnavailableError):
                    failure = StoreError(f"cannot open the session database {self.path}: {exc}")
                raise failure from None
            self._local.conn, self._local.pid = conn, os.getpid()
            with self._lock:
                self._conns.append(conn)
        return conn

    @contextmanager
    def transaction(self, write: bool) -> Iterator[Tx]:
        conn = self._conn()
        try:
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield Tx(conn.cursor(), self.dialect, self.trace)
            except BaseException:
                if conn.in_transaction:  # SQLite may have rolled back already (a full disk, an I/O error)
                    conn.rollback()
                raise
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            if conn.in_transaction:  # a failed COMMIT leaves the transaction open
                try:
                    conn.rollback()
                except sqlite3.Error:  # pragma: no cover - the first error is the one to report
                    pass
            raise sqlite_failure(exc, self.path, self._timeout) from None

    def close(self) -> None:
        with self._lock:
            self._closed = True
            conns, self._conns = self._conns, []
        for conn in conns:
            try:
                conn.close()
            except sqlite3.Error:  # pragma: no cover - closing is best effort
                pass


#: how long a transaction waits for a pooled connection while the server seems down
_DOWN_WAIT_S = 1.0


class PostgresBackend:
    """A psycopg 3 connection pool; reads run in REPEATABLE READ so one load sees one revision."""

    dialect = "postgresql"

    def __init__(self, url: str, *, display: str, max_size: int = 10, timeout_s: float = 30.0) -> None:
        try:
            import psycopg  # noqa: F401
            import psycopg_pool  # noqa: F401
        except ImportError as exc:
            raise ConfigError(
                f"a postgresql:// store needs psycopg 3 and psycopg-pool: {install_hint('postgres')}",
                key="url",
            ) from exc
        self._url = url
        self._password = urlsplit(url).password or ""
        self.display = display
        self._max_size = max_size
        self._timeout = timeout_s
        self._lock = threading.Lock()
        self._pool: Any = None
        self._pid = 0
        self._closed = False
        self._checking = False
        self._down = False  # the last transaction lost its connection: the server may be down
        self.trace: Trace | None = None

    def _get_pool(self) -> Any:
        if self._closed:
            raise StoreError(f"the session store at {self.display} is closed")
        with self._lock:
            if self._pool is None or self._pid != os.getpid():
                import psycopg
                from psycopg_pool import ConnectionPool

                # One direct attempt first: an unreachable server fails now, not after the pool's timeout.
                psycopg.connect(self._url, connect_timeout=max(int(self._timeout), 2)).close()
                self._pool = ConnectionPool(
                    self._url, min_size=1, max_size=self._max_size, timeout=self._timeout, open=True,
                    name="agent-core-store",
                )
                self._pid = os.getpid()
            return self._pool

    @contextmanager
    def transaction(self, write: bool) -> Iterator[Tx]:
        import psycopg
        from psycopg_pool import PoolTimeout

        down = self._down  # after a lost connection, do not queue for the pool's full timeout
        try:
            with self._get_pool().connection(timeout=_DOWN_WAIT_S if down else None) as conn:
                if not write:
                    conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                with conn.cursor() as cur:
                    yield Tx(cur, self.dialect, self.trace)
                self._down = False
        except PoolTimeout as exc:
            if down:
                raise StoreUnavailableError(
                    f"the session database {self.display} cannot be reached: no connection since the last one was "
                    f"lost ({self._scrub(str(exc))})", reason="unreachable", retry_after=1.0) from None
            raise StoreUnavailableError(
                f"the session database {self.display} is unavailable (busy): no connection came free "
                f"within {self._timeout:g} s ({self._scrub(str(exc))})", reason="busy", retry_after=1.0) from None
        except psycopg.Error as exc:
            raise self._failure(exc) from None

    def _check_pool(self) -> None:
        """Have the pool test its idle connections in the background, one check at a time."""
        with self._lock:
            pool = self._pool
            if pool is None or self._pid != os.getpid() or self._checking:
                return
            self._checking = True

        def check() -> None:
            try:
                pool.check()
            except Exception:  # noqa: BLE001, S110 - a closed pool or a server still down: the next failure checks again
                pass
            finally:
                self._checking = False

        threading.Thread(target=check, daemon=True, name="agent-core-store-pool-check").start()

    def _scrub(self, text: str) -> str:
        # psycopg's text names host, port and user; the password is scrubbed all the same
        return text.replace(self._password, "<redacted>") if self._password else text

    def _failure(self, exc: Any) -> StoreError:
        """The store's own error for what psycopg raised; a lost connection also has the pool check the rest.

        After a server restart every idle pooled connection is dead, and each would fail the
        next transaction that borrows it; checking the pool once, on the first failure,
        replaces them, so only the transactions in flight at the restart fail.
        """
        import psycopg

        text = self._scrub(str(exc).strip())
        state = getattr(exc, "sqlstate", None) or ""
        if state == "53100":
            return StoreUnavailableError(f"the session database {self.display} is unavailable (disk_full): {text}",
                                         reason="disk_full")
        if state == "25006":
            return StoreUnavailableError(f"the session database {self.display} is unavailable (read_only): {text}",
                                         reason="read_only")
        if isinstance(exc, psycopg.OperationalError):
            self._down = True
            self._check_pool()
            return StoreUnavailableError(f"the session database {self.display} cannot be reached: {text}",
                                         reason="unreachable", retry_after=1.0)
        return StoreError(f"the session database {self.display} failed: {text} ({type(exc).__name__})")

    def dedicated(self) -> Any:
        """An autocommit connection outside the pool, for a session-level lock that must die with it.

        A pooled connection would outlive the lease that locked it (and hand the lock to the
        next borrower); this one is closed with the lease, or dropped by the server with the process.
        """
        import psycopg

        if self._closed:
            raise StoreError(f"the session store at {self.display} is closed")
        try:
            return psycopg.connect(self._url, autocommit=True, connect_timeout=max(int(self._timeout), 2))
        except psycopg.Error as exc:
            raise self._failure(exc) from None

    def close(self) -> None:
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None and self._pid == os.getpid():
            pool.close()
