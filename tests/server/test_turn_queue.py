"""Busy sessions over real processes: two ``agent-core serve`` on one store (SQLite file, PostgreSQL), a scripted upstream.

A turn on a session another turn is running waits for it (``enqueue``), is refused
(``reject``), stops it and keeps it (``interrupt``) or stops it and drops it
(``rollback``); the upstream counts the model calls, so a turn run twice would show.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ._live import running, start_serve, stop_serve
from .conftest import pg_schema_url

pytestmark = pytest.mark.slow  # each test starts agent-core serve processes: the tier `pytest -m slow`

pytest.importorskip("providers._server")

from providers._server import Delay, ScriptedServer, sse_reply
from providers._wire import OA_DONE, oa_chunk

BODY_CONFIG = {"provider": "openai", "model": "m"}


def _reply(text: str, pause: float = 0.0) -> Any:
    parts: list[Any] = [oa_chunk({"role": "assistant", "content": ""}), oa_chunk({"content": text})]
    if pause:
        parts.append(Delay(pause))
    return sse_reply(*parts, oa_chunk({}, "stop"), OA_DONE)


class Turn(threading.Thread):
    """One streamed turn in a thread; its events as they come."""

    def __init__(self, url: str, sid: str, text: str, busy: str | None = None) -> None:
        super().__init__(daemon=True)
        self.url, self.sid, self.text, self.busy = url, sid, text, busy
        self.events: list[dict[str, Any]] = []
        self.status: int | None = None
        self.response: dict[str, Any] = {}
        self.headers: dict[str, str] = {}
        self._cond = threading.Condition()

    def run(self) -> None:
        params = {"busy": self.busy} if self.busy else None
        body = {"message": self.text, "config": BODY_CONFIG}
        try:
            with httpx.stream("POST", f"{self.url}/v1/sessions/{self.sid}/turns", params=params, json=body,
                              timeout=120) as r:
                self.status, self.headers = r.status_code, dict(r.headers)
                if r.status_code != 200:
                    self.response = json.loads(r.read())
                    return
                for line in r.iter_lines():
                    if line.startswith("data: "):
                        with self._cond:
                            self.events.append(json.loads(line[6:]))
                            self._cond.notify_all()
        except httpx.TransportError:
            pass  # its server was killed
        finally:
            with self._cond:
                self._cond.notify_all()

    def wait_for(self, kind: str, timeout: float = 30) -> dict[str, Any]:
        with self._cond:
            assert self._cond.wait_for(lambda: any(e["type"] == kind for e in self.events) or not self.is_alive(),
                                       timeout), f"no {kind!r} event in {timeout} s: {self.types}"
        found = [e for e in self.events if e["type"] == kind]
        assert found, f"no {kind!r} event: {self.types}"
        return found[0]

    @property
    def types(self) -> list[str]:
        return [e["type"] for e in self.events]


def _store_url(backend: str, tmp: Path, pg: Any) -> str:
    return f"sqlite:///{tmp}/shared.db" if backend == "sqlite" else pg_schema_url(pg)


@pytest.fixture(scope="module")
def upstream() -> Iterator[ScriptedServer]:
    server = ScriptedServer()
    yield server
    server.close()


def _serve_pair(tmp: Path, store_url: str, upstream: ScriptedServer) -> list[tuple[Any, str]]:
    config = ["-c", f"base_url={upstream.url}/v1", "-c", "api_key=sk-x", "-c", "max_retries=0"]
    return [start_serve(tmp / f"home{i}", "--store", store_url, *config) for i in range(2)]


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def pair(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
         upstream: ScriptedServer) -> Iterator[tuple[list[str], str]]:
    """Two serve processes on one store: their URLs and the backend's name."""
    tmp = tmp_path_factory.mktemp(request.param)
    pg = request.getfixturevalue("pg") if request.param == "postgresql" else None
    servers = _serve_pair(tmp, _store_url(request.param, tmp, pg), upstream)
    try:
        yield [url for _, url in servers], request.param
    finally:
        for proc, _ in servers:
            stop_serve(proc)


def _messages(url: str, sid: str) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in httpx.get(f"{url}/v1/sessions/{sid}").json()["messages"]]


def test_eight_clients_three_turns_each_run_the_model_24_times(pair: tuple[list[str], str],
                                                               upstream: ScriptedServer) -> None:
    (a, b), _ = pair
    sid = "many-" + uuid.uuid4().hex[:8]
    before = len(upstream.requests)
    upstream.enqueue(*[_reply(f"answer {i}", pause=0.02) for i in range(24)])
    turns: list[Turn] = []

    def client(i: int) -> None:
        for j in range(3):
            turn = Turn((a, b)[(i + j) % 2], sid, f"c{i}-{j}")
            turns.append(turn)
            turn.run()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(upstream.requests) - before == 24  # one model call per turn, none run twice
    assert all(t.status == 200 for t in turns)
    assert all("conflict" not in t.types and "retry" not in t.types for t in turns)
    assert sorted(t.events[-1]["revision"] for t in turns) == list(range(1, 25))
    assert sum("queued" in t.types for t in turns) > 0  # they did meet
    users = [text for role, text in _messages(b, sid) if role == "user"]
    assert sorted(users) == sorted(f"c{i}-{j}" for i in range(8) for j in range(3))


def _holder(url: str, sid: str, upstream: ScriptedServer, pause: float) -> Turn:
    """A turn that has started streaming its answer and runs for ``pause`` more seconds."""
    upstream.enqueue(_reply("first", pause=pause))
    holder = Turn(url, sid, "A")
    holder.start()
    holder.wait_for("partial")
    return holder


def test_enqueue_waits_for_the_running_turn_then_runs(pair: tuple[list[str], str], upstream: ScriptedServer) -> None:
    (a, b), _ = pair
    sid = "enq-" + uuid.uuid4().hex[:8]
    holder = _holder(a, sid, upstream, pause=1.0)
    upstream.enqueue(_reply("second"))
    waiter = Turn(b, sid, "B")  # the default strategy
    waiter.start()
    queued = waiter.wait_for("queued")
    assert queued["busy"] == "enqueue" and abs(queued["holder_started_at"] - time.time()) < 30
    assert queued["ahead"] == 0
    third = Turn(b, sid, "C")  # waits behind B in the same process
    upstream.enqueue(_reply("third"))
    third.start()
    assert third.wait_for("queued")["ahead"] == 1
    for turn in (holder, waiter, third):
        turn.join(30)
    assert holder.events[-1]["type"] == "saved" and holder.events[-1]["revision"] == 1
    assert waiter.types[0] == "queued" and waiter.events[-1] == {**waiter.events[-1], "type": "saved", "revision": 2}
    assert third.events[-1]["revision"] == 3  # in the order they came
    assert _messages(a, sid) == [("user", "A"), ("assistant", "first"), ("user", "B"), ("assistant", "second"),
                                 ("user", "C"), ("assistant", "third")]


def test_reject_answers_409_at_once(pair: tuple[list[str], str], upstream: ScriptedServer) -> None:
    (a, b), _ = pair
    sid = "rej-" + uuid.uuid4().hex[:8]
    holder = _holder(a, sid, upstream, pause=1.0)
    before = len(upstream.requests)
    r = httpx.post(f"{b}/v1/sessions/{sid}/turns", params={"busy": "reject"},
                   json={"message": "B", "config": BODY_CONFIG}, timeout=30)
    assert r.status_code == 409 and r.headers["retry-after"] == "1"
    assert r.json()["error"]["type"] == "session_busy"
    holder.join(30)
    assert holder.events[-1]["type"] == "saved" and len(upstream.requests) == before
    assert _messages(a, sid) == [("user", "A"), ("assistant", "first")]


@pytest.mark.parametrize("where", ["other", "same"])
def test_interrupt_keeps_the_running_turn_as_stopped_then_runs(pair: tuple[list[str], str], where: str,
                                                               upstream: ScriptedServer) -> None:
    (a, b), _ = pair
    b = a if where == "same" else b
    sid = "int-" + uuid.uuid4().hex[:8]
    holder = _holder(a, sid, upstream, pause=60)
    upstream.enqueue(_reply("second"))
    started = time.monotonic()
    waiter = Turn(b, sid, "B", busy="interrupt")
    waiter.start()
    holder.join(30)
    waiter.join(30)
    assert time.monotonic() - started < 20  # not the upstream's 60 s
    done = [e for e in holder.events if e["type"] == "done"][-1]
    assert done["outcome"]["reason"] == "cancelled" and holder.events[-1]["type"] == "saved"
    assert waiter.events[-1]["type"] == "saved" and waiter.events[-1]["revision"] == 2
    users = [text for role, text in _messages(a, sid) if role == "user"]
    assert users == ["A", "B"] and _messages(a, sid)[-1] == ("assistant", "second")


@pytest.mark.parametrize("where", ["other", "same"])
def test_rollback_discards_the_running_turn_then_runs(pair: tuple[list[str], str], where: str,
                                                      upstream: ScriptedServer) -> None:
    (a, b), _ = pair
    b = a if where == "same" else b
    sid = "rb-" + uuid.uuid4().hex[:8]
    holder = _holder(a, sid, upstream, pause=60)
    upstream.enqueue(_reply("second"))
    waiter = Turn(b, sid, "B", busy="rollback")
    waiter.start()
    holder.join(30)
    waiter.join(30)
    assert holder.types[-2:] == ["done", "discarded"] and "saved" not in holder.types
    assert waiter.events[-1]["type"] == "saved" and waiter.events[-1]["revision"] == 1
    assert _messages(a, sid) == [("user", "B"), ("assistant", "second")]


def test_if_match_keeps_its_meaning_for_a_turn_that_waited(pair: tuple[list[str], str],
                                                           upstream: ScriptedServer) -> None:
    """The waiter's revision was current when it came, but the turn it waited for saved first: a conflict."""
    (a, b), _ = pair
    sid = "im-" + uuid.uuid4().hex[:8]
    assert httpx.post(f"{a}/v1/sessions", json={"id": sid}).status_code == 201
    holder = _holder(a, sid, upstream, pause=0.5)
    before = len(upstream.requests)
    r = httpx.post(f"{b}/v1/sessions/{sid}/turns", json={"message": "B", "config": BODY_CONFIG},
                   headers={"if-match": '"1"'}, timeout=30)
    events = [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: ")]
    assert [e["type"] for e in events] == ["queued", "conflict"] and events[-1]["error"]["current_revision"] == 2
    holder.join(30)
    assert len(upstream.requests) == before  # the stale turn never asked the model
    r = httpx.post(f"{b}/v1/sessions/{sid}/turns", json={"message": "B", "config": BODY_CONFIG},
                   headers={"if-match": '"1"'}, timeout=30)
    assert r.status_code == 409 and r.json()["error"]["current_revision"] == 2  # stale before it waits: at once


def test_rollback_with_if_match_runs_on_the_revision_it_kept(pair: tuple[list[str], str],
                                                            upstream: ScriptedServer) -> None:
    """The rolled-back turn saved nothing, so the revision the client named is still the session's."""
    (a, b), _ = pair
    sid = "rbim-" + uuid.uuid4().hex[:8]
    assert httpx.post(f"{a}/v1/sessions", json={"id": sid}).status_code == 201
    holder = _holder(a, sid, upstream, pause=60)
    upstream.enqueue(_reply("second"))
    r = httpx.post(f"{b}/v1/sessions/{sid}/turns", params={"busy": "rollback"}, headers={"if-match": '"1"'},
                   json={"message": "B", "config": BODY_CONFIG}, timeout=30)
    events = [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: ")]
    assert events[0]["type"] == "queued" and events[-1]["type"] == "saved" and events[-1]["revision"] == 2
    holder.join(30)
    assert holder.types[-1] == "discarded"
    assert _messages(a, sid) == [("user", "B"), ("assistant", "second")]


def test_a_client_that_hangs_up_while_queued_leaves_the_queue(pair: tuple[list[str], str],
                                                             upstream: ScriptedServer) -> None:
    (a, b), _ = pair
    sid = "gone-" + uuid.uuid4().hex[:8]
    holder = _holder(a, sid, upstream, pause=1.5)
    before = len(upstream.requests)
    body = {"message": "B", "config": BODY_CONFIG}
    with httpx.stream("POST", f"{b}/v1/sessions/{sid}/turns", json=body, timeout=30) as r:
        first = next(line for line in r.iter_lines() if line.startswith("data: "))
        assert json.loads(first[6:])["type"] == "queued"
    holder.join(30)
    time.sleep(0.5)  # a waiter still in line would have taken the lease and asked the model by now
    assert len(upstream.requests) == before
    assert _messages(a, sid) == [("user", "A"), ("assistant", "first")]


def test_an_unknown_strategy_is_400(pair: tuple[list[str], str]) -> None:
    (a, _), _ = pair
    r = httpx.post(f"{a}/v1/sessions/x/turns", params={"busy": "shove"}, json={"message": "hi"}, timeout=30)
    assert r.status_code == 400 and r.json()["error"]["param"] == "busy"


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_killed_holder_frees_the_session(backend: str, tmp_path: Path, upstream: ScriptedServer,
                                           request: pytest.FixtureRequest) -> None:
    """SQLite: after the lease's expiry (here 2 s); PostgreSQL: at once. The next turn first saves the killed one's
    question as stopped (its answer died with the process)."""
    pg = request.getfixturevalue("pg") if backend == "postgresql" else None
    url = _store_url(backend, tmp_path, pg) + ("?lease_ttl=2" if backend == "sqlite" else "")
    servers = _serve_pair(tmp_path, url, upstream)
    (proc_a, a), (_, b) = servers
    try:
        sid = "kill-" + uuid.uuid4().hex[:8]
        holder = _holder(a, sid, upstream, pause=60)
        os.kill(proc_a.pid, signal.SIGKILL)
        proc_a.wait()
        killed = time.monotonic()
        upstream.enqueue(_reply("after"))
        nxt = Turn(b, sid, "B")
        nxt.start()
        nxt.join(40)
        waited = time.monotonic() - killed
        assert nxt.events[-1]["type"] == "saved" and nxt.events[-1]["revision"] == 2, nxt.types
        assert waited < 5
        assert _messages(b, sid) == [("user", "A"), ("user", "B"), ("assistant", "after")]
        lost = httpx.get(f"{b}/v1/sessions/{sid}").json()["messages"][0]
        assert lost["metadata"]["stopped"] == "process_lost"
        holder.join(5)
    finally:
        for proc, _ in servers:
            stop_serve(proc)


def test_the_wait_limit_ends_the_stream_with_busy(tmp_path: Path, upstream: ScriptedServer) -> None:
    from agent_core.server import ServeSettings, create_app
    from agent_core.store import open_store

    with open_store(f"sqlite:///{tmp_path}/s.db") as store, running(create_app(
            store=store, config={"base_url": f"{upstream.url}/v1", "api_key": "sk-x", "max_retries": 0},
            settings=ServeSettings(turn_wait_s=0.5))) as url:
        holder = _holder(url, "w", upstream, pause=2)
        waiter = Turn(url, "w", "B")
        waiter.start()
        waiter.join(30)
        assert waiter.types == ["queued", "busy"]
        busy = waiter.events[-1]["error"]
        assert busy["type"] == "session_busy" and busy["status"] == 409 and busy["retry_after"] == 1
        holder.join(30)
        assert holder.events[-1]["type"] == "saved"


def test_the_turn_wait_flag_sets_the_limit(tmp_path: Path, upstream: ScriptedServer) -> None:
    config = ["-c", f"base_url={upstream.url}/v1", "-c", "api_key=sk-x", "-c", "max_retries=0"]
    proc, url = start_serve(tmp_path, "--store", f"sqlite:///{tmp_path}/s.db", "--turn-wait", "0.5", *config)
    try:
        holder = _holder(url, "w", upstream, pause=2)
        started = time.monotonic()
        r = httpx.post(f"{url}/v1/sessions/w/turns", json={"message": "B", "config": BODY_CONFIG}, timeout=30)
        assert time.monotonic() - started < 1.9  # gave up before the holder was done
        events = [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: ")]
        assert [e["type"] for e in events] == ["queued", "busy"] and events[0]["wait_limit_s"] == 0.5
        holder.join(30)
    finally:
        stop_serve(proc)
