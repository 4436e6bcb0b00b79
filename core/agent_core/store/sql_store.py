"""The session store over SQL: optimistic revisions, rows appended per revision.

Theory of operation. A session's *head* row holds its revision, message
count, the chained digest of its messages (the engine's own digest, see
:mod:`agent_core.values.native_history`), its metadata without the native messages,
and per provider the native row count. Saving at ``expected_revision`` is one
write transaction: lock the head, compare revisions (a mismatch raises
:class:`ConflictError` and writes nothing), then

- if the stored messages are a prefix of the new ones (the digest of the
  first ``message_count`` new messages equals the head's), insert only the
  messages after them; otherwise delete the session's message rows and write
  them all again (an application edited or dropped earlier messages);
- the same for each provider's native history, compared with what this store
  last loaded or saved at that revision (identity makes that a pointer walk);
  without that knowledge the provider's rows are written again;
- update the head and append a row to the revision history.

A normal turn therefore writes the turn's messages, its native messages, the
head and one history row, whatever the length of the conversation. Digests
are memoized on the session's message vector, so checking the prefix costs
only the messages added since the load.

Async methods run the sync ones in a worker thread (``asyncio.to_thread``):
one source for both, and no connection is bound to an event loop.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections import OrderedDict
from typing import Any, Self

from .. import NATIVE_KEY, FrozenList, Session
from ..errors import ConflictError, InvalidArgumentError, SessionNotFoundError

# The engine's own chained digest of a message prefix, public in the plugin kit. A load computes it
# (so the engine's native-history check after a load hashes nothing old) and a save compares it
# with the head's (so it can tell an appended conversation from an edited one).
from ..host_kit import prefix_digest
from .codec import (
    decode_json,
    decode_message,
    decode_session,
    native_head,
    split_metadata,
)
from .lease import PG_LOCKED
from .leases import SessionLeases
from .lost_turns import lapsed_sessions, take_each
from .schema import MIGRATIONS, migrate
from .values import Revision, SessionInfo, Stored

__all__ = ["SqlSessionStore"]

_SELECT_MESSAGES = "SELECT seq, revision, body FROM agent_core_messages WHERE session_id = ? ORDER BY seq"
_SELECT_REVISION = "SELECT revision FROM agent_core_sessions WHERE session_id = ?"
_SEEN_LIMIT = 1024  # (session, revision) pairs whose native lists this store remembers
_Natives = dict[str, tuple[FrozenList, str]]  # provider -> (native messages, generation of its rows)


def _new_generation() -> str:
    return uuid.uuid4().hex[:16]


def _check_session(session: Any) -> Session:
    if not isinstance(session, Session):
        raise InvalidArgumentError(f"session must be a Session, got {type(session).__name__}", argument="session")
    return session


def _check_id(session_id: Any) -> str:
    if not isinstance(session_id, str) or not session_id:
        raise InvalidArgumentError(f"session_id must be a non-empty string, got {session_id!r}", argument="session_id")
    return session_id


def _check_revision(value: Any, name: str, *, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidArgumentError(f"{name} must be an integer >= 0, got {value!r}", argument=name)


class _Save:
    """What one ``put`` writes, worked out before its transaction opens (no database work in here)."""

    __slots__ = ("count", "digest", "expected", "messages", "meta_text", "natives", "now", "revision", "sid")

    def __init__(self, session: Session, expected_revision: int) -> None:
        self.sid = _check_id(session.session_id)
        self.messages = session.messages
        self.count = len(self.messages)
        self.digest = prefix_digest(self.messages, self.count)
        self.meta_text, self.natives = split_metadata(session.metadata)
        self.expected = expected_revision
        self.revision = expected_revision + 1
        self.now = time.time()


class SqlSessionStore:
    """A :class:`~agent_core.store.SessionStore` on SQLite or PostgreSQL (see :func:`open_store`)."""

    def __init__(self, backend: Any, *, url: str, migrations: Any = MIGRATIONS) -> None:
        self._backend = backend
        self.url = url  # for display: a password is never kept here
        #: take, wait for, inspect and claim a session's lease (:class:`~agent_core.store.leases.SessionLeases`)
        self.leases = SessionLeases(backend)
        self._seen: OrderedDict[tuple[str, int], _Natives] = OrderedDict()
        self._seen_lock = threading.Lock()
        with backend.transaction(write=True) as tx:
            migrate(tx, migrations)

    def __repr__(self) -> str:
        return f"<SqlSessionStore {self.url}>"

    # -- what this store last saw, to tell appended native rows from rewritten ones

    def _remember(self, session_id: str, revision: int, natives: _Natives) -> None:
        with self._seen_lock:
            self._seen[(session_id, revision)] = natives
            while len(self._seen) > _SEEN_LIMIT:
                self._seen.popitem(last=False)

    def _recall(self, session_id: str, revision: int) -> _Natives:
        with self._seen_lock:
            return self._seen.get((session_id, revision), {})

    # -- the protocol ----------------------------------------------------------

    def create(self, session: Session) -> int:
        """Store a new session at revision 1; ``ConflictError`` if the id is taken."""
        return self.put(session, expected_revision=0)

    def get(self, session_id: str) -> Stored:
        """The session at its latest revision. Raises SessionNotFoundError, CorruptRecordError."""
        _check_id(session_id)
        with self._backend.transaction(write=False) as tx:
            head = tx.rows(
                "SELECT revision, message_count, metadata, native FROM agent_core_sessions WHERE session_id = ?",
                (session_id,),
            )
            if not head:
                raise SessionNotFoundError(session_id)
            rows = tx.rows(_SELECT_MESSAGES, (session_id,))
            native_rows = tx.rows(
                "SELECT provider, seq, revision, body FROM agent_core_native WHERE session_id = ? "
                "ORDER BY provider, seq",
                (session_id,),
            )
        session, revision, generations = decode_session(session_id, head[0], rows, native_rows)
        # Seed the digest memo, so the engine's native-history check and the
        # next save cost only the messages added after this load.
        prefix_digest(session.messages, len(session.messages))
        box = session.metadata.get(NATIVE_KEY) if generations else None
        self._remember(session_id, revision, {p: (box[p]["messages"], g) for p, g in generations.items()} if box else {})
        return Stored(session, revision)

    def put(self, session: Session, *, expected_revision: int) -> int:
        """Save ``session`` if the stored one is still at ``expected_revision`` (0: must not exist yet).

        One write transaction (see the module docstring): the head is created,
        or locked and checked and moved on; then the messages the stored ones
        do not cover yet and one revision-history row are appended.

        Returns:
            The new revision (``expected_revision + 1``).

        Raises:
            ConflictError: the stored revision is another one (``.current``); nothing was written.
            SessionNotFoundError: ``expected_revision`` > 0 and no such session.
            InvalidArgumentError: not a Session, or a revision that is not an integer >= 0.
        """
        _check_session(session)
        _check_revision(expected_revision, "expected_revision")
        save = _Save(session, expected_revision)
        seen = self._recall(save.sid, expected_revision)
        with self._backend.transaction(write=True) as tx:
            if expected_revision == 0:
                first, replaced, generations = self._create_head(tx, save)
            else:
                first, replaced, generations = self._advance_head(tx, save, seen)
            tx.many(
                "INSERT INTO agent_core_messages (session_id, seq, revision, body) VALUES (?, ?, ?, ?)",
                ((save.sid, i, save.revision, save.messages[i].to_json().decode("utf-8"))
                 for i in range(first, save.count)),
            )
            tx.run(
                "INSERT INTO agent_core_revisions (session_id, revision, first_index, added, replaced, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (save.sid, save.revision, first, save.count - first, int(replaced), save.now),
            )
        self._remember(save.sid, save.revision, {p: (msgs, generations[p]) for p, (msgs, _) in save.natives.items()})
        return save.revision

    def _create_head(self, tx: Any, save: _Save) -> tuple[int, bool, dict[str, str]]:
        """Insert the head at revision 1 (ConflictError if the id is taken) and every native row.

        Returns ``(0, False, generations)``: the index of the first message row to
        write, whether stored rows were replaced, each provider's generation.
        """
        generations = {p: _new_generation() for p in save.natives}
        inserted = tx.run(
            "INSERT INTO agent_core_sessions (session_id, revision, message_count, digest, metadata, native, "
            "created_at, updated_at) VALUES (?, 1, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_id) DO NOTHING",
            (save.sid, save.count, save.digest, save.meta_text, native_head(save.natives, generations), save.now,
             save.now),
        )
        if not inserted:
            current = tx.rows(_SELECT_REVISION, (save.sid,))
            raise ConflictError(save.sid, expected=0, current=int(current[0][0]) if current else None)
        self._write_native(tx, save.sid, save.revision, save.natives, {}, {}, generations)
        return 0, False, generations

    def _advance_head(self, tx: Any, save: _Save, seen: _Natives) -> tuple[int, bool, dict[str, str]]:
        """Lock the head, check its revision, write the native rows, move the head to the new revision.

        When the stored messages are not a prefix of the new ones (their digests
        differ) the message rows are deleted, to be written again from 0.
        Returns ``(first, replaced, generations)``: the index of the first message
        row to write, whether the rows were deleted, each provider's generation.
        """
        head = tx.rows(
            "SELECT revision, message_count, digest, native FROM agent_core_sessions WHERE session_id = ?"
            + tx.for_update,
            (save.sid,),
        )
        if not head:
            raise SessionNotFoundError(save.sid)
        current, old_count, old_digest, old_native_text = head[0]
        if int(current) != save.expected:
            raise ConflictError(save.sid, expected=save.expected, current=int(current))
        old_native = decode_json(old_native_text, session_id=save.sid, revision=save.expected, what="head")
        replaced = not (save.count >= old_count and prefix_digest(save.messages, old_count) == old_digest)
        if replaced:
            tx.run("DELETE FROM agent_core_messages WHERE session_id = ?", (save.sid,))
            old_count = 0
        generations = self._write_native(tx, save.sid, save.revision, save.natives, old_native, seen)
        tx.run(
            "UPDATE agent_core_sessions SET revision = ?, message_count = ?, digest = ?, metadata = ?, "
            "native = ?, updated_at = ? WHERE session_id = ?",
            (save.revision, save.count, save.digest, save.meta_text, native_head(save.natives, generations), save.now,
             save.sid),
        )
        return old_count, replaced, generations

    @staticmethod
    def _write_native(
        tx: Any, sid: str, revision: int, natives: Any, old: dict, seen: _Natives, fresh: dict[str, str] | None = None
    ) -> dict[str, str]:
        """Write each provider's new native rows; return the generation of each provider's rows.

        Rows are appended only when this store knows the stored rows (it loaded or saved them, and
        their generation is still the one in the head) and the new list starts with them;
        otherwise the provider's rows are written again under a new generation. The generation
        check catches rows another writer rewrote, even when a session was deleted and created
        again up to the same revision. ``fresh`` names the generations to use for rewritten rows.
        """
        from .codec import encode_json

        for provider in old:
            if provider not in natives:
                tx.run("DELETE FROM agent_core_native WHERE session_id = ? AND provider = ?", (sid, provider))
        generations = {}
        for provider, (msgs, _rest) in natives.items():
            entry = old.get(provider)
            start = entry.get("count", 0) if isinstance(entry, dict) else 0
            known, known_generation = seen.get(provider, (None, None))
            # One pointer walk in C when the engine kept the loaded items (list equality checks identity
            # first); list.__getitem__ skips FrozenList's second copy of the slice.
            extends = (
                isinstance(entry, dict)
                and known is not None
                and known_generation == entry.get("gen")
                and len(known) == start
                and len(msgs) >= start
                and list.__getitem__(msgs, slice(0, start)) == known
            )
            if extends:
                generations[provider] = str(entry["gen"])  # type: ignore[index]
            else:
                if entry is not None:
                    tx.run("DELETE FROM agent_core_native WHERE session_id = ? AND provider = ?", (sid, provider))
                start = 0
                generations[provider] = fresh[provider] if fresh else _new_generation()
            tx.many(
                "INSERT INTO agent_core_native (session_id, provider, seq, revision, body) VALUES (?, ?, ?, ?, ?)",
                ((sid, provider, i, revision, encode_json(msgs[i])) for i in range(start, len(msgs))),
            )
        return generations

    def list(self, *, limit: int = 100, after: str | None = None, prefix: str | None = None) -> list[SessionInfo]:
        """Up to ``limit`` sessions, ordered by id, starting after the id ``after`` (keyset paging).

        With ``prefix``, only the sessions whose id starts with it (a server keeps each tenant's
        sessions under ``<tenant>/``); the match is exact, whatever the database's collation.
        """
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise InvalidArgumentError(f"limit must be an integer >= 1, got {limit!r}", argument="limit")
        if after is not None and not isinstance(after, str):
            raise InvalidArgumentError(f"after must be a session id or None, got {after!r}", argument="after")
        if prefix is not None and not isinstance(prefix, str):
            raise InvalidArgumentError(f"prefix must be a string or None, got {prefix!r}", argument="prefix")
        where, params = "session_id > ?", ["" if after is None else after]
        if prefix:
            where += " AND substr(session_id, 1, ?) = ?"
            params += [len(prefix), prefix]
        with self._backend.transaction(write=False) as tx:
            rows = tx.rows(
                "SELECT session_id, revision, message_count, created_at, updated_at FROM agent_core_sessions "
                f"WHERE {where} ORDER BY session_id LIMIT ?",
                (*params, limit),
            )
        return [SessionInfo(r[0], int(r[1]), int(r[2]), float(r[3]), float(r[4])) for r in rows]

    def delete(self, session_id: str, *, expected_revision: int | None = None) -> None:
        """Delete a session and its history; with ``expected_revision``, only if still at it."""
        _check_id(session_id)
        _check_revision(expected_revision, "expected_revision", allow_none=True)
        with self._backend.transaction(write=True) as tx:
            head = tx.rows(_SELECT_REVISION + tx.for_update, (session_id,))
            if not head:
                raise SessionNotFoundError(session_id)
            if expected_revision is not None and int(head[0][0]) != expected_revision:
                raise ConflictError(session_id, expected=expected_revision, current=int(head[0][0]))
            for table in ("agent_core_messages", "agent_core_native", "agent_core_revisions", "agent_core_sessions"):
                tx.run(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))

    def history(self, session_id: str) -> list[Revision]:
        """Every saved revision of the session, oldest first, with the messages it added."""
        _check_id(session_id)
        with self._backend.transaction(write=False) as tx:
            head = tx.rows(_SELECT_REVISION, (session_id,))
            if not head:
                raise SessionNotFoundError(session_id)
            revs = tx.rows(
                "SELECT revision, created_at, first_index, added, replaced FROM agent_core_revisions "
                "WHERE session_id = ? ORDER BY revision",
                (session_id,),
            )
            rows = tx.rows(_SELECT_MESSAGES, (session_id,))
        by_revision: dict[int, list[Any]] = {}
        for seq, rev, body in rows:
            msg = decode_message(body, session_id=session_id, revision=int(rev), index=int(seq))
            by_revision.setdefault(int(rev), []).append(msg)
        return [
            Revision(int(r), float(at), int(first), int(added), bool(rep), by_revision.get(int(r), []))
            for r, at, first, added, rep in revs
        ]

    def save_lost_turns(self, *, limit: int = 100) -> int:
        """Save as stopped up to ``limit`` turns lost with their process; return how many were saved.

        For the sessions nobody touches again: a session's next turn saves its lost one anyway
        (:mod:`~agent_core.store.lost_turns`). One small read of the leases table, and a take per turn found.
        """
        return take_each(self.leases, lapsed_sessions(self._backend, limit, PG_LOCKED))

    def close(self) -> None:
        """Close the store's connections; later calls raise StoreError."""
        self._backend.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- async twins: the sync methods in a worker thread --------------------------

    async def acreate(self, session: Session) -> int:
        return await asyncio.to_thread(self.create, session)

    async def aget(self, session_id: str) -> Stored:
        return await asyncio.to_thread(self.get, session_id)

    async def aput(self, session: Session, *, expected_revision: int) -> int:
        return await asyncio.to_thread(lambda: self.put(session, expected_revision=expected_revision))

    async def alist(self, *, limit: int = 100, after: str | None = None,
                    prefix: str | None = None) -> list[SessionInfo]:
        return await asyncio.to_thread(lambda: self.list(limit=limit, after=after, prefix=prefix))

    async def adelete(self, session_id: str, *, expected_revision: int | None = None) -> None:
        await asyncio.to_thread(lambda: self.delete(session_id, expected_revision=expected_revision))

    async def ahistory(self, session_id: str) -> list[Revision]:
        return await asyncio.to_thread(self.history, session_id)

    async def asave_lost_turns(self, *, limit: int = 100) -> int:
        return await asyncio.to_thread(lambda: self.save_lost_turns(limit=limit))

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)
