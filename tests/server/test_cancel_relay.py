"""The cross-process cancel relay under abuse: it comes back after its connection is killed, and
a cancel for an id nobody runs is answered as soon as the other processes have said so."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import psycopg
from agent_core.server import create_app
from agent_core.store import open_store
from providers._server import Delay, ScriptedServer, sse_reply
from providers._wire import OA_DONE, oa_chunk

from ._live import running
from .conftest import pg_schema_url


def _server_of(app: Any) -> Any:
    while not hasattr(app, "state"):
        app = app.app
    return app.state.server


def _listeners(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'agent-core-cancel-relay'"
                           ).fetchone()
    return int(row[0]) if row else 0


def test_the_relay_reconnects_after_its_connection_is_terminated(pg: Any, server: ScriptedServer) -> None:
    url = pg_schema_url(pg)
    server.enqueue(sse_reply(oa_chunk({"role": "assistant", "content": "Hel"}), Delay(30), oa_chunk({}, "stop"),
                             OA_DONE))
    operator = {"base_url": f"{server.url}/v1", "api_key": "sk-x-0123456789", "max_retries": 0}
    stores = [open_store(url), open_store(url)]
    apps = [create_app(store=s, config=operator, cancel_url=url) for s in stores]
    try:
        with running(apps[0], lifespan="on") as a, running(apps[1], lifespan="on") as b:
            assert _listeners(pg.url()) == 2
            with psycopg.connect(pg.url(), autocommit=True) as conn:
                conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                             "WHERE application_name = 'agent-core-cancel-relay'")
            deadline = time.monotonic() + 20
            while not all(_server_of(app).relay.reconnects >= 1 for app in apps) or _listeners(pg.url()) < 2:
                assert time.monotonic() < deadline, "the relays did not reconnect"
                time.sleep(0.05)

            # cancels still cross processes after the reconnect
            body = {"message": "hi", "config": {"model": "openai/m"}}
            with httpx.stream("POST", f"{a}/v1/sessions/far/turns", json=body, timeout=60) as r:
                lines = r.iter_lines()
                for line in lines:
                    if line.startswith("data: ") and json.loads(line[6:])["type"] == "partial":
                        break
                assert r.headers["x-request-id"]
                gone = httpx.delete(f"{b}/v1/requests/{r.headers['x-request-id']}", timeout=30)
                assert gone.status_code == 204, gone.text
                rest = [json.loads(line[6:]) for line in lines if line.startswith("data: ")]
            assert [e["outcome"]["reason"] for e in rest if e["type"] == "done"] == ["cancelled"]

            # an id nobody runs: answered once the other process said "not here", not after the wait
            _server_of(apps[1]).relay.wait = 30.0
            started = time.monotonic()
            r = httpx.delete(f"{b}/v1/requests/nobody-runs-this", timeout=60)
            assert r.status_code == 404 and "any server process" in r.json()["error"]["message"]
            assert time.monotonic() - started < 15
    finally:
        for s in stores:
            s.close()
