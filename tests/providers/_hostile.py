"""What the hostile-upstream cases share: the bytes an upstream sends, provider calls to drive, the fixtures.

Every case runs on both transports (the autouse ``transport`` fixture): agent-core's
own and stock httpx's. Imported by ``test_hostile_upstream.py`` and ``test_hostile_routes.py``.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from agent_core_providers._routing import TRANSPORT_ENV, TRANSPORTS
from agent_core_providers.openai import OpenAIProvider

from ._driver import arun_turn, run_turn
from ._raw import RawServer, serving
from ._wire import OA_DONE, oa_chunk
from .conftest import run_async

__all__ = ["KEY", "LAST_CHUNK", "MODES", "SSE_HEAD", "USER", "calls", "cancel_when", "chunk", "config", "events",
           "no_proxy_env", "streamed", "transport", "upstream"]

KEY = "sk-hostile-0123456789abcdef"
USER = [{"role": "user", "content": "hi"}]

MODES = pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])


@pytest.fixture(autouse=True, params=TRANSPORTS)
def transport(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every case runs on both transports: agent-core's own and stock httpx's."""
    monkeypatch.setenv(TRANSPORT_ENV, request.param)
    return request.param


@pytest.fixture
def upstream() -> Iterator[RawServer]:
    yield from serving()


# -- the bytes an upstream sends ---------------------------------------------------------------------


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


SSE_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
LAST_CHUNK = b"0\r\n\r\n"


def events(text: str) -> bytes:
    """A whole answer's events, each in a chunk of its own, without the last chunk."""
    return b"".join(chunk(e) for e in (oa_chunk({"content": text}), oa_chunk({}, "stop"), OA_DONE))


def streamed(text: str) -> tuple[Any, ...]:
    """One complete streamed answer, sent at once."""
    return (SSE_HEAD + events(text) + LAST_CHUNK,)


# -- driving provider calls -----------------------------------------------------------------------------


def config(upstream: RawServer, **extra: Any) -> dict[str, Any]:
    return {"base_url": f"{upstream.url}/v1", "api_key": KEY, "model": "m", "max_retries": 0, **extra}


def calls(upstream: RawServer, use_async: bool, n: int, *, provider: Any = None, messages: Any = USER,
          pause: float = 0.0, **cfg: Any) -> list[Any]:
    """``n`` streamed calls one after the other on one pool: each call's text, or the error it raised.

    ``pause``: seconds between two calls.
    """
    provider = provider or OpenAIProvider()

    def outcome(turn: Any) -> Any:
        return turn.finals[0]["content"]

    if use_async:
        async def all_calls() -> list[Any]:
            out: list[Any] = []
            for i in range(n):
                if i and pause:
                    await asyncio.sleep(pause)
                try:
                    out.append(outcome(await arun_turn(provider, [], messages, config(upstream, **cfg),
                                                       request_id=f"req-{i}")))
                except Exception as exc:  # noqa: BLE001 - the outcome under test
                    out.append(exc)
            return out

        return run_async(all_calls)
    out: list[Any] = []
    for i in range(n):
        if i and pause:
            time.sleep(pause)
        try:
            out.append(outcome(run_turn(provider, [], messages, config(upstream, **cfg), request_id=f"req-{i}")))
        except Exception as exc:  # noqa: BLE001
            out.append(exc)
    return out


def cancel_when(upstream: RawServer, provider: Any, request_id: str, requests: int) -> threading.Thread:
    """Cancel ``request_id`` once the server has seen ``requests`` requests and a little time passed."""

    def run() -> None:
        for _ in range(500):
            if len(upstream.requests) >= requests:
                break
            time.sleep(0.01)
        time.sleep(0.1)
        provider.cancel_request(request_id)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.fixture
def no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No proxy variable of the machine running the tests leaks into a case."""
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
