"""Handlers racing on one session, as threads and as processes: exactly one save wins per revision,
the losers rerun their turn, and no turn is lost or duplicated."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest
from agent_core import AgentCore, Message, Session
from agent_core.errors import ConflictError
from agent_core.store import SqlSessionStore, run_turn

from .conftest import ECHO

WORKER = Path(__file__).with_name("_worker.py")


def _check_conversation(session: Session, expected_users: dict[str, int]) -> None:
    """Turns alternate user/reply, each reply answers the message before it, each handler's turns in order."""
    messages = list(session.messages)
    users = [m.content for m in messages[0::2]]
    assert [m.role for m in messages] == ["user", "assistant"] * (len(messages) // 2)
    assert [m.content for m in messages[1::2]] == [f"Echo: {u}" for u in users]
    assert sorted(users) == sorted(f"{p}-t{j}" for p, n in expected_users.items() for j in range(n))
    for prefix, n in expected_users.items():
        assert [u for u in users if u.startswith(prefix + "-")] == [f"{prefix}-t{j}" for j in range(n)]


def test_two_threads_putting_at_one_revision_exactly_one_wins(store: SqlSessionStore) -> None:
    store.create(Session("s1", [Message("user", "start")]))
    for revision in range(1, 16):
        base = store.get("s1").session
        barrier = threading.Barrier(2)
        outcomes: list[object] = [None, None]

        def racer(i: int) -> None:
            mine = base.with_message(Message("user", f"r{revision}-{i}"))
            barrier.wait()
            try:
                outcomes[i] = store.put(mine, expected_revision=revision)
            except ConflictError as exc:
                outcomes[i] = exc

        threads = [threading.Thread(target=racer, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wins = [o for o in outcomes if o == revision + 1]
        losses = [o for o in outcomes if isinstance(o, ConflictError)]
        assert len(wins) == 1 and len(losses) == 1, outcomes
        assert losses[0].current == revision + 1  # type: ignore[union-attr]
        assert store.get("s1").revision == revision + 1
    assert len(store.get("s1").session.messages) == 16


def test_threads_running_turns_on_one_session_lose_none(store: SqlSessionStore, core: AgentCore) -> None:
    errors: list[BaseException] = []

    def handler(prefix: str) -> None:
        try:
            for j in range(8):
                run_turn(core, store, "s1", f"{prefix}-t{j}", ECHO, retries=10_000)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=handler, args=(f"th{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    stored = store.get("s1")
    assert stored.revision == 32
    _check_conversation(stored.session, {f"th{i}": 8 for i in range(4)})


@pytest.mark.slow
def test_four_processes_times_25_turns_lose_none(store: SqlSessionStore, store_url: str) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), "turns", store_url, "s1", f"p{i}", "25"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for i in range(4)
    ]
    attempts = 0
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
        attempts += int(out.strip())
    stored = store.get("s1")
    assert len(stored.session.messages) == 200  # 100 user turns, 100 replies
    assert stored.revision == 100  # one revision per saved turn: no lost or doubled save
    assert attempts >= 100  # every conflict was retried, never dropped
    _check_conversation(stored.session, {f"p{i}": 25 for i in range(4)})
    history = store.history("s1")
    assert [r.added for r in history] == [2] * 100 and not any(r.replaced for r in history)
