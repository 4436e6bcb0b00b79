"""Cancels and approval answers sent to the server that does not run the request reach the one that does.

Two servers built by ``create_app`` on one store, each with its own relay (Unix sockets
beside an SQLite file; LISTEN/NOTIFY on PostgreSQL), each behind a uvicorn of its own:
a turn runs on one and its client's answers go to the other.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
from agent_core.server import ServeSettings, create_app
from agent_core.server.fleet.peers import approval_message
from agent_core.store import open_store
from browser._console_app import OPERATOR_CONFIG, build_core

from ._live import running
from .conftest import pg_schema_url


def _pair(url: str) -> Iterator[tuple[str, str]]:
    with ExitStack() as stack:
        bases = []
        for _ in range(2):
            store = open_store(url)
            stack.callback(store.close)
            app = create_app(build_core(), store, config=OPERATOR_CONFIG, cancel_url=url,
                             settings=ServeSettings(allow_config=("approval_timeout_s",)))
            bases.append(stack.enter_context(running(app, lifespan="on")))
        yield bases[0], bases[1]


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])
def pair(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    url = f"sqlite:///{tmp_path}/shared.db" if request.param == "sqlite" else pg_schema_url(
        request.getfixturevalue("pg"))
    yield from _pair(url)


class _Turn:
    """A sessions-API turn that asks for approvals, read on a thread."""

    def __init__(self, base: str, sid: str, rid: str) -> None:
        self.frames: list[dict[str, Any]] = []
        self._thread = threading.Thread(target=self._read, args=(base, sid, rid), daemon=True)
        self._thread.start()

    def _read(self, base: str, sid: str, rid: str) -> None:
        with httpx.stream("POST", f"{base}/v1/sessions/{sid}/turns?approvals=ask", json={"message": "calculate"},
                          headers={"x-request-id": rid}, timeout=30) as answer:
            for line in answer.iter_lines():
                if line.startswith("data: "):
                    self.frames.append(json.loads(line[6:]))

    def wait_for(self, kind: str) -> dict[str, Any]:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            for frame in list(self.frames):
                if frame["type"] == kind:
                    return frame
            time.sleep(0.02)
        raise AssertionError(f"no {kind} frame in {[f['type'] for f in self.frames]}")

    def end(self) -> list[dict[str, Any]]:
        self._thread.join(timeout=20)
        assert not self._thread.is_alive()
        return self.frames


def test_an_approval_sent_to_the_other_server_runs_the_tool(pair: tuple[str, str]) -> None:
    here, other = pair
    turn = _Turn(here, "approve-far", "req-far")
    turn.wait_for("approval")
    answered = httpx.post(f"{other}/v1/requests/req-far/approvals/call_1", json={"decision": "allow"}, timeout=10)
    assert answered.status_code == 204, answered.text
    frames = turn.end()
    assert next(f for f in frames if f["type"] == "tool_result")["message"]["content"] == "Result: 6 * 7 = 42"
    assert frames[-1]["type"] == "saved"
    again = httpx.post(f"{other}/v1/requests/req-far/approvals/call_1", json={"decision": "deny"}, timeout=10)
    assert again.status_code == 404
    assert "any server process on this store" in again.json()["error"]["message"]


def test_a_denial_sent_to_the_other_server_keeps_the_tool_from_running(pair: tuple[str, str]) -> None:
    here, other = pair
    turn = _Turn(here, "deny-far", "req-deny")
    turn.wait_for("approval")
    assert httpx.post(f"{other}/v1/requests/req-deny/approvals/call_1", json={"decision": "deny"},
                      timeout=10).status_code == 204
    frames = turn.end()
    assert "Result: 6 * 7 = 42" not in json.dumps(frames)
    assert frames[-1]["type"] == "saved"


def test_a_cancel_sent_to_the_other_server_stops_a_turn_waiting_for_approval(pair: tuple[str, str]) -> None:
    here, other = pair
    turn = _Turn(here, "cancel-far", "req-cancel")
    turn.wait_for("approval")
    started = time.monotonic()
    assert httpx.delete(f"{other}/v1/requests/req-cancel", timeout=10).status_code == 204
    frames = turn.end()
    assert time.monotonic() - started < 5  # not the approval's 300 s
    done = [f for f in frames if f["type"] == "done"]
    assert done and done[-1]["outcome"]["reason"] == "cancelled"
    assert httpx.delete(f"{other}/v1/requests/req-cancel", timeout=10).status_code == 404


def test_answers_for_another_tenant_or_an_unknown_call_do_not_land(pair: tuple[str, str]) -> None:
    here, other = pair
    turn = _Turn(here, "wrong-call", "req-wrong")
    turn.wait_for("approval")
    wrong = httpx.post(f"{other}/v1/requests/req-wrong/approvals/call_9", json={"decision": "allow"}, timeout=10)
    assert wrong.status_code == 404
    assert httpx.delete(f"{here}/v1/requests/req-wrong", timeout=10).status_code == 204
    turn.end()


def test_a_call_id_with_a_control_character_does_not_travel() -> None:
    assert approval_message("t/r", "call\n1", "allow") is None
    assert approval_message("t/r", "call_1", "allow") == "\x1fapprove\x1fallow\x1ft/r\x1fcall_1"


def test_a_dead_process_socket_is_swept_and_does_not_hold_a_cancel_up(tmp_path: Path) -> None:
    import socket

    url = f"sqlite:///{tmp_path}/shared.db"
    with open_store(url) as store:
        app = create_app(build_core(), store, config=OPERATOR_CONFIG, cancel_url=url)
        relay = _server_of(app).relay
        relay.directory.mkdir(mode=0o700, parents=True, exist_ok=True)  # as the process before made it
        stale = relay.directory / "999999-dead.sock"
        with socket.socket(socket.AF_UNIX) as sock:  # bound, never listening, then closed: what a SIGKILL leaves
            sock.bind(str(stale))
        with running(app, lifespan="on") as here:
            started = time.monotonic()
            gone = httpx.delete(f"{here}/v1/requests/nobody", timeout=10)
            assert gone.status_code == 404, gone.text
            assert time.monotonic() - started < 1.5
            assert not stale.exists()


def test_a_socket_directory_another_user_could_write_in_is_refused(tmp_path: Path) -> None:
    """Made first by someone else beside a database in a shared place, it could hold their socket, asked every cancel."""
    import asyncio
    import os

    from agent_core.server.fleet.peers import LocalRelay

    planted = tmp_path / "shared.db.peers"
    planted.mkdir()
    os.chmod(planted, 0o777)
    relay = LocalRelay(planted, lambda message: False)
    with pytest.raises(PermissionError, match="shared.db.peers must be a directory of this user's"):
        asyncio.run(relay.start())
    assert list(planted.iterdir()) == []  # no socket of ours in it
    os.chmod(planted, 0o700)

    async def start_and_close() -> bool:
        await relay.start()
        listening = relay.path.exists()
        await relay.close()
        return listening

    assert asyncio.run(start_and_close())  # the same directory, made private, is taken


def _server_of(app: Any) -> Any:
    while not hasattr(app, "state"):
        app = app.app
    return app.state.server
