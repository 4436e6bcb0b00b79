"""Two ``agent-core serve`` processes on one store (SQLite file, PostgreSQL) taking turns on one session at once."""

from __future__ import annotations

import json
import threading
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from ._live import start_serve, stop_serve

pytestmark = pytest.mark.slow  # each test starts agent-core serve as a process: the tier `pytest -m slow`


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


def test_a_cancel_sent_to_one_server_stops_a_request_running_on_the_other(tmp_path: Path, pg: Any) -> None:
    import time

    import psycopg
    from providers._server import Delay, ScriptedServer, sse_reply
    from providers._wire import OA_DONE, oa_chunk

    schema = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(pg.url(), autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    upstream = ScriptedServer()
    upstream.enqueue(sse_reply(oa_chunk({"role": "assistant", "content": ""}), oa_chunk({"content": "Hel"}),
                               Delay(60), oa_chunk({}, "stop"), OA_DONE))
    config = ["-c", f"base_url={upstream.url}/v1", "-c", "api_key=sk-x", "-c", "max_retries=0"]
    servers = [start_serve(tmp_path / f"home{i}", "--store", str(pg.url(schema)), *config) for i in range(2)]
    (_, a), (_, b) = servers
    try:
        body = {"message": "hi", "config": {"provider": "openai", "model": "m"}}
        started = time.monotonic()
        with httpx.stream("POST", f"{a}/v1/sessions/far/turns", json=body, timeout=60) as r:
            lines = r.iter_lines()
            rid = None
            for line in lines:
                if line.startswith("data: "):
                    event = json.loads(line[6:])
                    rid = rid or (event["request_id"] if event["type"] == "start" else None)
                    if event["type"] == "partial":
                        break
            assert rid is not None
            gone = httpx.delete(f"{b}/v1/requests/{rid}", timeout=30)
            assert gone.status_code == 204, gone.text  # sent to the OTHER one
            rest = [json.loads(line[6:]) for line in lines if line.startswith("data: ")]
        assert time.monotonic() - started < 30  # not the upstream's 60 s
        done = [e for e in rest if e["type"] == "done"]
        assert done and done[-1]["outcome"]["reason"] == "cancelled"
        r404 = httpx.delete(f"{b}/v1/requests/{rid}", timeout=30)
        assert r404.status_code == 404 and "any server process" in r404.json()["error"]["message"]
    finally:
        for proc, _ in servers:
            stop_serve(proc)
        upstream.close()
