"""A client that stops reading holds its stream where it is; the server does not read on for it.

The upstream here never ends its answer and sends as fast as it is read; the client opens a
stream, reads its first bytes, then reads nothing more while keeping the connection open. What
the upstream managed to send must stop growing once the sockets' buffers are full: the turn
waits at its next event instead of pulling the upstream into the server's memory (a hostile
or broken model server could otherwise grow ``serve`` without bound). Both routes that stream
are covered: a sessions turn (whose turn runs in a task of its own) and the Chat Completions
facade with several choices (whose streams are merged).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason="agent-core serve needs the server extra")

from agent_core.server import create_app
from agent_core.store import open_store

from ._live import running


class Endless:
    """An OpenAI-style upstream whose every answer streams text for ever; counts the bytes it got out."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sent = 0
        self.stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            head = b""
            while b"\r\n\r\n" not in head:
                head += conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                         b"transfer-encoding: chunked\r\n\r\n")
            delta = {"choices": [{"index": 0, "delta": {"content": "x" * 40}, "finish_reason": None}],
                     "id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
            event = b"data: " + json.dumps(delta).encode() + b"\n\n"
            frame = b"%x\r\n%s\r\n" % (len(event) * 20, event * 20)
            try:
                while not self.stop.is_set():
                    conn.sendall(frame)
                    self.sent += len(frame)
            except OSError:
                return

    def close(self) -> None:
        self.stop.set()
        self.sock.close()


@pytest.fixture
def upstream() -> Iterator[Endless]:
    up = Endless()
    yield up
    up.close()


def _open_and_stop_reading(url: str, path: str, body: dict[str, Any]) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
    data = json.dumps(body).encode()
    sock.sendall(b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n"
                 b"content-length: %d\r\n\r\n%s" % (path.encode(), len(data), data))
    got = sock.recv(4096)
    assert got.startswith(b"HTTP/1.1 200"), got[:300]
    return sock


def _settles(upstream: Endless, seconds: float = 8.0) -> tuple[bool, int]:
    """Whether what the upstream got out stops growing (under 512 KB in half a second) within ``seconds``.

    Filling every buffer on the way takes milliseconds on an idle machine and longer on a busy
    one, so the test waits for the growth to stop rather than for a fixed time. A server that
    reads on for a client that does not never settles: it pulls megabytes every half second.
    """
    deadline = time.monotonic() + seconds
    last, growth = upstream.sent, 0
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = upstream.sent
        growth, last = now - last, now
        if growth < 512 * 1024:
            return True, growth
    return False, growth


@pytest.mark.parametrize("route", ["sessions turn", "chat completions, n=2"])
def test_an_unread_stream_stops_pulling_the_upstream(upstream: Endless, tmp_path: Path, route: str) -> None:
    store = open_store(f"sqlite:///{tmp_path / 's.db'}")
    config = {"provider": "openai", "base_url": upstream.url, "api_key": "sk-upstream", "model": "m"}
    try:
        with running(create_app(store=store, config=config)) as url:
            if route == "sessions turn":
                sock = _open_and_stop_reading(url, "/v1/sessions/s1/turns", {"message": "hi"})
            else:
                sock = _open_and_stop_reading(url, "/v1/chat/completions", {
                    "model": "m", "n": 2, "stream": True, "messages": [{"role": "user", "content": "hi"}]})
            with sock:
                settled, growth = _settles(upstream)
                assert upstream.sent > 0  # it did stream
                assert settled, f"the upstream still sent {growth} bytes in half a second to a stream nobody reads"
    finally:
        store.close()
