"""The server when its store fails or its client leaves: a 503 with ``retry-after``, nothing half-saved.

A PostgreSQL restart under load, an SQLite writer that will not let go, a full disk under
an ``agent-core serve`` process (a tmpfs in a mount namespace of its own), and a client that
hangs up in the middle of a streamed turn.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest
from agent_core.server import create_app
from agent_core.store import open_store
from providers._server import Delay, ScriptedServer, sse_reply
from providers._wire import OA_DONE, oa_chunk

from ._live import running, start_serve, stop_serve
from .conftest import pg_schema_url

pytestmark = pytest.mark.slow  # restarts, full disks, and serve processes: the tier `pytest -m slow`

ECHO = {"provider": "echo"}


def _post_turn(url: str, sid: str, text: str, timeout: float = 30) -> tuple[int, dict[str, str], list[dict[str, Any]]]:
    """One streamed turn: its status, headers and events (or, for a refusal, its JSON body as the one item)."""
    with httpx.stream("POST", f"{url}/v1/sessions/{sid}/turns", json={"message": text, "config": ECHO},
                      timeout=timeout) as r:
        if r.status_code != 200:
            return r.status_code, dict(r.headers), [json.loads(r.read())]
        events = [json.loads(line[6:]) for line in r.iter_lines() if line.startswith("data: ")]
        return 200, dict(r.headers), events


def _unavailable(status: int, headers: dict[str, str], events: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The store failure a turn reports, as a 503 before its stream or as its stream's last frame."""
    if status == 503:
        assert headers.get("retry-after") == "1" or events[0]["error"]["reason"] in ("disk_full", "read_only")
        return dict(events[0]["error"])
    last = events[-1] if events else {}
    if status == 200 and last.get("type") == "error" and last["error"].get("status") == 503:
        return dict(last["error"])
    return None


def _classify(status: int, headers: dict[str, str], events: list[dict[str, Any]]) -> str:
    if status == 200 and events and events[-1]["type"] == "saved":
        return "saved"
    failure = _unavailable(status, headers, events)
    if failure is not None and failure["type"] == "StoreUnavailableError":
        return "unavailable"
    return f"bad: {status} {events[-1] if events else None}"


def test_a_postgresql_restart_under_load(tmp_path: Path, pg: Any) -> None:
    """Turns in flight fail with 503 and retry-after; the next ones succeed; no session holds half a turn."""
    proc, url = start_serve(tmp_path, "--store", pg_schema_url(pg))
    # per session: (when a turn began, how it ended)
    outcomes: dict[str, list[tuple[float, str]]] = {f"pg-{i}-{uuid.uuid4().hex[:6]}": [] for i in range(4)}
    stop = threading.Event()

    def client(sid: str) -> None:
        n = 0
        while not stop.is_set():
            began = time.monotonic()
            try:
                outcome = _classify(*_post_turn(url, sid, f"t{n}"))
            except httpx.TransportError as exc:  # the server must answer, whatever its store does
                outcome = f"bad: {type(exc).__name__}"
            outcomes[sid].append((began, outcome))
            n += 1

    threads = [threading.Thread(target=client, args=(sid,), daemon=True) for sid in outcomes]
    try:
        for t in threads:
            t.start()
        time.sleep(0.5)
        pg.halt()
        time.sleep(1.0)
        pg.resume()
        back = time.monotonic()
        time.sleep(4.0)
        stop.set()
        for t in threads:
            t.join(30)
        seen = Counter(o for results in outcomes.values() for _, o in results)
        assert set(seen) == {"saved", "unavailable"}, seen  # nothing else: no 500, no cut stream
        for sid, results in outcomes.items():
            # Recovered without a restart of the server: psycopg_pool reconnects with a backoff that
            # grew during the outage, so the first seconds after the database is back may still fail.
            late = [o for began, o in results if began > back + 2.5]
            assert late and set(late) == {"saved"}, (sid, results[-5:])
            saved = sum(o == "saved" for _, o in results)
            got = httpx.get(f"{url}/v1/sessions/{sid}").json()
            assert got["revision"] == saved and len(got["messages"]) == 2 * saved
            assert [m["role"] for m in got["messages"]] == ["user", "assistant"] * saved
    finally:
        stop.set()
        stop_serve(proc)


def test_an_sqlite_writer_that_will_not_let_go_is_503(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with open_store(f"sqlite:///{path}?busy_timeout=0.3") as store, running(create_app(store=store)) as url:
        assert _classify(*_post_turn(url, "b", "first")) == "saved"
        blocker = sqlite3.connect(path, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")  # another process's writer, stuck
        try:
            status, headers, body = _post_turn(url, "b", "second")
            assert (status, headers["retry-after"]) == (503, "1")
            error = body[0]["error"]
            assert error["type"] == "StoreUnavailableError" and "busy timeout" in error["message"]
            assert "sqlite3" not in json.dumps(body)
            assert httpx.get(f"{url}/v1/sessions/b").json()["revision"] == 1  # reads still answer
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        assert _classify(*_post_turn(url, "b", "second")) == "saved"
        assert httpx.get(f"{url}/v1/sessions/b").json()["revision"] == 2


def test_a_full_disk_under_a_serve_process(tmp_path: Path) -> None:
    if shutil.which("unshare") is None:
        pytest.skip("needs util-linux's unshare for a file system of the test's own")
    mnt = tmp_path / "mnt"
    mnt.mkdir()

    def in_small_tmpfs(command: list[str]) -> list[str]:
        script = f"mount -t tmpfs -o size=400k tmpfs {mnt} && exec \"$@\""
        return ["unshare", "-rm", "sh", "-c", script, "sh", *command]

    proc, url = start_serve(tmp_path / "home", "--store", f"sqlite:///{mnt}/s.db", wrap=in_small_tmpfs)
    try:
        saved, failure = 0, None
        for i in range(200):
            status, headers, events = _post_turn(url, "full", f"t{i} " + "x" * 20_000)
            if _classify(status, headers, events) != "saved":
                failure = _unavailable(status, headers, events)
                break
            saved += 1
        assert failure is not None and failure["type"] == "StoreUnavailableError", failure
        assert failure["reason"] == "disk_full" and 0 < saved < 200
        got = httpx.get(f"{url}/v1/sessions/full").json()  # the turn that did not fit left nothing
        assert got["revision"] == saved and len(got["messages"]) == 2 * saved
    finally:
        stop_serve(proc)


@pytest.fixture(scope="module")
def upstream() -> Any:
    server = ScriptedServer()
    yield server
    server.close()


def test_a_client_that_hangs_up_mid_stream(tmp_path: Path, upstream: ScriptedServer) -> None:
    """The upstream request is cancelled and the turn is saved once, as the store keeps a stopped turn."""
    upstream.enqueue(sse_reply(oa_chunk({"role": "assistant", "content": ""}), oa_chunk({"content": "Hel"}),
                               Delay(60), oa_chunk({"content": "lo"}), oa_chunk({}, "stop"), OA_DONE))
    config = {"base_url": upstream.url + "/v1", "api_key": "sk-x", "max_retries": 0}
    with open_store(f"sqlite:///{tmp_path}/s.db") as store, running(create_app(store=store, config=config)) as url:
        body = {"message": "hi", "config": {"provider": "openai", "model": "m"}}
        closed_before = len(upstream.peer_closed)
        with httpx.stream("POST", f"{url}/v1/sessions/gone/turns", json=body, timeout=30) as r:
            for line in r.iter_lines():
                if '"partial"' in line:
                    break
        left = time.monotonic()
        while len(upstream.peer_closed) == closed_before:  # the upstream sees us hang up too
            assert time.monotonic() - left < 10, "the upstream request was not cancelled"
            time.sleep(0.05)
        while True:
            got = httpx.get(f"{url}/v1/sessions/gone")
            if got.status_code == 200:
                break
            assert time.monotonic() - left < 10, "the stopped turn was not saved"
            time.sleep(0.05)
        time.sleep(0.5)  # long enough for a second save, were there one
        kept = httpx.get(f"{url}/v1/sessions/gone").json()["messages"]  # the question, and the words streamed
        assert [(m["role"], m["content"], m.get("metadata", {}).get("stopped")) for m in kept] \
            == [("user", "hi", None), ("assistant", "Hel", "cancelled")]
        assert [r.revision for r in store.history("gone")] == [1]
