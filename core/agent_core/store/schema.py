"""The store's tables and their migrations.

Theory of operation: ``agent_core_schema`` holds one row, the schema version
the database is at. :data:`MIGRATIONS` is the list of steps, step ``i``
taking a database from version ``i`` to ``i + 1`` (version 0 is an empty
database). Opening a store runs :func:`migrate` in one write transaction:
every missing step runs, then the version is written; if any step fails the
transaction rolls back and the database is left as it was. A database at a
version above ``len(MIGRATIONS)`` was written by a newer agent-core and is
refused with :class:`~agent_core.errors.SchemaVersionError`, untouched.

The SQL is the subset SQLite and PostgreSQL share (``TEXT``, ``BIGINT``,
``DOUBLE PRECISION``); JSON is kept as ``TEXT`` so the bytes read back are
the bytes written (``jsonb`` would reorder keys).

To change the schema, append a step; never edit a released one.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import SchemaVersionError, StoreError

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "migrate"]

_V1 = (
    """CREATE TABLE agent_core_sessions (
        session_id TEXT PRIMARY KEY,
        revision BIGINT NOT NULL,
        message_count BIGINT NOT NULL,
        digest TEXT NOT NULL,
        metadata TEXT NOT NULL,
        native TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL
    )""",
    """CREATE TABLE agent_core_messages (
        session_id TEXT NOT NULL,
        seq BIGINT NOT NULL,
        revision BIGINT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (session_id, seq)
    )""",
    """CREATE TABLE agent_core_native (
        session_id TEXT NOT NULL,
        provider TEXT NOT NULL,
        seq BIGINT NOT NULL,
        revision BIGINT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (session_id, provider, seq)
    )""",
    """CREATE TABLE agent_core_revisions (
        session_id TEXT NOT NULL,
        revision BIGINT NOT NULL,
        first_index BIGINT NOT NULL,
        added BIGINT NOT NULL,
        replaced SMALLINT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (session_id, revision)
    )""",
)

# Who runs a turn on a session right now (``agent_core.store.lease``): on SQLite the row is the lease
# (its expiry frees it when the holder dies); on PostgreSQL an advisory lock is, and the row only says
# who holds it, since when, and what a waiting turn asks of it (``claim``).
_V2 = (
    """CREATE TABLE agent_core_leases (
        session_id TEXT PRIMARY KEY,
        holder TEXT NOT NULL,
        request_id TEXT,
        started_at DOUBLE PRECISION NOT NULL,
        expires_at DOUBLE PRECISION NOT NULL,
        claim TEXT
    )""",
)

# The turn running under the lease (``agent_core.store.lost_turns``): what its process would have to save as
# stopped if it died before saving (the input and the revision it started from), as JSON; NULL when none runs.
_V3 = ("ALTER TABLE agent_core_leases ADD COLUMN running TEXT",)

MIGRATIONS: tuple[tuple[str, ...], ...] = (_V1, _V2, _V3)
SCHEMA_VERSION = len(MIGRATIONS)


def migrate(tx: object, migrations: Sequence[Sequence[str]] = MIGRATIONS) -> int:
    """Bring the database in ``tx`` (a write transaction) to ``len(migrations)``; return the version found.

    Raises:
        SchemaVersionError: the database is newer than ``migrations`` know.
        StoreError: a step failed (the caller's transaction then rolls every step back).
    """
    run, rows = tx.run, tx.rows  # type: ignore[attr-defined]
    if tx.dialect == "postgresql":  # type: ignore[attr-defined]
        # two processes opening a fresh database at once: the second waits here, then sees the tables
        rows("SELECT pg_advisory_xact_lock(?)", (0x6167_636F_7265,))
    run("CREATE TABLE IF NOT EXISTS agent_core_schema (version INTEGER NOT NULL)")
    found_rows = rows("SELECT version FROM agent_core_schema")
    found = int(found_rows[0][0]) if found_rows else 0
    target = len(migrations)
    if found > target:
        raise SchemaVersionError(
            f"the session database is at schema version {found}, but this agent-core knows versions up to "
            f"{target}: it was written by a newer agent-core; upgrade agent-core to open it (nothing was changed)",
            found=found,
            supported=target,
        )
    for version, step in enumerate(migrations[found:], start=found + 1):
        try:
            for statement in step:
                run(statement)
        except Exception as exc:
            raise StoreError(
                f"upgrading the session database to schema version {version} failed, so nothing was changed "
                f"(it stays at version {found}): {exc}"
            ) from exc
    if found != target:
        if found_rows:
            run("UPDATE agent_core_schema SET version = ?", (target,))
        else:
            run("INSERT INTO agent_core_schema (version) VALUES (?)", (target,))
    return found
