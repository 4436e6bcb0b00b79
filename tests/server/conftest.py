"""Fixtures: a live server over a fresh SQLite store, and the official openai client pointed at it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason="agent-core serve needs the server extra")

from agent_core.server import ServeSettings, create_app  # noqa: E402
from agent_core.store import open_store  # noqa: E402

from ._live import running  # noqa: E402


@pytest.fixture(scope="session")
def pg() -> Iterator[Any]:
    """A throwaway PostgreSQL server for the server tests (each test takes a schema of its own)."""
    from store._postgres import PostgresServer, find_bin_dir

    bin_dir = find_bin_dir()
    if bin_dir is None:
        pytest.skip("no PostgreSQL server binaries (initdb) on PATH or under /usr/lib/postgresql/*/bin")
    server = PostgresServer(bin_dir)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def pg_schema_url(server: Any) -> str:
    """The URL of a fresh, empty schema on ``server``."""
    import uuid

    import psycopg

    schema = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(server.url(), autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    return str(server.url(schema))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Any]:
    s = open_store(f"sqlite:///{tmp_path / 'sessions.db'}")
    yield s
    s.close()


@pytest.fixture
def base_url(store: Any) -> Iterator[str]:
    with running(create_app(store=store)) as url:
        yield url


@pytest.fixture
def client(base_url: str) -> Any:
    import openai

    return openai.OpenAI(base_url=f"{base_url}/v1", api_key="unused", max_retries=0)


@pytest.fixture
def plugins_url(store: Any) -> Iterator[str]:
    """A server whose operator lets requests pick plugins (``--allow-config enabled_plugins``)."""
    with running(create_app(store=store, settings=ServeSettings(allow_config=("enabled_plugins",)))) as url:
        yield url


@pytest.fixture
def scripted_facade(server: Any, store: Any) -> Iterator[str]:
    """A server whose operator config points every provider at the scripted upstream ``server``."""
    operator = {"base_url": f"{server.url}/v1", "api_key": "sk-upstream-0123456789", "max_retries": 0}
    with running(create_app(store=store, config=operator)) as url:
        yield url
