"""A turn whose process died before saving it: saved as stopped by the lease's next holder, exactly once.

Most tests leave in the leases table what a dead holder leaves (its row, lapsed: expired on
SQLite, its lock gone on PostgreSQL, with the turn it was running), which is all the next
taker sees of it; one test kills a real holder process in the middle of a streamed turn.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from agent_core import AgentCore, Message, Session
from agent_core.errors import CorruptRecordError
from agent_core.store import SqlSessionStore, open_store, stream_turn
from agent_core.store.lost_turns import LOST_REASON, running_record
from agent_core.store.schema import MIGRATIONS
from agent_core_providers.echo import EchoProvider

from .conftest import ECHO

HOLDER = Path(__file__).with_name("_lost_holder.py")


def _leave_running(store: SqlSessionStore, sid: str, base: int, *, claim: str | None = None,
                   record: str | None = None) -> None:
    """The row a holder that died mid-turn leaves: lapsed, with the turn it ran on ``sid`` from revision ``base``."""
    record = record or running_record(Message("user", f"question {sid}"), base, f"req-{sid}")
    with store._backend.transaction(write=True) as tx:
        tx.run("INSERT INTO agent_core_leases (session_id, holder, request_id, started_at, expires_at, claim, running)"
               " VALUES (?, 'dead-holder', ?, ?, 0, ?, ?)", (sid, f"req-{sid}", time.time() - 5, claim, record))


def _running(store: SqlSessionStore) -> dict[str, Any]:
    with store._backend.transaction(write=False) as tx:
        return dict(tx.rows("SELECT session_id, running FROM agent_core_leases"))


def _earlier(store: SqlSessionStore, sid: str) -> None:
    store.create(Session(sid, [Message("user", "earlier"), Message("assistant", "answered")]))


def _stopped(message: Message, sid: str) -> bool:
    return (message.role, message.content, message.metadata.get("stopped")) == ("user", f"question {sid}", LOST_REASON)


def _take(store: SqlSessionStore, sid: str) -> int | None:
    lease = store.leases.wait_lease(sid, wait_s=30, poll_s=0.02)
    assert lease is not None
    lease.release()
    return lease.recovered


def test_the_next_taker_saves_a_lost_turn_as_stopped_then_holds_the_lease(store: SqlSessionStore) -> None:
    _earlier(store, "old")
    _leave_running(store, "old", 1)
    _leave_running(store, "new", 0)
    lease = store.leases.try_lease("old", request_id="next")
    assert lease is not None
    try:
        assert lease.recovered == 2
        assert store.leases.lease_holder("old").request_id == "next"  # type: ignore[union-attr]
        stored = store.get("old")
        assert [m.content for m in stored.session.messages] == ["earlier", "answered", "question old"]
        last = stored.session.messages[-1]
        assert _stopped(last, "old") and "ended before it could save" in last.metadata["stopped_detail"]
        assert [(r.revision, r.first_index, r.added) for r in store.history("old")] == [(1, 0, 2), (2, 2, 1)]
        assert _running(store)["old"] is None  # the new holder has no turn running yet
    finally:
        lease.release()
    assert _take(store, "new") == 1  # the session did not exist when the lost turn began: it is created
    assert [m.content for m in store.get("new").session.messages] == ["question new"]


def test_takers_racing_for_a_lapsed_lease_save_its_turn_once(store: SqlSessionStore,
                                                             extra_store: Callable[[], SqlSessionStore]) -> None:
    sids = [f"s{i}" for i in range(6)]
    for i, sid in enumerate(sids):
        if i % 2:
            _earlier(store, sid)
        _leave_running(store, sid, i % 2)
    stores = [extra_store() for _ in range(3)]
    start = threading.Barrier(len(stores) + 1)
    saved: list[Any] = []

    def take_all(other: SqlSessionStore) -> None:
        start.wait()
        for sid in sids:
            lease = other.leases.try_lease(sid)
            if lease is not None:
                saved.append(lease.recovered)
                lease.release()

    def sweep(other: SqlSessionStore) -> None:
        start.wait()
        saved.extend([True] * other.save_lost_turns())

    threads = [threading.Thread(target=take_all, args=(s,)) for s in stores] + [
        threading.Thread(target=sweep, args=(store,))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len([s for s in saved if s is not None]) == len(sids)
    for i, sid in enumerate(sids):
        stored = store.get(sid)
        assert stored.revision == 1 + i % 2
        assert [_stopped(m, sid) for m in stored.session.messages] == [False] * (2 * (i % 2)) + [True]
    assert not any(_running(store).values())


def test_a_turn_saved_before_its_holder_died_is_not_saved_again(store: SqlSessionStore) -> None:
    _earlier(store, "s1")
    stored = store.get("s1")
    store.put(stored.session.with_message(Message("user", "question s1")), expected_revision=1)  # the turn's own save
    _leave_running(store, "s1", 1)  # ... and the holder died before its release
    assert _take(store, "s1") is None
    assert store.get("s1").revision == 2 and len(store.history("s1")) == 2
    assert _running(store).get("s1") is None


def test_a_turn_a_waiter_discarded_is_not_saved(store: SqlSessionStore) -> None:
    _leave_running(store, "s1", 0, claim="discard")
    assert _take(store, "s1") is None
    assert store.list() == []


def test_a_normal_turn_records_itself_and_leaves_nothing_behind(store: SqlSessionStore) -> None:
    seen: list[Any] = []

    class Peeking(EchoProvider):
        def stream_api(self, native_messages: Any, state: Any, *, request_id: str | None = None) -> Any:
            seen.append(_running(store).get("s1"))
            yield from super().stream_api(native_messages, state, request_id=request_id)

    _earlier(store, "s1")
    with store.leases.lease("s1", request_id="r1") as lease:
        events = list(stream_turn(AgentCore(providers=[Peeking]), store, "s1", "question s1", ECHO, lease=lease,
                                  request_id="r1"))
    assert events[-1].type == "saved"
    assert seen[0] is not None and '"base":1' in seen[0] and '"request_id":"r1"' in seen[0]
    assert _running(store) == {}  # the release removed the row and what it recorded
    assert store.save_lost_turns() == 0
    assert not any(m.metadata.get("stopped") for m in store.get("s1").session.messages)


def test_recording_a_turn_costs_one_write_at_its_start(tmp_path: Path) -> None:
    """On SQLite every write goes through the traced backend (PostgreSQL's lease writes use the lock's connection)."""
    with open_store(f"sqlite:///{tmp_path}/cost.db") as store:
        _earlier(store, "s1")
        writes: list[str] = []
        with store.leases.lease("s1") as lease:
            store._backend.trace = lambda sql, rows, size: writes.append(sql)
            events = list(stream_turn(AgentCore(providers=[EchoProvider]), store, "s1", "hi", ECHO, lease=lease))
            store._backend.trace = None
        assert events[-1].type == "saved"
        assert [sql for sql in writes if "running" in sql] == [
            "UPDATE agent_core_leases SET running = ? WHERE session_id = ? AND holder = ?"]


def test_a_lost_turn_that_cannot_be_saved_leaves_the_session_as_it_was(store: SqlSessionStore) -> None:
    _earlier(store, "s1")
    with store._backend.transaction(write=True) as tx:
        tx.run("UPDATE agent_core_messages SET body = 'not json' WHERE session_id = 's1' AND seq = 1")
    _leave_running(store, "s1", 1)
    with pytest.raises(CorruptRecordError, match="s1"):
        store.leases.try_lease("s1")
    with store._backend.transaction(write=False) as tx:
        assert tx.rows("SELECT revision, message_count FROM agent_core_sessions") == [(1, 2)]
        assert tx.rows("SELECT seq, body FROM agent_core_messages WHERE seq = 1") == [(1, "not json")]
    assert store.leases.lease_holder("s1") is None and _running(store)["s1"] is not None  # free, the turn still to save
    with store._backend.transaction(write=True) as tx:
        tx.run("UPDATE agent_core_messages SET body = ? WHERE session_id = 's1' AND seq = 1",
               (Message("assistant", "answered").to_json().decode(),))
    assert _take(store, "s1") == 2


def test_a_record_that_does_not_decode_is_dropped_and_the_session_stays_usable(store: SqlSessionStore) -> None:
    _leave_running(store, "s1", 0, record='{"base": "one"}')
    assert _take(store, "s1") is None
    assert store.list() == [] and _running(store) == {}


def test_the_sweep_saves_lapsed_turns_and_leaves_running_ones(store: SqlSessionStore,
                                                              extra_store: Callable[[], SqlSessionStore]) -> None:
    _leave_running(store, "lost", 0)
    live = extra_store().leases.try_lease("live")
    assert live is not None
    try:
        live.record_turn(Message("user", "question live"), 0)
        assert store.save_lost_turns() == 1
        assert store.save_lost_turns() == 0
        assert _stopped(store.get("lost").session.messages[0], "lost")
        assert store.leases.lease_holder("live") is not None and _running(store)["live"] is not None
        assert [s.session_id for s in store.list()] == ["lost"]
    finally:
        live.release()


def test_an_older_database_gains_the_running_record_and_keeps_its_leases(store_url: str) -> None:
    from agent_core.store.backends import PostgresBackend, SqliteBackend

    backend = (SqliteBackend(store_url[len("sqlite:///"):]) if store_url.startswith("sqlite")
               else PostgresBackend(store_url, display="test"))
    before = SqlSessionStore(backend, url=store_url, migrations=MIGRATIONS[:2])  # the schema before this record
    try:
        with backend.transaction(write=True) as tx:
            tx.run("INSERT INTO agent_core_leases (session_id, holder, request_id, started_at, expires_at) "
                   "VALUES ('s1', 'h', 'r', 0, 0)")
    finally:
        before.close()
    with open_store(store_url) as upgraded:
        assert _running(upgraded) == {"s1": None}
        assert _take(upgraded, "s1") is None


def test_a_holder_killed_mid_turn_has_its_turn_saved_by_the_next_taker(store: SqlSessionStore, store_url: str) -> None:
    _earlier(store, "old")
    proc = subprocess.Popen([sys.executable, str(HOLDER), store_url, "0.5", "old:stream", "new:stream", "done:saved"],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        assert store.leases.try_lease("old") is None  # held while its process lives
    finally:
        proc.kill()
        proc.wait()
    assert [_take(store, sid) for sid in ("old", "new", "done")] == [2, 1, None]
    assert [m.content for m in store.get("old").session.messages] == ["earlier", "answered", "question old"]
    assert _stopped(store.get("new").session.messages[0], "new")
    done = store.get("done")
    assert done.revision == 1 and [m.role for m in done.session.messages] == ["user", "assistant"]
    assert not any(m.metadata.get("stopped") for m in done.session.messages)


def test_a_turn_this_store_ended_unsaved_is_not_saved_as_lost_by_it_but_is_by_another(tmp_path: Path) -> None:
    """The database was away when the turn ended (its client was told nothing was saved), so its row stayed.

    The store that ran it knows the turn ended and only clears the record; another store (another
    process) cannot tell it from a lost turn and saves it as stopped.
    """
    import sqlite3

    path = tmp_path / "s.db"
    url = f"sqlite:///{path}?busy_timeout=0.1&lease_ttl=0.5"
    for sid, taker_is_other in (("mine", False), ("theirs", True)):
        store = open_store(url)
        _earlier(store, sid)
        lease = store.leases.try_lease(sid, request_id=f"req-{sid}")
        assert lease is not None
        lease.record_turn(Message("user", f"question {sid}"), 1)
        blocker = sqlite3.connect(path, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")  # another writer holds the file: the release's delete fails
        try:
            lease.release()
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        assert lease.unreleased and _running(store)[sid] is not None
        time.sleep(0.6)  # the row lapses
        taker = open_store(url) if taker_is_other else store
        recovered = _take(taker, sid)
        messages = store.get(sid).session.messages
        if taker_is_other:
            assert recovered == 2 and _stopped(messages[-1], sid)
        else:
            assert recovered is None and len(messages) == 2 and _running(store) == {}
        store.close()
        if taker is not store:
            taker.close()
