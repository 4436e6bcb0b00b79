"""A turn whose process died before saving it is saved as stopped, exactly once, by whoever takes its lease next.

Theory of operation. A turn that runs under its session's lease writes one record into the
lease's row as it starts (:func:`running_record`, the ``running`` column): the message it adds
and the revision it loaded (its *base*). Its own save needs no second write to undo that: the
save moves the session past the base in the save's own transaction, which voids the record,
and the lease's release deletes the row. A holder that dies mid-turn (SIGKILL, the OOM killer,
a lost machine) leaves the record behind, in a row whose lease has lapsed.

Whoever takes that lease next (the restarted worker, another replica, the next turn on the
session, the server's sweep) keeps the record through the take (the upsert does not touch
``running``) and, before the lease is handed over, calls :func:`save_stopped`: one write
transaction that appends the input, marked ``stopped: process_lost``, at revision ``base + 1``
and clears the record. Exactly once, because two guards hold it:

- only the lease's holder saves, and the lease has one holder at a time (the conditional
  upsert on SQLite, the advisory lock on PostgreSQL);
- the append happens only while the session is still at the base, checked under the
  session's write lock, so a turn that did save (dying before its release), another taker
  racing through a lapsed lease, or a session deleted meanwhile all find it moved and write
  nothing but the cleared record.

A taker that dies between the take and this save leaves the record in its own row, which
lapses in turn. A turn a waiter asked to discard (``claim = 'discard'``) is dropped by the
take itself. A turn the process running it ended unsaved, but whose record it could not clear
(the database was away when it released the lease), is only cleared if that same store takes
the lease next: it remembers such turns. Another process cannot tell it from a lost one and
saves it as stopped. A turn whose session another writer saved while it ran without a lease (a
facade's ``X-Session-Id`` save) is not saved: its base has gone.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Container
from typing import Any

import msgspec

from .. import Message
from ..errors import CorruptRecordError, StoreError
from ..host_kit import prefix_digest
from .codec import decode_message

__all__ = ["LOST_REASON", "RunningTurn", "lapsed_sessions", "running_record", "save_left", "save_stopped",
           "stopped_input", "take_each"]

#: the ``stopped`` reason of a turn whose process ended before it saved (a cancelled turn's is ``cancelled``)
LOST_REASON = "process_lost"
_DETAIL = "the server process running this turn ended before it could save it"
_log = logging.getLogger("agent_core.store.lease")


class RunningTurn(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The ``running`` column: what a dead holder's turn would have saved first."""

    base: int  # the session's revision the turn loaded (0: the session did not exist yet)
    message: msgspec.Raw  # the message the turn adds, as Message.to_json wrote it
    request_id: str | None = None


_decoder = msgspec.json.Decoder(RunningTurn)


def running_record(message: Message, base: int, request_id: str | None) -> str:
    """The ``running`` column's text for a turn adding ``message`` to the session at revision ``base``."""
    return msgspec.json.encode(RunningTurn(base, msgspec.Raw(message.to_json()), request_id)).decode("utf-8")


def stopped_input(message: Message) -> Message:
    """The input as a lost turn is saved: marked stopped, as a cancelled turn's reply is, with why."""
    return message.with_metadata(stopped=LOST_REASON, stopped_detail=_DETAIL)


def _parse(text: str, session_id: str) -> tuple[RunningTurn, Message] | None:
    """The record, or None (logged) when it does not decode: nothing can be saved of it, and the session stays usable."""
    try:
        turn = _decoder.decode(text)
        return turn, decode_message(bytes(turn.message), session_id=session_id, revision=turn.base, index=-1)
    except (msgspec.DecodeError, msgspec.ValidationError, CorruptRecordError) as exc:
        _log.warning("session %r: the running turn recorded in its lease is not valid, so it is dropped: %s",
                     session_id, exc)
        return None


def save_stopped(backend: Any, session_id: str, holder: str, text: str, ended: Container[str] = ()) -> int | None:
    """Save the turn recorded as ``text`` as stopped, if the session is still where it left it; clear the record.

    One write transaction, run by ``holder`` (the lease's new holder) before it uses the lease.
    A turn whose request id is in ``ended`` is only cleared: its process lives, ended it
    unsaved, and told its client so (it could not clear the record, the database being away).

    Returns:
        The revision saved, or None when the session moved on or went, or the record does not decode.

    Raises:
        CorruptRecordError: the session's message rows do not decode (nothing was written).
        StoreError: the database failed (nothing was written).
    """
    parsed = _parse(text, session_id)
    if parsed and parsed[0].request_id is not None and parsed[0].request_id in ended:
        parsed = None
    with backend.transaction(write=True) as tx:
        saved = _append(tx, session_id, parsed[0].base, stopped_input(parsed[1])) if parsed else None
        tx.run("UPDATE agent_core_leases SET running = NULL WHERE session_id = ? AND holder = ?", (session_id, holder))
    if saved is not None and parsed:
        _log.warning("session %r: turn %r was lost with its process; its input is saved as stopped at revision %d",
                     session_id, parsed[0].request_id, saved)
    return saved


def _append(tx: Any, sid: str, base: int, message: Message) -> int | None:
    """Append ``message`` at ``base + 1`` while the session is at ``base``; None (nothing written) otherwise."""
    head = tx.rows("SELECT revision, message_count FROM agent_core_sessions WHERE session_id = ?"
                   + tx.for_update, (sid,))
    now, revision = time.time(), base + 1
    if base == 0:  # a writer without a lease may be creating it right now: the insert, not the read, decides
        count, digest = 0, prefix_digest([message], 1)
        if head or not tx.run("INSERT INTO agent_core_sessions (session_id, revision, message_count, digest, metadata, "
                              "native, created_at, updated_at) VALUES (?, 1, 1, ?, '{}', '{}', ?, ?) "
                              "ON CONFLICT (session_id) DO NOTHING", (sid, digest, now, now)):
            return None
    else:
        if not head or int(head[0][0]) != base:
            return None
        count = int(head[0][1])
        rows = tx.rows("SELECT seq, revision, body FROM agent_core_messages WHERE session_id = ? ORDER BY seq", (sid,))
        # the whole conversation is read once, here: the chained digest of the head needs every message
        messages = [decode_message(body, session_id=sid, revision=int(rev), index=int(seq)) for seq, rev, body in rows]
        if len(messages) != count:
            raise CorruptRecordError(f"session {sid!r}: its message rows do not match its head (revision {base})",
                                     session_id=sid, revision=base, what="messages")
        digest = prefix_digest([*messages, message], count + 1)
        tx.run("UPDATE agent_core_sessions SET revision = ?, message_count = ?, digest = ?, updated_at = ? "
               "WHERE session_id = ?", (revision, count + 1, digest, now, sid))
    tx.run("INSERT INTO agent_core_messages (session_id, seq, revision, body) VALUES (?, ?, ?, ?)",
           (sid, count, revision, message.to_json().decode("utf-8")))
    tx.run("INSERT INTO agent_core_revisions (session_id, revision, first_index, added, replaced, created_at) "
           "VALUES (?, ?, ?, 1, 0, ?)", (sid, revision, count, now))
    return revision


def save_left(backend: Any, lease: Any, running: str | None, ended: Container[str] = ()) -> Any:
    """``lease``, just taken, once the turn its dead holder left ``running`` is saved as stopped.

    A save that fails frees the session again with the record kept (the next take tries
    again) and raises what it raised, so the caller's session is as it was.
    """
    if running is not None:
        try:
            lease.recovered = save_stopped(backend, lease.info.session_id, lease.info.holder, running, ended)
        except BaseException:
            lease.abandon()
            raise
    return lease


def lapsed_sessions(backend: Any, limit: int, locked: str) -> list[str]:
    """Up to ``limit`` sessions whose lease lapsed with a turn recorded as running, the oldest first.

    On SQLite a lease lapses when its ``expires_at`` passes; on PostgreSQL when its lock is
    free (``locked``: the lease module's test that a row's lock is held).
    """
    sqlite = backend.dialect == "sqlite"
    lapsed = "expires_at < ?" if sqlite else f"NOT {locked}"
    with backend.transaction(write=False) as tx:
        found = tx.rows(f"SELECT session_id FROM agent_core_leases WHERE running IS NOT NULL AND {lapsed} "
                        "ORDER BY started_at LIMIT ?", (time.time(), limit) if sqlite else (limit,))
    return [str(row[0]) for row in found]


def take_each(leases: Any, session_ids: list[str]) -> int:
    """Take and free at once the lease of each session (each take saves its lost turn); how many were saved.

    A session busy again is left to its holder; one whose turn cannot be saved (a failing
    database, a corrupt row) is logged and left for its next taker.
    """
    saved = 0
    for sid in session_ids:
        try:
            lease = leases.try_lease(sid)
        except StoreError as exc:
            _log.warning("session %r: its lost turn could not be saved as stopped: %s", sid, exc)
            continue
        if lease is not None:
            saved += lease.recovered is not None
            lease.release()
    return saved
