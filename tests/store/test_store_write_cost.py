"""A turn's write cost does not grow with the conversation: counted in rows and bytes, not timed.

The backend's trace reports every write statement of a save with the rows it
touched and the bytes of text it sent; a turn on a 10,000-message session
must write exactly the rows a turn on a 10-message session writes.
"""

from __future__ import annotations

from collections.abc import Callable

from agent_core import AgentCore, Message, Session
from agent_core.store import SqlSessionStore
from agent_core.values.native_history import NATIVE_KEY

from .conftest import ECHO


def _grown(core: AgentCore, n: int, sid: str) -> Session:
    """A session of ``n`` messages whose native history the engine has built (as after many turns)."""
    msgs = [Message("user" if i % 2 == 0 else "assistant", f"message number {i % 10}") for i in range(n - 2)]
    return core.request(Session(sid, [*msgs, Message("user", "last question")]), ECHO).session


def _one_turn_written(store: SqlSessionStore, core: AgentCore, sid: str) -> tuple[int, int, list[str]]:
    stored = store.get(sid)
    nxt = core.request(stored.session.with_message(Message("user", "one more turn")), ECHO).session
    writes: list[tuple[str, int, int]] = []
    store._backend.trace = lambda sql, rows, size: writes.append((sql, rows, size))
    try:
        store.put(nxt, expected_revision=stored.revision)
    finally:
        store._backend.trace = None
    return sum(w[1] for w in writes), sum(w[2] for w in writes), [w[0].split("(")[0].strip() for w in writes]


def test_saving_a_turn_writes_the_same_rows_at_10_and_10000_messages(store: SqlSessionStore, core: AgentCore) -> None:
    costs = {}
    for n in (10, 10_000):
        sid = f"s{n}"
        session = _grown(core, n, sid)
        assert len(session.messages) == n and len(session.metadata[NATIVE_KEY]["echo"]["messages"]) == n
        store.create(session)
        costs[n] = _one_turn_written(store, core, sid)
    rows_small, bytes_small, statements = costs[10]
    rows_big, bytes_big, _ = costs[10_000]
    # 2 message rows, 2 native rows, the head, one history row
    assert rows_small == rows_big == 6, (costs[10], costs[10_000])
    assert not any(s.startswith("DELETE") for s in statements)
    assert bytes_big <= bytes_small + 64  # only the digits of the counts in the head differ
    assert len(store.get("s10000").session.messages) == 10_002


def test_a_loaded_session_carries_its_digests(store: SqlSessionStore, core: AgentCore) -> None:
    store.create(_grown(core, 50, "s1"))
    messages = store.get("s1").session.messages
    # the engine's prefix check (and the next save) hash only what is added after this load
    assert len(messages.prefix_memo()) == 50


def test_a_store_that_never_loaded_the_session_still_saves_it_right(
    store: SqlSessionStore, extra_store: Callable[[], SqlSessionStore], core: AgentCore
) -> None:
    store.create(_grown(core, 6, "s1"))
    stored = store.get("s1")
    nxt = core.request(stored.session.with_message(Message("user", "more")), ECHO).session
    other = extra_store()  # knows nothing of the native rows: it writes that provider's rows again
    assert other.put(nxt, expected_revision=stored.revision) == 2
    assert store.get("s1").session == nxt
    assert other.get("s1").session == nxt


def test_a_native_history_the_engine_rebuilt_is_written_again(store: SqlSessionStore, core: AgentCore) -> None:
    store.create(_grown(core, 6, "s1"))
    stored = store.get("s1")
    edited = stored.session.replace_messages([Message("user", "edited"), *stored.session.messages[1:]])
    nxt = core.request(edited.with_message(Message("user", "q")), ECHO).session
    assert nxt.metadata[NATIVE_KEY]["echo"]["messages"][0]["content"] == "edited"  # rebuilt by the engine
    store.put(nxt, expected_revision=stored.revision)
    again = store.get("s1").session
    assert again == nxt
    assert again.metadata[NATIVE_KEY]["echo"]["messages"][0]["content"] == "edited"


def test_native_rows_another_writer_rewrote_are_not_appended_to(
    store: SqlSessionStore, extra_store: Callable[[], SqlSessionStore], core: AgentCore
) -> None:
    """Store A loaded revision 2; the session is deleted and rebuilt to revision 2 elsewhere with another
    native history. A's save at revision 2 passes the revision check, but must not append to rows it
    never saw: the head's generation tells it they changed."""
    store.create(_grown(core, 4, "s1"))
    stored = store.get("s1")
    store.put(stored.session.with_metadata(step=2), expected_revision=1)
    mine = store.get("s1")
    other = extra_store()
    other.delete("s1")
    rebuilt = _grown(core, 4, "s1").replace_messages([Message("user", "another"), Message("assistant", "life")])
    rebuilt = core.request(rebuilt.with_message(Message("user", "same length")), ECHO).session
    assert len(rebuilt.metadata[NATIVE_KEY]["echo"]["messages"]) == 4  # as many native rows as A knows
    other.create(rebuilt)
    other.put(rebuilt.with_metadata(step=2), expected_revision=1)
    nxt = core.request(mine.session.with_message(Message("user", "q")), ECHO).session
    store.put(nxt, expected_revision=2)
    assert other.get("s1").session == nxt
