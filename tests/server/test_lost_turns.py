"""Turns lost with their process, in one server: recorded as they start, and saved as stopped by the sweep.

The slow tier kills real workers (``test_workers.py``); here the store is left as a dead
holder leaves it (a lapsed lease row with the turn it ran), which is all a server sees of it.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
from agent_core import AgentCore, Message
from agent_core.server import create_app
from agent_core.store.lost_turns import running_record
from agent_core_providers.echo import EchoProvider

from ._live import running


def _leave_running(store: Any, sid: str, base: int) -> None:
    record = running_record(Message("user", "lost question"), base, "req-lost")
    with store._backend.transaction(write=True) as tx:
        tx.run("INSERT INTO agent_core_leases (session_id, holder, request_id, started_at, expires_at, running) "
               "VALUES (?, 'dead-holder', 'req-lost', 0, 0, ?)", (sid, record))


def test_the_server_saves_a_lost_turn_nobody_touches_again_as_it_starts(store: Any) -> None:
    _leave_running(store, "quiet", 0)
    with running(create_app(store=store), lifespan="on") as url:
        deadline = time.monotonic() + 10
        while (got := httpx.get(f"{url}/v1/sessions/quiet", timeout=10)).status_code == 404:
            assert time.monotonic() < deadline
            time.sleep(0.05)
    (message,) = got.json()["messages"]
    assert (message["content"], message["metadata"]["stopped"]) == ("lost question", "process_lost")
    assert got.json()["revision"] == 1


def test_a_turn_at_a_revision_records_what_a_lost_process_would_leave(store: Any) -> None:
    seen: list[Any] = []

    class Peeking(EchoProvider):
        def stream_api(self, native_messages: Any, state: Any, *, request_id: str | None = None) -> Any:
            with store._backend.transaction(write=False) as tx:
                seen.extend(tx.rows("SELECT running FROM agent_core_leases WHERE session_id = 's1'"))
            yield from super().stream_api(native_messages, state, request_id=request_id)

    with running(create_app(AgentCore(providers=[Peeking]), store=store)) as url:
        assert httpx.post(f"{url}/v1/sessions", json={"id": "s1"}).status_code == 201
        r = httpx.post(f"{url}/v1/sessions/s1/turns", json={"message": "asked", "config": {"provider": "echo"}},
                       headers={"if-match": '"1"', "x-request-id": "req-1"}, timeout=30)
        assert r.status_code == 200 and '"type":"saved"' in r.text.replace(" ", "")
    (record,) = (row[0] for row in seen)
    assert '"base":1' in record and '"content":"asked"' in record and '"request_id":"req-1"' in record
    with store._backend.transaction(write=False) as tx:
        assert tx.rows("SELECT running FROM agent_core_leases") == []  # released with the turn saved
