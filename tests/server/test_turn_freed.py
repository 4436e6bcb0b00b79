"""A finished facade request is freed when it ends, not left for the cyclic garbage collector.

The turn's disconnect watcher, once cancelled, holds a traceback through its own frame back to
the turn; while the turn also held the watcher, every request's graph (session, plugins, the
upstream response) stayed in a reference cycle until a collection found it: about 5 % of the
server's CPU at full load. With the collector off, no finished turn may still be alive.
"""

from __future__ import annotations

import gc
import time

import httpx
import pytest

pytest.importorskip("starlette", reason="agent-core serve needs the server extra")

from agent_core import AgentCore
from agent_core.server import create_app
from agent_core.server.facades.runner import FacadeTurn

from ._live import running

pytestmark = pytest.mark.slow  # it runs many turns with the collector off: the tier `pytest -m slow`


def _turns_alive() -> int:
    return sum(1 for o in gc.get_objects() if isinstance(o, FacadeTurn))


@pytest.mark.parametrize("stream", [False, True])
def test_finished_turns_are_freed_without_the_cycle_collector(stream: bool) -> None:
    with running(create_app(core=AgentCore.discover(), store=object())) as url:
        body = {"model": "echo", "messages": [{"role": "user", "content": "hi"}], "stream": stream}
        httpx.post(f"{url}/v1/chat/completions", json=body, timeout=30)  # warm-up
        gc.collect()
        gc.disable()
        try:
            for _ in range(6):
                r = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=30)
                assert r.status_code == 200 and "Echo" in r.text
            deadline = time.monotonic() + 5
            while _turns_alive() and time.monotonic() < deadline:  # a cancelled watcher ends a loop turn later
                time.sleep(0.05)
            assert _turns_alive() == 0
        finally:
            gc.enable()
