"""Fixtures: every store test runs against SQLite (a temp file) and a real PostgreSQL.

The PostgreSQL server is started once per test session (see ``_postgres.py``)
and each test gets its own schema in it, so tests never see each other's rows.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from agent_core import AgentCore, Message
from agent_core.store import SqlSessionStore, open_store
from agent_core_providers.echo import EchoProvider

from ._postgres import PostgresServer, find_bin_dir


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    bin_dir = find_bin_dir()
    if bin_dir is None:
        pytest.skip("no PostgreSQL server binaries (initdb) on PATH or under /usr/lib/postgresql/*/bin")
    server = PostgresServer(bin_dir)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _fresh_schema(server: PostgresServer) -> str:
    import psycopg

    schema = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(server.url(), autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    return schema


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A URL for an empty store, on each backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/sessions.db"
    server: PostgresServer = request.getfixturevalue("pg_server")
    return server.url(_fresh_schema(server))


@pytest.fixture
def store(store_url: str) -> Iterator[SqlSessionStore]:
    s = open_store(store_url)
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def core() -> AgentCore:
    return AgentCore(providers=[EchoProvider])


ECHO = {"provider": "echo"}


@pytest.fixture
def extra_store(store_url: str) -> Iterator[Callable[[], SqlSessionStore]]:
    """Open more store objects on the test's database (another handler); all closed at teardown."""
    opened: list[SqlSessionStore] = []

    def open_one() -> SqlSessionStore:
        opened.append(open_store(store_url))
        return opened[-1]

    yield open_one
    for s in opened:
        s.close()


def interloping_core(other: SqlSessionStore, times: int) -> tuple[AgentCore, list[str]]:
    """A core whose provider saves a competing turn on ``s1`` (through ``other``) during its first ``times`` calls.

    Conflicts are made for real this way: another store object on the same
    database saves while the model "answers", exactly as another handler would.
    """
    calls: list[str] = []

    class Interloper(EchoProvider):
        def _interlope(self, native_messages: Any) -> None:
            calls.append(native_messages[-1]["content"])
            if len(calls) <= times:
                stored = other.get("s1")
                rival = stored.session.with_messages([Message("user", f"rival {len(calls)}"), Message("assistant", "r")])
                other.put(rival, expected_revision=stored.revision)

        def stream_api(self, native_messages: Any, state: Any, *, request_id: str | None = None) -> Iterator[Any]:
            self._interlope(native_messages)
            yield from super().stream_api(native_messages, state, request_id=request_id)

        def call_api(self, native_messages: Any, state: Any, *, request_id: str | None = None) -> Any:
            self._interlope(native_messages)
            return super().call_api(native_messages, state, request_id=request_id)

    return AgentCore(providers=[Interloper]), calls
