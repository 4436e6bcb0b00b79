"""Sessions that last: a session store with optimistic revisions (``docs/store.md``).

``open_store()`` opens the embedded SQLite default (``sessions.db`` under
``$AGENT_CORE_HOME``); ``open_store("postgresql://...")`` the same store on
PostgreSQL (the ``postgres`` extra). ``run_turn`` is the stateless request
handler in one call. The store sits above the kernel: it imports :mod:`agent_core`
and nothing in the kernel imports it (the engine never touches a database).
"""

from ..errors import (
    ConflictError,
    CorruptRecordError,
    SchemaVersionError,
    SessionNotFoundError,
    StoreError,
)
from .lease import LeaseInfo, SessionBusyError, SessionLease
from .location import default_home, open_store
from .protocol import SessionStore
from .schema import SCHEMA_VERSION
from .sql_store import SqlSessionStore
from .tenant_ledger import Admitted, Limits, Refused, TenantLedger, TenantUse, parse_limits
from .turns import (
    TurnDiscardedEvent,
    TurnResult,
    TurnRetryEvent,
    TurnSavedEvent,
    arun_turn,
    astream_turn,
    run_turn,
    stream_turn,
)
from .values import Revision, SessionInfo, Stored, iso_time

__all__ = [
    "Admitted",
    "ConflictError",
    "CorruptRecordError",
    "LeaseInfo",
    "Limits",
    "Refused",
    "Revision",
    "SCHEMA_VERSION",
    "SchemaVersionError",
    "SessionBusyError",
    "SessionInfo",
    "SessionLease",
    "SessionNotFoundError",
    "SessionStore",
    "SqlSessionStore",
    "StoreError",
    "Stored",
    "TenantLedger",
    "TenantUse",
    "TurnDiscardedEvent",
    "TurnResult",
    "TurnRetryEvent",
    "TurnSavedEvent",
    "arun_turn",
    "astream_turn",
    "default_home",
    "iso_time",
    "open_store",
    "parse_limits",
    "run_turn",
    "stream_turn",
]
