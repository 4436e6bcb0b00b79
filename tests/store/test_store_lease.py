"""The session lease on both backends: one holder at a time, claims, a dead holder's lease freed, turns in line."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from agent_core import AgentCore
from agent_core.store import SqlSessionStore, astream_turn, open_store, stream_turn
from agent_core.store.lease import TICK_S, LeaseAttempt, SessionBusyError
from agent_core_providers.echo import EchoProvider

from .conftest import ECHO

_HOLD = """
import sys, time
from agent_core.store import open_store
store = open_store(sys.argv[1])
store.leases.lease_ttl_s = float(sys.argv[3])
lease = store.leases.try_lease(sys.argv[2], request_id="doomed")
print("held" if lease else "busy", flush=True)
time.sleep(600)
"""


def test_one_holder_at_a_time_and_its_info(store: SqlSessionStore, extra_store: Callable[[], Any]) -> None:
    other = extra_store()
    first = store.leases.try_lease("s1", request_id="r1")
    assert first is not None
    try:
        assert other.leases.try_lease("s1") is None
        free = other.leases.try_lease("s2")  # another session is free
        assert free is not None
        free.release()
        info = other.leases.lease_holder("s1")
        assert info is not None and (info.holder, info.request_id) == (first.info.holder, "r1")
        assert abs(info.started_at - time.time()) < 60 and info.claim is None
    finally:
        first.release()
    first.release()  # idempotent
    assert other.leases.lease_holder("s1") is None
    second = other.leases.try_lease("s1")
    assert second is not None
    second.release()


def test_waiting_gives_up_at_its_limit(store: SqlSessionStore, extra_store: Callable[[], Any]) -> None:
    other = extra_store()
    with store.leases.lease("s1"):
        started = time.monotonic()
        assert other.leases.wait_lease("s1", wait_s=0.3) is None
        assert 0.3 <= time.monotonic() - started < 5
        with pytest.raises(SessionBusyError, match="busy"), other.leases.lease("s1", wait_s=0.1):
            pass
    with other.leases.lease("s1", wait_s=0.1) as lease:  # free again
        assert lease.info.session_id == "s1"


def test_a_waiter_gets_the_lease_when_it_is_released(store: SqlSessionStore, extra_store: Callable[[], Any]) -> None:
    other = extra_store()
    held = store.leases.try_lease("s1")
    assert held is not None
    threading.Timer(0.3, held.release).start()
    lease = other.leases.wait_lease("s1", wait_s=20)
    assert lease is not None
    lease.release()


def test_claims_reach_the_holder_and_discard_beats_the_save(store: SqlSessionStore,
                                                            extra_store: Callable[[], Any]) -> None:
    other = extra_store()
    called = threading.Event()
    lease = store.leases.try_lease("s1", request_id="r1", on_claim=lambda: called.set() or True)
    assert lease is not None
    try:
        assert other.leases.claim_lease("s1", lease.info.holder, "interrupt")
        assert not other.leases.claim_lease("s1", lease.info.holder, "interrupt")  # asked already
        assert called.wait(TICK_S * 20)  # the holder's watcher saw it
        assert other.leases.claim_lease("s1", lease.info.holder, "discard")  # an interrupt may become a discard
        assert lease.claim_save() is False
    finally:
        lease.release()
    lease = store.leases.try_lease("s1")
    assert lease is not None
    try:
        assert lease.claim_save() is True
        assert not other.leases.claim_lease("s1", lease.info.holder, "discard")  # too late: it is saving
        assert lease.claim_save() is True  # a second save (after a conflict) is still allowed
        assert not other.leases.claim_lease("s1", "someone-else", "discard")
    finally:
        lease.release()


def test_a_rolled_back_streamed_turn_saves_nothing(store: SqlSessionStore, core: AgentCore) -> None:
    lease = store.leases.try_lease("s1")
    assert lease is not None
    try:
        assert store.leases.claim_lease("s1", lease.info.holder, "discard")
        events = list(stream_turn(core, store, "s1", "hello", ECHO, lease=lease))
    finally:
        lease.release()
    assert [e.type for e in events][-2:] == ["done", "discarded"]
    assert store.leases.lease_holder("s1") is None
    with pytest.raises(Exception, match="s1"):
        store.get("s1")


def _spawn_holder(url: str, ttl: float) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen([sys.executable, "-c", _HOLD, url, "s1", str(ttl)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


@pytest.mark.slow
def test_a_killed_holder_frees_the_session(store: SqlSessionStore, store_url: str) -> None:
    """SQLite: after the lease's expiry (the holder renews no more); PostgreSQL: at once (its connection drops)."""
    ttl = 2.0  # renewed every third of it: a renewal may come over a second late before the test sees a lost lease
    for proc in _spawn_holder(store_url, ttl):
        time.sleep(ttl + 0.5)  # a live holder keeps renewing past its TTL
        assert store.leases.try_lease("s1") is None
        info = store.leases.lease_holder("s1")
        assert info is not None and info.request_id == "doomed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        killed = time.monotonic()
        if not store_url.startswith("sqlite"):
            time.sleep(0.2)  # the server notices the dropped connection
            assert store.leases.lease_holder("s1") is None  # its row is still there, but the lock is not
        lease = store.leases.wait_lease("s1", wait_s=30, poll_s=0.02)
        freed = time.monotonic() - killed
        assert lease is not None
        lease.release()
        if store_url.startswith("sqlite"):
            assert freed <= ttl + 1.0
        else:
            assert freed < 1.0


def test_turns_under_the_lease_never_conflict(store_url: str) -> None:
    """Four handlers (store objects), six turns each, on one session: every turn saved at its first try."""
    calls: list[int] = []

    class Counting(EchoProvider):
        def stream_api(self, native_messages: Any, state: Any, *, request_id: str | None = None) -> Iterator[Any]:
            calls.append(1)
            time.sleep(0.01)  # long enough that the handlers overlap
            yield from super().stream_api(native_messages, state, request_id=request_id)

    core = AgentCore(providers=[Counting])
    attempts: list[int] = []

    def handler(i: int) -> None:
        with open_store(store_url) as mine:
            for j in range(6):
                with mine.leases.lease("s1", wait_s=60) as lease:
                    events = list(stream_turn(core, mine, "s1", f"h{i}-{j}", ECHO, lease=lease))
                attempts.append(events[-1].attempts)

    threads = [threading.Thread(target=handler, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert attempts == [1] * 24 and len(calls) == 24
    with open_store(store_url) as check:
        assert check.get("s1").revision == 24


def test_the_async_twins(store: SqlSessionStore, core: AgentCore) -> None:
    async def main() -> list[str]:
        async with store.leases.alease("s1", wait_s=1) as lease:
            assert await store.leases.atry_lease("s1") is None
            assert (await store.leases.alease_holder("s1")).holder == lease.info.holder  # type: ignore[union-attr]
            waited = await store.leases.await_lease("s1", wait_s=0.2)
            assert waited is None
            stop = asyncio.Event()
            stop.set()
            assert await store.leases.await_lease("s1", wait_s=60, stop=stop) is None  # gives up at once
            return [e.type async for e in astream_turn(core, store, "s1", "hi", ECHO, lease=lease)]

    assert asyncio.run(main())[-1] == "saved"
    assert store.leases.lease_holder("s1") is None


def test_a_cancelled_async_waiter_leaves_the_line_and_the_next_one_wins(store: SqlSessionStore) -> None:
    """Cancelling the task of a waiter closes its wait: it leaves the line and frees its try's connection."""
    held = store.leases.try_lease("s1")
    assert held is not None

    async def main() -> tuple[int, int, bool]:
        first = asyncio.create_task(store.leases.await_lease("s1", wait_s=30, poll_s=5))
        second = asyncio.create_task(store.leases.await_lease("s1", wait_s=30, poll_s=0.05))
        while store.leases.lease_waiters("s1") < 2:
            await asyncio.sleep(0.01)
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        after_cancel = store.leases.lease_waiters("s1")
        await asyncio.to_thread(held.release)
        won = await asyncio.wait_for(second, 10)
        assert won is not None
        await won.arelease()
        return after_cancel, store.leases.lease_waiters("s1"), won.info.session_id == "s1"

    assert asyncio.run(main()) == (1, 0, True)


@pytest.mark.parametrize("call", ["await_lease", "atry_lease"])
def test_a_take_under_way_when_its_task_is_cancelled_keeps_no_lease(store: SqlSessionStore, call: str,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A thread cannot be stopped: the take it runs may win after the cancel, and that lease must not be left held."""
    real, started = LeaseAttempt.take, threading.Event()

    def slow_take(self: LeaseAttempt) -> Any:
        started.set()
        time.sleep(0.3)  # the database round trip, made long enough for the cancel to land during it
        return real(self)

    monkeypatch.setattr(LeaseAttempt, "take", slow_take)

    async def main() -> None:
        waiting = (store.leases.await_lease("s1", wait_s=5) if call == "await_lease"
                   else store.leases.atry_lease("s1"))
        task = asyncio.ensure_future(waiting)
        await asyncio.to_thread(started.wait, 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    monkeypatch.undo()
    assert store.leases.lease_holder("s1") is None
    again = store.leases.try_lease("s1")
    assert again is not None
    again.release()


def test_the_sync_and_async_waits_run_one_flow(store: SqlSessionStore) -> None:
    """Both waits call ``between`` after each lost try and give up at the same limit with None."""
    held = store.leases.try_lease("s1")
    assert held is not None
    sync_calls: list[float] = []
    async_calls: list[float] = []

    async def note() -> None:
        async_calls.append(time.monotonic())

    assert store.leases.wait_lease("s1", wait_s=0.3, poll_s=0.05, between=lambda: sync_calls.append(1.0)) is None
    assert asyncio.run(store.leases.await_lease("s1", wait_s=0.3, poll_s=0.05, between=note)) is None
    assert len(sync_calls) >= 3 and len(async_calls) >= 3
    assert store.leases.lease_waiters("s1") == 0
    held.release()
    won = store.leases.wait_lease("s1", wait_s=1, between=lambda: sync_calls.append(2.0))
    assert won is not None and 2.0 not in sync_calls  # won at the first try: nothing in between
    won.release()


def test_held_leases_share_one_watcher_thread(store: SqlSessionStore) -> None:
    """A thread (and on SQLite a connection) per turn would pile up on a busy server."""
    before = threading.active_count()
    for i in range(30):
        lease = store.leases.try_lease(f"s{i}")
        assert lease is not None
        lease.release()
    assert threading.active_count() <= before + 1
    if store_backend := getattr(store, "_backend", None):
        assert len(getattr(store_backend, "_conns", [])) <= 3


@pytest.mark.parametrize("store_url", ["postgresql"], indirect=True)  # SQLite leases use no connection of their own
def test_a_lock_connection_that_died_while_idle_is_replaced(store: SqlSessionStore, store_url: str) -> None:
    """PostgreSQL keeps freed lock connections for the next lease; one the server dropped meanwhile is not reused.

    Both leases are held at once, so the store opens two lock connections of its own; only
    those two are killed (the server is shared by the whole session, and other tests' stores
    may keep idle lock connections on it too).
    """
    import psycopg

    def lock_pids(admin: Any) -> set[int]:
        rows = admin.execute("SELECT pid FROM pg_stat_activity WHERE pid <> pg_backend_pid() "
                             "AND query LIKE 'SELECT pg_advisory_unlock_all()%'").fetchall()
        return {pid for (pid,) in rows}

    with psycopg.connect(store_url, autocommit=True) as admin:
        before = lock_pids(admin)
        leases = [store.leases.try_lease(sid) for sid in ("s1", "s2")]
        assert None not in leases
        for lease in leases:
            lease.release()
        ours = lock_pids(admin) - before
        assert len(ours) == 2
        for pid in ours:
            assert admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone() == (True,)
        deadline = time.monotonic() + 10
        while admin.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s)", (list(ours),)).fetchone()[0]:
            assert time.monotonic() < deadline, "the killed lock connections did not go away"
            time.sleep(0.02)
    lease = store.leases.try_lease("s1")
    assert lease is not None and store.leases.lease_holder("s1") is not None
    lease.release()


def test_waiters_in_one_store_win_in_the_order_they_came(store: SqlSessionStore) -> None:
    """Only the first in line polls; try_lease never passes a waiter; front jumps the line."""
    held = store.leases.try_lease("s1")
    assert held is not None
    order: list[str] = []

    def waiter(name: str, front: bool = False) -> None:
        # A long poll: after its first try a waiter sleeps until a release or a change at the head
        # of the line wakes it. With a short one, w1 (first in line until "first" came) kept trying,
        # and a try already under way when "first" joined could win the release: once in a clean-clone
        # CI run on a loaded machine. Front jumps the line of those waiting, not a try in flight.
        lease = store.leases.wait_lease("s1", wait_s=30, front=front, poll_s=5)
        assert lease is not None
        order.append(name)
        time.sleep(0.05)
        lease.release()

    threads = []
    for name in ("w1", "w2", "w3"):
        threads.append(threading.Thread(target=waiter, args=(name,)))
        threads[-1].start()
        while store.leases.lease_waiters("s1") < len(threads):
            time.sleep(0.01)
    threads.append(threading.Thread(target=waiter, args=("first", True)))
    threads[-1].start()
    while store.leases.lease_waiters("s1") < 4:
        time.sleep(0.01)
    time.sleep(0.2)  # the waiters' first tries (each one database round trip) are over
    held.release()
    assert store.leases.try_lease("s1") is None  # free in the database, but others wait in line
    for t in threads:
        t.join()
    assert order == ["first", "w1", "w2", "w3"] and store.leases.lease_waiters("s1") == 0


@pytest.mark.parametrize("store_url", ["postgresql"], indirect=True)  # SQLite leases use no connection of their own
def test_lock_connections_are_capped_and_a_turn_past_the_cap_waits(store: SqlSessionStore) -> None:
    """Past max_lease_connections a free session answers "not now" (the waiter polls), never a refused connection."""
    store.leases.max_lease_connections = 2
    first, second = store.leases.try_lease("c1"), store.leases.try_lease("c2")
    assert first is not None and second is not None
    assert store.leases.try_lease("c3") is None and store.leases.lease_holder("c3") is None  # free, but no connection to lock with
    got: list[Any] = []
    waiter = threading.Thread(target=lambda: got.append(store.leases.wait_lease("c3", wait_s=10, poll_s=0.02)))
    waiter.start()
    time.sleep(0.2)
    assert not got  # still waiting
    first.release()
    waiter.join(10)
    assert got and got[0] is not None and store.leases.lease_holder("c3") is not None
    got[0].release()
    second.release()
