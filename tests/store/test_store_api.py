"""The SessionStore protocol on both backends: revisions, conflicts, listing, deleting, history."""

from __future__ import annotations

import asyncio

import agent_core
import pytest
from agent_core import AgentCore, Message, Session
from agent_core.errors import ConflictError, InvalidArgumentError, SessionNotFoundError, StoreError
from agent_core.store import Revision, SessionInfo, SessionStore, SqlSessionStore, Stored, open_store
from agent_core.values.native_history import NATIVE_KEY

from .conftest import ECHO


def _session(sid: str = "s1", n: int = 2) -> Session:
    msgs = [Message("user" if i % 2 == 0 else "assistant", f"m{i}", {"i": i} if i % 3 == 0 else None) for i in range(n)]
    return Session(sid, msgs, {"title": "t", "nested": {"a": [1, 2.5, None, "x"]}})


def test_the_store_satisfies_the_protocol(store: SqlSessionStore) -> None:
    assert isinstance(store, SessionStore)


def test_create_then_get_gives_back_an_equal_session_at_revision_1(store: SqlSessionStore) -> None:
    s = _session(n=5)
    assert store.create(s) == 1
    got = store.get("s1")
    assert got == Stored(s, 1)
    assert got.session.to_dict() == s.to_dict()


def test_put_at_the_latest_revision_moves_to_the_next(store: SqlSessionStore) -> None:
    store.create(_session())
    s = store.get("s1").session.with_message(Message("user", "more"))
    assert store.put(s, expected_revision=1) == 2
    assert store.get("s1") == Stored(s, 2)


def test_a_stale_put_raises_conflict_with_the_current_revision_and_changes_nothing(store: SqlSessionStore) -> None:
    store.create(_session())
    base = store.get("s1").session
    winner = base.with_message(Message("user", "winner"))
    loser = base.with_message(Message("user", "loser")).with_metadata(title="loser")
    store.put(winner, expected_revision=1)
    with pytest.raises(ConflictError) as info:
        store.put(loser, expected_revision=1)
    assert (info.value.session_id, info.value.expected, info.value.current) == ("s1", 1, 2)
    assert "s1" in str(info.value) and "2" in str(info.value)
    assert store.get("s1") == Stored(winner, 2)
    assert [r.revision for r in store.history("s1")] == [1, 2]


def test_creating_an_existing_id_is_a_conflict(store: SqlSessionStore) -> None:
    store.create(_session())
    with pytest.raises(ConflictError) as info:
        store.create(_session(n=4))
    assert info.value.expected == 0 and info.value.current == 1
    assert len(store.get("s1").session.messages) == 2


def test_unknown_ids_raise_session_not_found(store: SqlSessionStore) -> None:
    for call in (
        lambda: store.get("nope"),
        lambda: store.put(_session("nope"), expected_revision=3),
        lambda: store.delete("nope"),
        lambda: store.history("nope"),
    ):
        with pytest.raises(SessionNotFoundError) as info:
            call()
        assert info.value.session_id == "nope" and "nope" in str(info.value)
        assert isinstance(info.value, LookupError)


def test_bad_arguments_are_typed_errors_naming_the_argument(store: SqlSessionStore) -> None:
    cases = [
        (lambda: store.put({"session_id": "x"}, expected_revision=0), "session"),  # type: ignore[arg-type]
        (lambda: store.put(_session(), expected_revision=-1), "expected_revision"),
        (lambda: store.put(_session(), expected_revision=True), "expected_revision"),
        (lambda: store.get(""), "session_id"),
        (lambda: store.get(3), "session_id"),  # type: ignore[arg-type]
        (lambda: store.list(limit=0), "limit"),
        (lambda: store.delete("s1", expected_revision="1"), "expected_revision"),  # type: ignore[arg-type]
    ]
    for call, argument in cases:
        with pytest.raises(InvalidArgumentError) as info:
            call()
        assert info.value.argument == argument


def test_list_pages_by_id(store: SqlSessionStore) -> None:
    for sid in ["c", "a", "e", "b", "d"]:
        store.create(_session(sid, n=1))
    store.put(store.get("b").session.with_message(Message("user", "x")), expected_revision=1)
    first = store.list(limit=2)
    assert [i.session_id for i in first] == ["a", "b"]
    assert first[1] == SessionInfo("b", 2, 2, first[1].created_at, first[1].updated_at)
    assert first[1].updated_at >= first[1].created_at
    assert [i.session_id for i in store.list(limit=2, after="b")] == ["c", "d"]
    assert [i.session_id for i in store.list(after="d")] == ["e"]
    assert store.list(after="e") == []


def test_delete_removes_everything_and_honours_expected_revision(store: SqlSessionStore) -> None:
    store.create(_session())
    with pytest.raises(ConflictError) as info:
        store.delete("s1", expected_revision=5)
    assert info.value.current == 1
    store.get("s1")  # still there
    store.delete("s1", expected_revision=1)
    with pytest.raises(SessionNotFoundError):
        store.get("s1")
    assert store.list() == []
    assert store.create(_session(n=1)) == 1  # the id is free again
    assert len(store.history("s1")) == 1


def test_history_lists_what_each_revision_added(store: SqlSessionStore) -> None:
    s = _session(n=2)
    store.create(s)
    s2 = s.with_messages([Message("user", "q"), Message("assistant", "a")])
    store.put(s2, expected_revision=1)
    store.put(s2.with_metadata(title="renamed"), expected_revision=2)  # metadata only: adds no message
    history = store.history("s1")
    assert [(r.revision, r.first_index, r.added, r.replaced) for r in history] == [
        (1, 0, 2, False), (2, 2, 2, False), (3, 4, 0, False)
    ]
    assert [m.content for m in history[1].messages] == ["q", "a"]
    assert history[2].messages == []
    assert history[0].created_at <= history[1].created_at <= history[2].created_at
    assert all(isinstance(r, Revision) for r in history)


def test_editing_earlier_messages_replaces_the_stored_rows(store: SqlSessionStore) -> None:
    s = _session(n=4)
    store.create(s)
    redacted = s.replace_messages([Message("user", "[redacted]"), *s.messages[1:]])
    store.put(redacted, expected_revision=1)
    assert store.get("s1").session == redacted
    history = store.history("s1")
    assert [(r.revision, r.first_index, r.added, r.replaced) for r in history] == [(1, 0, 4, False), (2, 0, 4, True)]
    assert history[0].messages == []  # the old rows (with the text that was redacted) are gone
    assert [m.content for m in history[1].messages][0] == "[redacted]"
    shorter = redacted.replace_messages(redacted.messages[:1])
    store.put(shorter, expected_revision=2)
    assert store.get("s1").session == shorter


def test_a_loaded_session_keeps_the_native_history_and_the_engine_reuses_it(
    store: SqlSessionStore, core: AgentCore
) -> None:
    first = core.request(core.add_message(core.create_session("s1"), Message("user", "hi")), ECHO).session
    store.create(first)
    loaded = store.get("s1").session
    assert loaded.metadata[NATIVE_KEY] == first.metadata[NATIVE_KEY]
    native = loaded.metadata[NATIVE_KEY]["echo"]
    assert native["core_count"] == 2 and len(native["messages"]) == 2
    # The engine's native-history check passes on the loaded session: the next
    # request appends to the stored native messages instead of rebuilding them.
    nxt = core.request(core.add_message(loaded, Message("user", "again")), ECHO).session
    record = nxt.metadata[NATIVE_KEY]["echo"]
    assert record["messages"][:2] == native["messages"] and record["core_count"] == 4
    assert record["messages"][0] is native["messages"][0]  # reused, not rebuilt
    store.put(nxt, expected_revision=1)
    assert store.get("s1").session == nxt


def test_unusual_metadata_under_the_native_key_is_stored_as_is(store: SqlSessionStore) -> None:
    s = Session("s1", [Message("user", "x")], {NATIVE_KEY: {"echo": "not a record"}, "k": 1})
    store.create(s)
    assert store.get("s1").session == s


def test_unicode_and_odd_values_round_trip(store: SqlSessionStore) -> None:
    s = Session("sé ssion/1", [Message("user", "h\u00e9llo \u2603 \U0001f600 \x00 nul", {"big": 2**62, "f": 1e-300})])
    store.create(s)
    assert store.get("sé ssion/1").session == s


def test_async_twins_do_the_same(store: SqlSessionStore) -> None:
    async def main() -> None:
        s = _session()
        assert await store.acreate(s) == 1
        got = await store.aget("s1")
        assert got == Stored(s, 1)
        s2 = got.session.with_message(Message("user", "x"))
        assert await store.aput(s2, expected_revision=1) == 2
        with pytest.raises(ConflictError):
            await store.aput(s2, expected_revision=1)
        assert [i.session_id for i in await store.alist(limit=5)] == ["s1"]
        assert [r.revision for r in await store.ahistory("s1")] == [1, 2]
        await store.adelete("s1", expected_revision=2)
        with pytest.raises(SessionNotFoundError):
            await store.aget("s1")

    asyncio.run(main())


def test_a_closed_store_refuses_calls(store_url: str) -> None:
    s = open_store(store_url)
    s.close()
    with pytest.raises(StoreError, match="closed"):
        s.get("s1")


def test_two_store_objects_on_one_database_see_each_other(store_url: str) -> None:
    with open_store(store_url) as a, open_store(store_url) as b:
        a.create(_session())
        assert b.get("s1").revision == 1
        b.put(b.get("s1").session.with_message(Message("user", "b")), expected_revision=1)
        assert a.get("s1").session.messages[-1].content == "b"
        with pytest.raises(ConflictError):
            a.put(_session(n=3), expected_revision=1)


def test_the_store_package_s_public_names_are_locked() -> None:
    import agent_core.store as store_pkg

    assert sorted(store_pkg.__all__) == [
        "Admitted", "ConflictError", "CorruptRecordError", "LeaseInfo", "Limits", "Refused", "Revision", "SCHEMA_VERSION",
        "SchemaVersionError", "SessionBusyError", "SessionInfo", "SessionLease", "SessionNotFoundError", "SessionStore",
        "SqlSessionStore", "StoreError", "Stored", "TenantLedger", "TenantUse", "TurnDiscardedEvent", "TurnResult",
        "TurnRetryEvent", "TurnSavedEvent", "arun_turn", "astream_turn", "default_home", "iso_time", "open_store",
        "parse_limits", "run_turn", "stream_turn",
    ]
    assert store_pkg.ConflictError is agent_core.ConflictError
