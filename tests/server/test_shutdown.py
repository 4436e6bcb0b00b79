"""SIGTERM: running requests get the grace period, then are cancelled; a cancelled turn is still saved."""

from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path

import httpx
import pytest
from agent_core.store import open_store
from providers._server import Delay, ScriptedServer, sse_reply
from providers._wire import OA_DONE, oa_chunk

from ._live import start_serve, stop_serve


@pytest.fixture
def upstream(server: ScriptedServer) -> ScriptedServer:
    """The model API the facade talks to: the shared loopback ``server`` fixture."""
    return server


@pytest.mark.slow
def test_sigterm_cancels_a_turn_after_the_grace_period_and_saves_it(tmp_path: Path, upstream: ScriptedServer) -> None:
    upstream.enqueue(sse_reply(oa_chunk({"role": "assistant", "content": ""}), oa_chunk({"content": "Hel"}),
                               Delay(60), oa_chunk({}, "stop"), OA_DONE))
    proc, url = start_serve(tmp_path, "--grace", "1", "-c", f"base_url={upstream.url}/v1", "-c", "api_key=sk-x",
                            "-c", "max_retries=0")
    events: list[dict] = []
    partial = threading.Event()

    def turn() -> None:
        body = {"message": "hi", "config": {"provider": "openai", "model": "m"}}
        try:
            with httpx.stream("POST", f"{url}/v1/sessions/late/turns", json=body, timeout=60) as r:
                for line in r.iter_lines():
                    if line.startswith("data: "):
                        events.append(json.loads(line[6:]))
                        if events[-1]["type"] == "partial":
                            partial.set()
        except httpx.HTTPError:
            pass  # the server closed the connection at the end of its grace period

    t = threading.Thread(target=turn)
    t.start()
    try:
        assert partial.wait(30)
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        # uvicorn shuts down gracefully, then re-raises the signal: the exit status says SIGTERM
        assert proc.wait(timeout=30) in (0, -signal.SIGTERM)
        assert time.monotonic() - started < 25  # not the upstream's 60 s
    finally:
        if proc.poll() is None:
            stop_serve(proc)
        t.join(timeout=30)
    with open_store(f"sqlite:///{tmp_path}/sessions.db") as store:
        stored = store.get("late")
    assert stored.session.messages[0].content == "hi"
