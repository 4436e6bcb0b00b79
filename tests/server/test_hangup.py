"""``watch_hangup``: a client that hangs up mid-request is noticed, by the connection under ``agent-core serve``.

Each case runs against two real servers on 127.0.0.1: uvicorn with the protocol ``agent-core
serve`` uses (which offers ``ON_HANGUP``, so no task waits per request) and uvicorn with its own
protocol (where a task waits on ``receive``). Both must call back once the client is gone, and
neither may call back once the route stopped watching.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("uvicorn", reason="agent-core serve needs the server extra")

from agent_core.server.http.wire import ON_HANGUP, watch_hangup
from starlette.requests import Request

from ._live import running


class Seen:
    def __init__(self) -> None:
        self.gone = threading.Event()  # set by the callback
        self.watching = threading.Event()  # the route has started (or stopped) watching
        self.offered: list[bool] = []  # whether the connection offered ON_HANGUP


SEEN: dict[str, Seen] = {}


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """``/<key>/watch``: watch, then wait; ``/<key>/stop``: watch, stop at once, then wait; ``/<key>/late``: wait
    for the client to go first, then watch."""
    if scope["type"] != "http":
        return
    _, key, how = scope["path"].split("/")
    seen = SEEN[key]
    request = Request(scope, receive)
    await request.body()
    seen.offered.append(ON_HANGUP in scope.get("extensions", {}))
    if how == "late":
        await asyncio.sleep(1.0)  # the client hangs up meanwhile
    stop = watch_hangup(request, seen.gone.set)
    if how == "stop":
        stop()
    seen.watching.set()
    for _ in range(40):  # no answer for 2 s: the client hangs up first
        if seen.gone.is_set():
            break
        await asyncio.sleep(0.05)
    stop()
    await send({"type": "http.response.start", "status": 204, "headers": []})
    await send({"type": "http.response.body", "body": b""})


@pytest.fixture(scope="module", params=["serve's protocol", "uvicorn's protocol"])
def server(request: pytest.FixtureRequest) -> Iterator[tuple[str, bool]]:
    ours = request.param == "serve's protocol"
    with running(app, header_timeout_s=10.0 if ours else None) as url:
        yield url, ours


def _hang_up_during(url: str, path: str, *, wait_for_watch: bool = True) -> Seen:
    key = f"k{len(SEEN)}"
    seen = SEEN[key] = Seen()
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(f"GET /{key}/{path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        if wait_for_watch:
            assert seen.watching.wait(10)
        else:
            time.sleep(0.3)  # the request has reached the app, which has not watched yet
    return seen


def test_a_client_that_hangs_up_is_noticed(server: tuple[str, bool]) -> None:
    url, ours = server
    seen = _hang_up_during(url, "watch")
    assert seen.gone.wait(5)
    assert seen.offered == [ours]  # serve's connection watches itself; uvicorn's leaves it to a task


def test_nothing_is_called_once_the_route_stopped_watching(server: tuple[str, bool]) -> None:
    url, _ = server
    seen = _hang_up_during(url, "stop")
    assert not seen.gone.wait(1.0)


def test_watching_after_the_client_went_calls_back_at_once(server: tuple[str, bool]) -> None:
    url, _ = server
    seen = _hang_up_during(url, "late", wait_for_watch=False)
    assert seen.gone.wait(5)
