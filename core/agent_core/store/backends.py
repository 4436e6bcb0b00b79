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

from ..errors import ConfigError, StoreError

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
                raise StoreError(f"cannot open the session database {self.path}: {exc}") from exc
            self._local.conn, self._local.pid = conn, os.getpid()
            with self._lock:
                self._conns.append(conn)
        return conn

    @contextmanager
    def transaction(self, write: bool) -> Iterator[Tx]:
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        try:
            yield Tx(conn.cursor(), self.dialect, self.trace)
        except BaseException:
            conn.rollback()
            raise
        conn.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._closed = True
            conns, self._conns = self._conns, []
        for conn in conns:
            try:
                conn.close()
            except sqlite3.Error:  # pragma: no cover - closing is best effort
                pass


class PostgresBackend:
    """A psycopg 3 connection pool; reads run in REPEATABLE READ so one load sees one revision."""

    dialect = "postgresql"

    def __init__(self, url: str, *, display: str, max_size: int = 10, timeout_s: float = 30.0) -> None:
        try:
            import psycopg  # noqa: F401
            import psycopg_pool  # noqa: F401
        except ImportError as exc:
            raise ConfigError(
                "a postgresql:// store needs psycopg 3 and psycopg-pool: pip install 'agent-core[postgres]'",
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

        try:
            with self._get_pool().connection() as conn:
                if not write:
                    conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                with conn.cursor() as cur:
                    yield Tx(cur, self.dialect, self.trace)
        except (PoolTimeout, psycopg.OperationalError) as exc:
            # psycopg's text names host, port and user; the password is scrubbed all the same
            text = str(exc)
            if self._password:
                text = text.replace(self._password, "<redacted>")
            raise StoreError(f"the session database {self.display} cannot be reached: {text}") from None

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
        except psycopg.OperationalError as exc:
            text = str(exc).replace(self._password, "<redacted>") if self._password else str(exc)
            raise StoreError(f"the session database {self.display} cannot be reached: {text}") from None

    def close(self) -> None:
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None and self._pid == os.getpid():
            pool.close()
