"""What each tenant used, shared by every server process on one store: the ledger tenant limits are checked against.

Theory of operation. Three tables beside the sessions, in the same database (SQLite for
one machine, PostgreSQL for many):

- ``agent_core_tenant_minutes``: requests and tokens per tenant per clock minute (the
  per-minute limits read the current minute's row);
- ``agent_core_tenant_spend``: each tenant's running totals, spend included, and the
  largest cost one of its requests has had;
- ``agent_core_tenant_running``: one row per request in flight, with what it holds of the
  budget and until when the row counts (``expires_at``). Its process pushes that forward
  while the request runs (:meth:`TenantLedger.renew`), so a process that dies frees its
  tenants' places at most :data:`HOLD_S` later.

A request costs two short transactions, whatever the limits: :meth:`TenantLedger.admit`
(read the tenant's rows, decide, add the request) and :meth:`TenantLedger.settle` (take it
out, add its tokens and cost). Each runs under the tenant's lock (SQLite: the write lock
of ``BEGIN IMMEDIATE``; PostgreSQL: a transaction-level advisory lock on the tenant's
name), so two processes never both take the last place.

Budget. A request's cost is known only once it ended, so a budget is guarded by holds:
each admitted request holds as much as the tenant's most expensive request so far, and a
request is admitted only while what was spent plus every hold fits the budget, or when
none of the tenant's requests runs (the last one may overshoot). Until a first cost is
known, a tenant with a budget runs one request at a time. So the budget is exceeded by
at most one request's cost, as long as no request costs more than the most expensive one
before it (a request that does overshoots by the difference).
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Mapping
from typing import Any

import msgspec

from ..errors import ConfigError

__all__ = ["HOLD_S", "Admitted", "Limits", "Refused", "TenantLedger", "TenantUse", "parse_limits"]

#: how long a running request's row counts without its process renewing it
HOLD_S = 60.0

_TABLES = (
    "CREATE TABLE IF NOT EXISTS agent_core_tenant_minutes (tenant TEXT NOT NULL, minute BIGINT NOT NULL, "
    "requests BIGINT NOT NULL DEFAULT 0, tokens BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (tenant, minute))",
    "CREATE TABLE IF NOT EXISTS agent_core_tenant_spend (tenant TEXT PRIMARY KEY, spent DOUBLE PRECISION NOT NULL "
    "DEFAULT 0, requests BIGINT NOT NULL DEFAULT 0, tokens BIGINT NOT NULL DEFAULT 0, largest DOUBLE PRECISION "
    "NOT NULL DEFAULT 0)",
    "CREATE TABLE IF NOT EXISTS agent_core_tenant_running (tenant TEXT NOT NULL, rid TEXT NOT NULL, "
    "hold DOUBLE PRECISION NOT NULL, holder TEXT NOT NULL, expires_at DOUBLE PRECISION NOT NULL, "
    "PRIMARY KEY (tenant, rid))",
)


class Limits(msgspec.Struct, frozen=True, kw_only=True):
    """The numbers :meth:`TenantLedger.admit` checks (None: no such limit)."""

    max_concurrent: int | None = None
    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    budget_usd: float | None = None


class _LimitsTable(Limits, frozen=True, kw_only=True, forbid_unknown_fields=True):  # a tokens file's table
    pass


def parse_limits(raw: Mapping[str, Any], where: str) -> Limits:
    """A tokens-file entry's ``limits`` table, checked.

    Raises:
        ConfigError: an unknown limit, a wrong type, or a number below 1 (0 for ``budget_usd``), named.
    """
    try:
        table = msgspec.convert(dict(raw), _LimitsTable)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{where}: limits: {exc}") from None
    for name in ("max_concurrent", "requests_per_minute", "tokens_per_minute"):
        value = getattr(table, name)
        if value is not None and value < 1:
            raise ConfigError(f"{where}: limits.{name} must be at least 1, got {value}")
    if table.budget_usd is not None and not 0 <= table.budget_usd < 1e12:
        raise ConfigError(f"{where}: limits.budget_usd must be a number of dollars from 0, got {table.budget_usd}")
    return Limits(**msgspec.structs.asdict(table))


class Admitted(msgspec.Struct, frozen=True):
    rid: str


class Refused(msgspec.Struct, frozen=True):
    """Why a request may not run now: ``status`` 429 (wait ``retry_after`` seconds) or 402 (budget spent)."""

    status: int
    kind: str
    message: str
    retry_after: int | None = None


class TenantUse(msgspec.Struct, frozen=True):
    """One tenant's row of ``agent-core tenants usage``."""

    tenant: str
    requests: int
    tokens: int
    spent_usd: float
    running: int
    requests_this_minute: int
    tokens_this_minute: int


class TenantLedger:
    """The ledger on the database at ``url`` (the store's), on a connection of its own."""

    hold_s = HOLD_S  #: how long a running request's row counts without a renewal

    def __init__(self, url: str) -> None:
        self.url = url
        self.postgres = url.startswith(("postgresql://", "postgres://"))
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self._lock = threading.Lock()
        self._conn: Any = None

    def _connection(self) -> Any:
        if self._conn is None:
            if self.postgres:
                import psycopg

                self._conn = psycopg.connect(self.url, autocommit=True)
            else:
                import sqlite3

                path = self.url[len("sqlite:///"):].partition("?")[0]
                self._conn = sqlite3.connect(path, timeout=60, isolation_level=None, check_same_thread=False)
            self._conn.execute("BEGIN" if self.postgres else "BEGIN IMMEDIATE")
            if self.postgres:  # processes starting together: one creates, the others wait and find the tables
                self._conn.execute("SELECT pg_advisory_xact_lock(hashtext('agent_core_tenant_ledger'))")
            for statement in _TABLES:
                self._conn.execute(statement)
            self._conn.execute("COMMIT")
        return self._conn

    def _run(self, tenant: str | None, work: Any) -> Any:
        """``work(execute)`` in one transaction, under ``tenant``'s lock (every tenant's when None)."""
        with self._lock:
            conn = self._connection()
            mark = "%s" if self.postgres else "?"

            def execute(sql: str, args: tuple[Any, ...] = ()) -> Any:
                return conn.execute(sql.replace("?", mark), args)

            conn.execute("BEGIN" if self.postgres else "BEGIN IMMEDIATE")
            try:
                if self.postgres and tenant is not None:
                    conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", ("agent_core_tenant:" + tenant,))
                result = work(execute)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            return result

    def admit(self, tenant: str, limits: Limits, now: float | None = None) -> Admitted | Refused:
        """Count a request of ``tenant`` in, or say which limit it hit."""
        now = time.time() if now is None else now
        minute = int(now // 60)
        wait_minute = max(1, int(60 - now % 60) + 1)

        def work(execute: Any) -> Admitted | Refused:
            execute("DELETE FROM agent_core_tenant_running WHERE tenant = ? AND expires_at < ?", (tenant, now))
            row = execute("SELECT requests, tokens FROM agent_core_tenant_minutes WHERE tenant = ? AND minute = ?",
                          (tenant, minute)).fetchone()
            requests, tokens = (int(row[0]), int(row[1])) if row else (0, 0)
            row = execute("SELECT spent, largest FROM agent_core_tenant_spend WHERE tenant = ?", (tenant,)).fetchone()
            spent, largest = (float(row[0]), float(row[1])) if row else (0.0, 0.0)
            row = execute("SELECT count(*), coalesce(sum(hold), 0) FROM agent_core_tenant_running WHERE tenant = ?",
                          (tenant,)).fetchone()
            running, held = int(row[0]), float(row[1])
            refused = _verdict(limits, requests, tokens, spent, largest, running, held, wait_minute)
            if refused is not None:
                return refused
            rid = uuid.uuid4().hex
            execute("INSERT INTO agent_core_tenant_running (tenant, rid, hold, holder, expires_at) VALUES (?, ?, ?, ?, ?)",
                    (tenant, rid, largest, self.holder, now + self.hold_s))
            execute("INSERT INTO agent_core_tenant_minutes (tenant, minute, requests, tokens) VALUES (?, ?, 1, 0) "
                    "ON CONFLICT (tenant, minute) DO UPDATE SET requests = agent_core_tenant_minutes.requests + 1",
                    (tenant, minute))
            return Admitted(rid)

        return self._run(tenant, work)  # type: ignore[no-any-return]

    def settle(self, tenant: str, rid: str, tokens: int, cost: float, now: float | None = None) -> None:
        """The request ``rid`` of ``tenant`` ended having used ``tokens`` and ``cost`` dollars."""
        now = time.time() if now is None else now
        minute = int(now // 60)

        def work(execute: Any) -> None:
            execute("DELETE FROM agent_core_tenant_running WHERE tenant = ? AND rid = ?", (tenant, rid))
            execute("INSERT INTO agent_core_tenant_minutes (tenant, minute, requests, tokens) VALUES (?, ?, 0, ?) "
                    "ON CONFLICT (tenant, minute) DO UPDATE SET tokens = agent_core_tenant_minutes.tokens + ?",
                    (tenant, minute, tokens, tokens))
            execute("INSERT INTO agent_core_tenant_spend (tenant, spent, requests, tokens, largest) "
                    "VALUES (?, ?, 1, ?, ?) ON CONFLICT (tenant) DO UPDATE SET "
                    "spent = agent_core_tenant_spend.spent + ?, requests = agent_core_tenant_spend.requests + 1, "
                    "tokens = agent_core_tenant_spend.tokens + ?, largest = CASE WHEN "
                    "agent_core_tenant_spend.largest > ? THEN agent_core_tenant_spend.largest ELSE ? END",
                    (tenant, cost, tokens, cost, cost, tokens, cost, cost))

        self._run(tenant, work)

    def renew(self, now: float | None = None) -> None:
        """Keep this process's running requests counted for another :data:`HOLD_S` (one statement)."""
        now = time.time() if now is None else now
        self._run(None, lambda execute: execute(
            "UPDATE agent_core_tenant_running SET expires_at = ? WHERE holder = ?", (now + self.hold_s, self.holder)))

    def usage(self, now: float | None = None) -> list[TenantUse]:
        """Every tenant's totals, what runs now and this minute's numbers, by tenant name."""
        now = time.time() if now is None else now
        minute = int(now // 60)

        def work(execute: Any) -> list[TenantUse]:
            names = sorted({row[0] for table in ("spend", "running", "minutes") for row in execute(
                f"SELECT DISTINCT tenant FROM agent_core_tenant_{table}").fetchall()})
            out = []
            for name in names:
                spend = execute("SELECT requests, tokens, spent FROM agent_core_tenant_spend WHERE tenant = ?",
                                (name,)).fetchone() or (0, 0, 0.0)
                running = execute("SELECT count(*) FROM agent_core_tenant_running WHERE tenant = ? AND expires_at >= ?",
                                  (name, now)).fetchone()[0]
                this = execute("SELECT requests, tokens FROM agent_core_tenant_minutes WHERE tenant = ? AND minute = ?",
                               (name, minute)).fetchone() or (0, 0)
                out.append(TenantUse(name, int(spend[0]), int(spend[1]), round(float(spend[2]), 8), int(running),
                                     int(this[0]), int(this[1])))
            return out

        return self._run(None, work)  # type: ignore[no-any-return]

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _verdict(limits: Limits, requests: int, tokens: int, spent: float, largest: float, running: int, held: float,
             wait_minute: int) -> Refused | None:
    """The first limit a new request would break, or None. Budget first: it does not pass with time."""
    budget = limits.budget_usd
    if budget is not None:
        if spent >= budget:
            return Refused(402, "budget_exhausted", f"this tenant has spent its budget of ${budget:g} "
                           f"(${spent:.6g} spent); the operator can raise it")
        if running and (largest == 0 or spent + held + largest > budget):
            return Refused(429, "budget_held", "the rest of this tenant's budget is held by its requests in flight; "
                           "retry once one has ended", 1)
    if limits.max_concurrent is not None and running >= limits.max_concurrent:
        return Refused(429, "tenant_busy", f"this tenant has {running} requests in flight across the servers "
                       f"(its limit is {limits.max_concurrent}); retry once one has ended", 1)
    if limits.requests_per_minute is not None and requests >= limits.requests_per_minute:
        return Refused(429, "rate_limit_exceeded", f"this tenant made {requests} requests this minute (its limit is "
                       f"{limits.requests_per_minute} a minute)", wait_minute)
    if limits.tokens_per_minute is not None and tokens >= limits.tokens_per_minute:
        return Refused(429, "rate_limit_exceeded", f"this tenant used {tokens} tokens this minute (its limit is "
                       f"{limits.tokens_per_minute} a minute)", wait_minute)
    return None
