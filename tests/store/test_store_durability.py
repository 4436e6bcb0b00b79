"""Nothing lost, nothing half-read: a writer killed inside its transaction, corrupted rows, schema versions."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from agent_core import AgentCore, Message, Session
from agent_core.errors import CorruptRecordError, SchemaVersionError, StoreError
from agent_core.store import SCHEMA_VERSION, SqlSessionStore, open_store, run_turn
from agent_core.store.schema import MIGRATIONS

from .conftest import ECHO

WORKER = Path(__file__).with_name("_worker.py")


def test_a_writer_killed_inside_its_transaction_leaves_the_last_revision(
    store: SqlSessionStore, store_url: str, core: AgentCore, tmp_path: Path
) -> None:
    for i in range(2):
        run_turn(core, store, "s1", f"turn {i}", ECHO)
    before = store.get("s1")
    marker = tmp_path / "in-transaction"
    proc = subprocess.Popen([sys.executable, str(WORKER), "hang", store_url, "s1", str(marker)], stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "the writer never reached its transaction"
            time.sleep(0.05)
        # while the writer sits inside its transaction, readers see the last committed revision, unblocked
        assert store.get("s1") == before
        assert store.list()[0].revision == 2
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    with open_store(store_url) as reopened:
        assert reopened.get("s1") == before
        assert [r.revision for r in reopened.history("s1")] == [1, 2]
        # the lock died with the writer: the next turn saves at revision 3
        assert run_turn(core, reopened, "s1", "after the crash", ECHO).revision == 3


# -- corrupted rows ---------------------------------------------------------------


def _raw(store_url: str, sql: str, params: tuple[Any, ...]) -> None:
    """Change the database behind the store's back, as a bad disk or a bad migration script would."""
    if store_url.startswith("sqlite"):
        with sqlite3.connect(store_url[len("sqlite:///"):]) as conn:
            conn.execute(sql, params)
    else:
        import psycopg

        with psycopg.connect(store_url, autocommit=True) as conn:
            conn.execute(sql.replace("?", "%s"), params)


@pytest.mark.parametrize(
    ("body", "complaint"),
    [
        ('{"role": "user", "content": "cut sho', "not valid JSON"),
        ('{"role": "robot", "content": "x"}', "not a valid message"),
        ('{"content": "no role"}', "not a valid message"),
        ('["a", "list"]', "not a valid message"),
        ('{"role": "user", "content": "x", "metadata": 7}', "not a valid message"),
    ],
)
def test_a_corrupted_message_row_names_session_revision_and_row(
    store: SqlSessionStore, store_url: str, core: AgentCore, body: str, complaint: str
) -> None:
    for i in range(2):
        run_turn(core, store, "s1", f"turn {i}", ECHO)
    _raw(store_url, "UPDATE agent_core_messages SET body = ? WHERE session_id = ? AND seq = ?", (body, "s1", 3))
    for read in (store.get, store.history):
        with pytest.raises(CorruptRecordError) as info:
            read("s1")
        err = info.value
        assert (err.session_id, err.revision, err.what) == ("s1", 2, "message 3")
        assert complaint in str(err) and "'s1'" in str(err) and "revision 2" in str(err)


_MESSAGE_SCHEMA = json.loads((Path(__file__).parents[2] / "schemas" / "message.schema.json").read_text())


def test_stored_message_rows_are_the_schema_s_json(store: SqlSessionStore, store_url: str, core: AgentCore) -> None:
    """Another language reading the rows gets messages that validate against schemas/message.schema.json."""
    for i in range(2):
        run_turn(core, store, "s1", f"turn {i}", ECHO)
    tool = Message("tool", "42", {"tool_call_id": "c1"}, tool_result={"ok": True})
    store.put(store.get("s1").session.with_message(tool), expected_revision=2)
    bodies = _raw_rows(store_url, "SELECT body FROM agent_core_messages WHERE session_id = ? ORDER BY seq", ("s1",))
    assert len(bodies) == 5
    for (body,) in bodies:
        jsonschema.validate(json.loads(body), _MESSAGE_SCHEMA)
    assert json.loads(bodies[-1][0]) == tool.to_dict()


@pytest.mark.parametrize(
    "body",
    ['{"role": "robot", "content": "x"}', '{"content": "no role"}', '{"role": "user", "content": "x", "metadata": 7}'],
)
def test_the_invalid_rows_above_fail_the_schema_too(body: str) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(json.loads(body), _MESSAGE_SCHEMA)


def test_a_missing_message_row_is_corruption_not_a_shorter_session(store: SqlSessionStore, store_url: str) -> None:
    store.create(Session("s1", [Message("user", str(i)) for i in range(5)]))
    _raw(store_url, "DELETE FROM agent_core_messages WHERE session_id = ? AND seq = ?", ("s1", 2))
    with pytest.raises(CorruptRecordError, match="lists 5 messages, but 4"):
        store.get("s1")


def test_corrupted_native_history_and_head_are_named(
    store: SqlSessionStore, store_url: str, core: AgentCore
) -> None:
    run_turn(core, store, "s1", "hi", ECHO)
    _raw(store_url, "UPDATE agent_core_native SET body = ? WHERE session_id = ? AND seq = ?", ("{", "s1", 1))
    with pytest.raises(CorruptRecordError) as info:
        store.get("s1")
    assert info.value.what == "native history 'echo' 1" and info.value.revision == 1
    _raw(store_url, "UPDATE agent_core_sessions SET metadata = ? WHERE session_id = ?", ("[1]", "s1"))
    with pytest.raises(CorruptRecordError, match="not a JSON object"):
        store.get("s1")


def _raw_rows(store_url: str, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    if store_url.startswith("sqlite"):
        with sqlite3.connect(store_url[len("sqlite:///"):]) as conn:
            return list(conn.execute(sql, params).fetchall())
    import psycopg

    with psycopg.connect(store_url) as conn:
        return list(conn.execute(sql.replace("?", "%s"), params).fetchall())


# -- schema versions ----------------------------------------------------------------


def _version(store_url: str) -> int:
    if store_url.startswith("sqlite"):
        with sqlite3.connect(store_url[len("sqlite:///"):]) as conn:
            return int(conn.execute("SELECT version FROM agent_core_schema").fetchone()[0])
    import psycopg

    with psycopg.connect(store_url) as conn:
        return int(conn.execute("SELECT version FROM agent_core_schema").fetchone()[0])


def test_a_new_database_is_at_the_current_version(store: SqlSessionStore, store_url: str) -> None:
    assert _version(store_url) == SCHEMA_VERSION == len(MIGRATIONS)
    store.close()
    with open_store(store_url) as again:  # opening a current database changes nothing
        assert again.list() == []
    assert _version(store_url) == SCHEMA_VERSION


def test_a_newer_database_is_refused_untouched(store: SqlSessionStore, store_url: str) -> None:
    store.create(Session("s1", [Message("user", "kept")]))
    _raw(store_url, "UPDATE agent_core_schema SET version = ?", (SCHEMA_VERSION + 5,))
    with pytest.raises(SchemaVersionError) as info:
        open_store(store_url)
    assert (info.value.found, info.value.supported) == (SCHEMA_VERSION + 5, SCHEMA_VERSION)
    assert "newer agent-core" in str(info.value) and str(SCHEMA_VERSION + 5) in str(info.value)
    _raw(store_url, "UPDATE agent_core_schema SET version = ?", (SCHEMA_VERSION,))
    assert store.get("s1").session.messages[0].content == "kept"


_TAGS_STEP = (
    "CREATE TABLE agent_core_tags (session_id TEXT NOT NULL, tag TEXT NOT NULL)",
    "INSERT INTO agent_core_tags (session_id, tag) SELECT session_id, 'migrated' FROM agent_core_sessions",
)


def test_an_older_database_is_upgraded_and_keeps_its_sessions(store: SqlSessionStore, store_url: str) -> None:
    store.create(Session("s1", [Message("user", "old")]))
    store.close()
    backend = open_store(store_url)._backend  # a fresh backend on the same database
    upgraded = SqlSessionStore(backend, url=store_url, migrations=(*MIGRATIONS, _TAGS_STEP))
    try:
        assert _version(store_url) == SCHEMA_VERSION + 1
        assert upgraded.get("s1").session.messages[0].content == "old"
        with backend.transaction(write=False) as tx:
            assert tx.rows("SELECT session_id, tag FROM agent_core_tags") == [("s1", "migrated")]
    finally:
        upgraded.close()


def test_a_failing_upgrade_rolls_back_every_step(store: SqlSessionStore, store_url: str) -> None:
    store.create(Session("s1", [Message("user", "old")]))
    store.close()
    broken = (*MIGRATIONS, _TAGS_STEP, ("INSERT INTO no_such_table VALUES (1)",))
    backend = open_store(store_url)._backend
    try:
        with pytest.raises(StoreError, match="no_such_table") as info:
            SqlSessionStore(backend, url=store_url, migrations=broken)
        assert f"schema version {SCHEMA_VERSION + 2} failed" in str(info.value)
        assert f"stays at version {SCHEMA_VERSION}" in str(info.value)
        assert _version(store_url) == SCHEMA_VERSION  # neither step 2 nor step 3 stayed
        with backend.transaction(write=False) as tx:
            if store_url.startswith("sqlite"):
                tables = {r[0] for r in tx.rows("SELECT name FROM sqlite_master WHERE type = 'table'")}
            else:
                tables = {r[0] for r in tx.rows("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")}
        assert "agent_core_tags" not in tables and "agent_core_sessions" in tables
    finally:
        backend.close()
    with open_store(store_url) as again:
        assert again.get("s1").session.messages[0].content == "old"


@pytest.mark.slow
def test_two_processes_opening_a_fresh_database_both_succeed(store_url: str, tmp_path: Path) -> None:
    code = "import sys; from agent_core.store import open_store; open_store(sys.argv[1]).close()"
    procs = [subprocess.Popen([sys.executable, "-c", code, store_url], stderr=subprocess.PIPE) for _ in range(3)]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    assert _version(store_url) == SCHEMA_VERSION


