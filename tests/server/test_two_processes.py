"""Two ``agent-core serve`` processes on one store (SQLite file, PostgreSQL) taking turns on one session at once."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ._live import start_serve, stop_serve


@pytest.fixture(scope="module")
def pg() -> Iterator[Any]:
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


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/shared.db"
    import psycopg

    server = request.getfixturevalue("pg")
    schema = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(server.url(), autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    return str(server.url(schema))


def test_two_servers_on_one_store_lose_no_turn(tmp_path: Path, store_url: str) -> None:
    servers = [start_serve(tmp_path / f"home{i}", "--store", store_url) for i in range(2)]
    try:
        urls = [url for _, url in servers]
        saved: list[int] = []

        def turn(i: int) -> None:
            r = httpx.post(f"{urls[i % 2]}/v1/sessions/shared/turns", timeout=60,
                           json={"message": f"msg {i}", "config": {"provider": "echo"}})
            events = [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: ")]
            saved.extend(e["revision"] for e in events if e["type"] == "saved")

        # Each race has a winner, so four writers always land with the default three retries.
        threads = [threading.Thread(target=turn, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(saved) == [1, 2, 3, 4]
        for url in urls:  # both servers read the same session
            messages = httpx.get(f"{url}/v1/sessions/shared").json()["messages"]
            assert sorted(m["content"] for m in messages if m["role"] == "user") == [f"msg {i}" for i in range(4)]
            for q, a in zip(messages[::2], messages[1::2]):
                assert a["content"] == f"Echo: {q['content']}"
    finally:
        for proc, _ in servers:
            stop_serve(proc)
