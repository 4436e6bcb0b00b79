"""``agent-core serve --workers 2``: one port, two processes, a parent that restarts them and drains on SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from agent_core.store import open_store
from providers._server import Delay, ScriptedServer, json_reply, sse_reply
from providers._wire import OA_DONE, oa_chunk

from ._live import start_serve, stop_serve

pytestmark = pytest.mark.slow  # each test starts agent-core serve with its worker processes


def _workers(parent: int) -> set[int]:
    """The pids of the server's worker processes (spawned children; not multiprocessing's resource tracker)."""
    found = set()
    for child in Path(f"/proc/{parent}/task/{parent}/children").read_text().split():
        cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
        if b"spawn_main" in cmdline:
            found.add(int(child))
    return found


def _wait_for_workers(parent: int, count: int, other_than: set[int] = frozenset()) -> set[int]:  # type: ignore[assignment]
    deadline = time.monotonic() + 30
    while True:
        pids = _workers(parent)
        if len(pids) == count and not pids & other_than:
            return pids
        assert time.monotonic() < deadline, f"workers now {pids}, before {other_than}"
        time.sleep(0.1)


class _Turn:
    """A streamed sessions-API turn on a thread; ``partial`` is set at its first text."""

    def __init__(self, url: str, sid: str, rid: str) -> None:
        self.events: list[dict[str, Any]] = []
        self.partial = threading.Event()
        self._thread = threading.Thread(target=self._read, args=(url, sid, rid), daemon=True)
        self._thread.start()

    def _read(self, url: str, sid: str, rid: str) -> None:
        body = {"message": "hi", "config": {"provider": "openai", "model": "m"}}
        try:
            with httpx.stream("POST", f"{url}/v1/sessions/{sid}/turns", json=body, timeout=60,
                              headers={"x-request-id": rid}) as r:
                for line in r.iter_lines():
                    if line.startswith("data: "):
                        self.events.append(json.loads(line[6:]))
                        if self.events[-1]["type"] == "partial":
                            self.partial.set()
        except httpx.HTTPError:
            pass  # the worker closed the connection as it stopped

    def end(self) -> list[dict[str, Any]]:
        self._thread.join(timeout=40)
        assert not self._thread.is_alive()
        return self.events


def _slow_upstream(server: ScriptedServer, replies: int, pause: float) -> list[str]:
    for _ in range(replies):
        server.enqueue(sse_reply(oa_chunk({"role": "assistant", "content": ""}), oa_chunk({"content": "Hel"}),
                                 Delay(pause), oa_chunk({"content": "lo"}), oa_chunk({}, "stop"), OA_DONE))
    return ["-c", f"base_url={server.url}/v1", "-c", "api_key=sk-x", "-c", "max_retries=0"]


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/shared.db"
    from .conftest import pg_schema_url

    return pg_schema_url(request.getfixturevalue("pg"))


def test_cancels_reach_every_turn_whichever_worker_runs_it(tmp_path: Path, server: ScriptedServer,
                                                           store_url: str) -> None:
    """Four turns spread over two workers; each DELETE, on a connection of its own, lands on either worker."""
    config = _slow_upstream(server, 4, 60)
    proc, url = start_serve(tmp_path / "home", "--workers", "2", "--store", store_url, *config)
    try:
        turns = [_Turn(url, f"s{i}", f"req-{i}") for i in range(4)]
        for turn in turns:
            assert turn.partial.wait(30)
        started = time.monotonic()
        for i in range(4):
            with httpx.Client() as fresh:  # a new connection each time: the kernel picks the worker
                gone = fresh.delete(f"{url}/v1/requests/req-{i}", timeout=30)
            assert gone.status_code == 204, gone.text
        for turn in turns:
            done = [e for e in turn.end() if e["type"] == "done"]
            assert done and done[-1]["outcome"]["reason"] == "cancelled"
        assert time.monotonic() - started < 30  # not the upstream's 60 s
    finally:
        stop_serve(proc)


def test_a_worker_stopped_mid_turn_saves_it_as_stopped_and_is_replaced(tmp_path: Path,
                                                                       server: ScriptedServer) -> None:
    config = _slow_upstream(server, 1, 60)
    store = f"sqlite:///{tmp_path}/shared.db"
    proc, url = start_serve(tmp_path / "home", "--workers", "2", "--grace", "1", "--store", store, *config)
    try:
        first = _wait_for_workers(proc.pid, 2)
        turn = _Turn(url, "cut", "req-cut")
        assert turn.partial.wait(30)
        for pid in first:  # whichever runs the turn: stopped as a worker is (an OOM killer's SIGTERM, a kill)
            os.kill(pid, signal.SIGTERM)
        turn.end()
        replaced = _wait_for_workers(proc.pid, 2, other_than=first)
        assert replaced and not replaced & first
        assert httpx.get(f"{url}/healthz", timeout=10).status_code == 200  # the new workers answer
        with open_store(store) as opened:
            stored = opened.get("cut")
        assert [m.role for m in stored.session.messages] == ["user", "assistant"]
        assert stored.session.messages[1].content == "Hel"  # what had arrived, kept as the turn stopped
    finally:
        stop_serve(proc)


def _stopped_turn(url: str, sid: str) -> list[dict[str, Any]]:
    """The session's messages once its lost turn is saved (by the next turn, or by a worker's sweep)."""
    deadline = time.monotonic() + 30
    while (got := httpx.get(f"{url}/v1/sessions/{sid}", timeout=10)).status_code == 404:
        assert time.monotonic() < deadline, f"the lost turn on {sid!r} was never saved"
        time.sleep(0.2)
    assert got.status_code == 200, got.text
    messages: list[dict[str, Any]] = got.json()["messages"]
    assert (messages[0]["role"], messages[0]["content"]) == ("user", "hi")  # the input, as the client sent it
    assert messages[0]["metadata"]["stopped"] == "process_lost"
    assert "process running this turn ended" in messages[0]["metadata"]["stopped_detail"]
    return messages


def test_a_worker_killed_outright_is_replaced_and_its_turn_saved_as_stopped(tmp_path: Path, server: ScriptedServer,
                                                                           store_url: str) -> None:
    """SIGKILL saves nothing: the next turn on the session saves the lost one first; a restarted worker's sweep saves
    the turn of a session nobody touches again."""
    config = _slow_upstream(server, 2, 60)
    server.enqueue(sse_reply(oa_chunk({"role": "assistant", "content": "again"}), oa_chunk({}, "stop"), OA_DONE))
    store = f"{store_url}?lease_ttl=1" if store_url.startswith("sqlite") else store_url
    proc, url = start_serve(tmp_path / "home", "--workers", "2", "--store", store, *config)
    try:
        first = _wait_for_workers(proc.pid, 2)
        turns = [_Turn(url, "killed", "req-killed"), _Turn(url, "untouched", "req-untouched")]
        for turn in turns:
            assert turn.partial.wait(30)
        for pid in first:
            os.kill(pid, signal.SIGKILL)
        for turn in turns:
            turn.end()
        _wait_for_workers(proc.pid, 2, other_than=first)
        again = _Turn(url, "killed", "req-again")
        saved = [e for e in again.end() if e["type"] == "saved"]
        assert saved and saved[-1]["revision"] == 2  # the lost turn is revision 1
        assert [m["content"] for m in _stopped_turn(url, "killed")] == ["hi", "hi", "again"]
        assert len(_stopped_turn(url, "untouched")) == 1
    finally:
        stop_serve(proc)


def test_sigterm_lets_running_turns_finish_then_the_parent_exits(tmp_path: Path, server: ScriptedServer) -> None:
    config = _slow_upstream(server, 2, 2)
    store = f"sqlite:///{tmp_path}/shared.db"
    proc, url = start_serve(tmp_path / "home", "--workers", "2", "--grace", "30", "--store", store, *config)
    try:
        turns = [_Turn(url, f"drain{i}", f"req-d{i}") for i in range(2)]
        for turn in turns:
            assert turn.partial.wait(30)
        workers = _workers(proc.pid)
        proc.send_signal(signal.SIGTERM)
        for turn in turns:
            events = turn.end()
            assert events[-1]["type"] == "saved", [e["type"] for e in events]  # finished, not cut
        assert proc.wait(timeout=30) == 0
        assert not any(Path(f"/proc/{pid}").exists() for pid in workers)
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{url}/healthz", timeout=2)
        with open_store(store) as opened:
            assert [opened.get(f"drain{i}").session.messages[1].content for i in range(2)] == ["Hello", "Hello"]
    finally:
        if proc.poll() is None:
            stop_serve(proc)


def test_auto_and_bad_worker_counts(tmp_path: Path) -> None:
    import subprocess
    import sys

    bad = subprocess.run([sys.executable, "-m", "agent_core.cli", "serve", "--workers", "0"], capture_output=True,
                         text=True, env={**os.environ, "AGENT_CORE_HOME": str(tmp_path)}, timeout=60)
    assert bad.returncode == 2 and "--workers must be at least 1" in bad.stderr
    proc, url = start_serve(tmp_path / "home", "--workers", "auto", "--store",
                            f"sqlite:///{tmp_path}/{uuid.uuid4().hex}.db")
    try:
        expected = len(os.sched_getaffinity(0))
        if expected == 1:
            pytest.skip("one core: auto serves in one process")
        assert len(_wait_for_workers(proc.pid, expected)) == expected
    finally:
        stop_serve(proc)


def _spread_chats(url: str, count: int) -> None:
    """``count`` chat completions at once, each on a connection of its own: the kernel spreads them over the workers."""
    statuses: list[int] = []

    def chat() -> None:
        with httpx.Client() as fresh:
            statuses.append(fresh.post(f"{url}/v1/chat/completions", timeout=30, json={
                "model": "echo", "messages": [{"role": "user", "content": "hi"}]}).status_code)

    threads = [threading.Thread(target=chat) for _ in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert statuses == [200] * count


def _scraped_chats(url: str, token: str) -> tuple[dict[str, float], str]:
    """One scrape on a fresh connection: chat completions counted per worker, and the body."""
    from prometheus_client.parser import text_string_to_metric_families

    with httpx.Client() as fresh:
        scraped = fresh.get(f"{url}/metrics", headers={"authorization": f"Bearer {token}"}, timeout=10)
    assert scraped.status_code == 200
    counts: dict[str, float] = {}
    for family in text_string_to_metric_families(scraped.text):  # the parser refuses a badly merged body
        for sample in family.samples:
            if sample.name == "http_server_request_duration_seconds_count" \
                    and sample.labels.get("http_route") == "/v1/chat/completions":
                counts[sample.labels["worker"]] = counts.get(sample.labels["worker"], 0) + sample.value
    return counts, scraped.text


def test_every_scrape_holds_both_workers_numbers(tmp_path: Path) -> None:
    """Requests spread over two workers; each scrape, whichever worker takes it, holds both workers' series,
    whose counts add up to the requests made so far and never go down."""
    token = "scrape-token-0123456789"
    proc, url = start_serve(tmp_path / "home", "--workers", "2", "--admin-token", token,
                            "--store", f"sqlite:///{tmp_path}/shared.db")
    try:
        made = 0
        for _ in range(20):  # until the kernel has handed each worker some (the first batch, nearly always)
            _spread_chats(url, 8)
            made += 8
            counts, _ = _scraped_chats(url, token)
            assert sum(counts.values()) == made
            if len(counts) == 2:
                break
        assert set(counts) == {"0", "1"}
        for _ in range(3):
            _spread_chats(url, 5)
            made += 5
            for _ in range(4):
                now, body = _scraped_chats(url, token)
                assert set(now) == {"0", "1"} and sum(now.values()) == made
                assert all(now[worker] >= counts[worker] for worker in counts)  # no worker's count goes back
                assert "agent_core_workers_scraped 2" in body and "did not answer" not in body
                assert body.count("# TYPE http_server_request_duration_seconds histogram") == 1  # merged, not stacked
                counts = now
        assert httpx.get(f"{url}/metrics", timeout=10).status_code == 401
    finally:
        stop_serve(proc)


def test_a_budget_holds_over_two_workers(tmp_path: Path, server: ScriptedServer) -> None:
    """Each request costs 0.02 dollars; a budget of 0.1; sixteen sent at once over the two workers."""
    for _ in range(16):
        server.enqueue(json_reply({
            "id": "c1", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}}))
    token = "budget-token-0123456789"
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(f'[[tenants]]\nname = "b"\ntoken = "{token}"\nlimits = {{ budget_usd = 0.1 }}\n')
    store = f"sqlite:///{tmp_path}/shared.db"
    proc, url = start_serve(tmp_path / "home", "--workers", "2", "--store", store, "--tokens-file", str(tokens),
                            "-c", f"base_url={server.url}/v1", "-c", "api_key=sk-x", "-c", "max_retries=0",
                            "-c", 'prices={"m": {"input": 1000, "output": 1000}}')
    statuses: list[int] = []

    def send() -> None:
        for _ in range(5):
            with httpx.Client() as fresh:
                status = fresh.post(f"{url}/v1/chat/completions", timeout=30,
                                    headers={"authorization": f"Bearer {token}"},
                                    json={"model": "openai/m", "messages": [{"role": "user", "content": "hi"}]}
                                    ).status_code
            if status != 429:
                break
            time.sleep(0.05)
        statuses.append(status)

    try:
        threads = [threading.Thread(target=send) for _ in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        stop_serve(proc)
    from agent_core.store.tenant_ledger import TenantLedger

    ledger = TenantLedger(store)
    (use,) = ledger.usage()
    ledger.close()
    assert use.spent_usd <= 0.1 + 0.02 + 1e-9 and use.spent_usd >= 0.1
    assert statuses.count(200) == use.requests == len(server.requests) and 402 in statuses
