"""A streamed body's middle parts are framed by the server's protocol, not h11: same bytes, fewer h11 calls.

Each case sends one raw request to two real servers on 127.0.0.1: uvicorn with its own
HTTP/1.1 protocol, and uvicorn with the protocol ``agent-core serve`` uses. The bytes that come
back must be the same (less the ``date`` header); and on a long chunked body h11 must be
asked to frame only the head and the end.
"""

from __future__ import annotations

import asyncio
import re
import socket
from collections.abc import Iterator
from typing import Any

import h11
import pytest

pytest.importorskip("uvicorn", reason="agent-core serve needs the server extra")

from ._live import running

PARTS = [b"data: one\n\n", b"", b"x" * 5000, b"data: \xc3\xa9\n\n"] + [b"%d" % i for i in range(200)]


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """``/chunked``: a streamed body of PARTS; ``/sized``: the same with a Content-Length; ``/empty``: a 204."""
    if scope["type"] != "http":
        return
    path = scope["path"]
    headers = [(b"content-type", b"text/event-stream")]
    whole = b"".join(PARTS) + b"end"
    if path == "/sized":
        headers.append((b"content-length", b"%d" % len(whole)))
    if path == "/empty":
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    for part in PARTS:
        await send({"type": "http.response.body", "body": part, "more_body": True})
    await send({"type": "http.response.body", "body": b"end"})


def _exchange(base: str, raw: bytes) -> bytes:
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(raw)
        got = b""
        while chunk := sock.recv(65536):
            got += chunk
    return re.sub(rb"(?im)^date: [^\r\n]*\r\n", b"", got)


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[str, str]]:
    with running(app, header_timeout_s=None) as plain, running(app) as ours:
        yield plain, ours


REQUESTS = {
    "chunked, HTTP/1.1": b"GET /chunked HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    "HTTP/1.0 (read until close)": b"GET /chunked HTTP/1.0\r\nHost: x\r\n\r\n",
    "HEAD": b"HEAD /chunked HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    "sized": b"GET /sized HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    "204": b"GET /empty HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    "two on one connection": (b"GET /chunked HTTP/1.1\r\nHost: x\r\n\r\n"
                              b"GET /chunked HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
}


@pytest.mark.parametrize("name", list(REQUESTS))
def test_the_bytes_are_uvicorns(servers: tuple[str, str], name: str) -> None:
    plain, ours = servers
    expected = _exchange(plain, REQUESTS[name])
    assert expected.startswith(b"HTTP/1.1 ")
    assert _exchange(ours, REQUESTS[name]) == expected


def test_a_chunked_body_is_whole_to_a_client(servers: tuple[str, str]) -> None:
    _, ours = servers
    got = _exchange(ours, REQUESTS["two on one connection"])
    client = h11.Connection(h11.CLIENT)
    client.send(h11.Request(method="GET", target="/chunked", headers=[("Host", "x")]))
    client.send(h11.EndOfMessage())
    client.receive_data(got)
    bodies, body = [], b""
    while True:
        event = client.next_event()
        if isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage):
            bodies.append(body)
            body = b""
            if len(bodies) == 2:
                break
            client.start_next_cycle()
            client.send(h11.Request(method="GET", target="/chunked", headers=[("Host", "x")]))
            client.send(h11.EndOfMessage())
        elif event is h11.NEED_DATA:
            raise AssertionError(f"the response was cut: {len(bodies)} whole bodies")
    assert bodies == [b"".join(PARTS) + b"end"] * 2


def test_h11_frames_only_the_head_and_the_end(servers: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    plain, ours = servers
    sent: list[str] = []
    real = h11.Connection.send

    def counting(self: h11.Connection, event: Any) -> Any:
        sent.append(type(event).__name__)
        return real(self, event)

    monkeypatch.setattr(h11.Connection, "send", counting)
    _exchange(plain, REQUESTS["chunked, HTTP/1.1"])
    assert sent.count("Data") == len(PARTS) + 1  # uvicorn's own: every part through h11
    sent.clear()
    _exchange(ours, REQUESTS["chunked, HTTP/1.1"])
    assert sent.count("Data") == 1  # the last part only
    assert sent[0] == "Response" and "EndOfMessage" in sent


# -- the facades' streamed responses: middle parts skip the send wrappers ------------------------

from agent_core.server.http.event_stream import BODY_SEND, WHOLE_BATCH, EventStreamResponse, Pushed  # noqa: E402

SEEN: list[str] = []  # what the wrapping middleware saw of each response's messages


async def _parts() -> Any:
    for part in PARTS:
        yield part


async def streaming_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """A middleware that wraps ``send`` (as starlette's and the access log do), around an EventStreamResponse."""
    if scope["type"] != "http":
        return

    async def noting(message: Any) -> None:
        SEEN.append(message["type"] + ("+more" if message.get("more_body") else ""))
        await send(message)

    SEEN.append("offered" if BODY_SEND in (scope.get("extensions") or {}) else "not offered")
    # "/batched": as the facades' relay sent theirs, a body that sends its own parts, each a whole batch;
    # "/written" and "/flood": as the relay does now, each part offered to the connection's write first
    pushers = {"/batched": _pushed, "/written": _written, "/flood": _flood}
    content = Pushed(pushers[scope["path"]]) if scope["path"] in pushers else _parts()
    await EventStreamResponse(content, media_type="text/event-stream")(scope, receive, noting)


async def _pushed(send: Any, write: Any) -> None:
    for part in PARTS:
        await send({"type": "http.response.body", "body": part, "more_body": True, WHOLE_BATCH: True})


WAYS: list[str] = []  # how each part of a written body left: "write" or "send"
FLOOD = [bytes([65 + i % 26]) * 65536 for i in range(256)]  # 16 MiB, more than a socket buffers


async def _offered(send: Any, write: Any, parts: list[bytes], *, pace: bool = False) -> None:
    WAYS.append("offered" if write is not None else "not offered")
    for part in parts:
        if pace:  # as the relay waits for the upstream between batches: the loop runs its writes
            await asyncio.sleep(0)
        if write is not None and write(part):
            WAYS.append("write")
        else:
            WAYS.append("send")
            await send({"type": "http.response.body", "body": part, "more_body": True, WHOLE_BATCH: True})


async def _written(send: Any, write: Any) -> None:
    await _offered(send, write, PARTS)


async def _flood(send: Any, write: Any) -> None:
    await _offered(send, write, FLOOD, pace=True)


@pytest.fixture(scope="module")
def streaming_servers() -> Iterator[tuple[str, str]]:
    with running(streaming_app, header_timeout_s=None) as plain, running(streaming_app) as ours:
        yield plain, ours


@pytest.mark.parametrize("name", ["chunked, HTTP/1.1", "HTTP/1.0 (read until close)", "HEAD", "two on one connection"])
def test_a_streamed_response_sends_its_middle_parts_past_the_wrappers(
        streaming_servers: tuple[str, str], name: str) -> None:
    plain, ours = streaming_servers
    responses = 2 if name == "two on one connection" else 1
    SEEN.clear()
    expected = _exchange(plain, REQUESTS[name])
    assert SEEN[0] == "not offered"
    assert SEEN.count("http.response.body+more") == len(PARTS) * responses  # every part through the wrapper
    SEEN.clear()
    assert _exchange(ours, REQUESTS[name]) == expected  # the same bytes
    # the wrapper still sees each response start and end, and no part in between
    assert SEEN == ["offered", "http.response.start", "http.response.body"] * responses


def test_a_batched_response_writes_its_middle_parts_at_once(
        streaming_servers: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_core.server.http.uvicorn_tuning.coalesce import CoalescingTransport

    alone: list[bytes] = []
    write_alone = CoalescingTransport.write_alone

    def counting(self: CoalescingTransport, data: bytes) -> None:
        alone.append(data)
        write_alone(self, data)

    monkeypatch.setattr(CoalescingTransport, "write_alone", counting)
    plain, ours = streaming_servers
    request = REQUESTS["chunked, HTTP/1.1"]
    assert _exchange(ours, request.replace(b"/chunked", b"/batched")) == _exchange(plain, request)
    assert len(alone) == len([p for p in PARTS if p])  # every middle part but the empty one
    alone.clear()
    _exchange(ours, request)  # not batched: kept to the end of the turn, as any write
    assert alone == []


@pytest.mark.parametrize("name", ["chunked, HTTP/1.1", "HTTP/1.0 (read until close)", "HEAD", "two on one connection"])
def test_a_written_body_takes_the_direct_write_only_where_the_connection_frames_it(
        streaming_servers: tuple[str, str], name: str) -> None:
    plain, ours = streaming_servers
    request = REQUESTS[name].replace(b"/chunked", b"/written")
    responses = 2 if name == "two on one connection" else 1
    WAYS.clear()
    expected = _exchange(plain, request)
    assert WAYS == ["not offered", *["send"] * len(PARTS)] * responses
    WAYS.clear()
    assert _exchange(ours, request) == expected  # the same bytes as uvicorn's own, whichever way
    # the connection frames a chunked HTTP/1.1 body itself: every part written, no message sent;
    # HTTP/1.0 and HEAD bodies are h11's to frame, so every part is refused and sent
    direct = name in ("chunked, HTTP/1.1", "two on one connection")
    assert WAYS == ["offered", *[("write" if direct else "send")] * len(PARTS)] * responses


def test_a_written_body_goes_through_send_while_the_client_is_not_reading() -> None:
    import time

    with running(streaming_app) as ours:
        host, port = ours.removeprefix("http://").split(":")
        WAYS.clear()
        with socket.socket() as sock:
            # a small receive window, fixed before connecting (no autotuning): the kernel cannot take the flood
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
            sock.settimeout(30)
            sock.connect((host, int(port)))
            sock.sendall(b"GET /flood HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            time.sleep(0.5)  # not reading: the socket's buffers fill and the transport pauses writing
            got = b""
            while chunk := sock.recv(1 << 20):
                got += chunk
    sent = WAYS.count("send")
    assert WAYS[0] == "offered" and WAYS.count("write") + sent == len(FLOOD)
    assert sent > 0  # refused while writing was paused: sent, and uvicorn waited for the client to drain
    client = h11.Connection(h11.CLIENT)
    client.send(h11.Request(method="GET", target="/flood", headers=[("Host", "x")]))
    client.send(h11.EndOfMessage())
    client.receive_data(got)
    client.receive_data(b"")
    body = b""
    while not isinstance(event := client.next_event(), (h11.EndOfMessage, h11.ConnectionClosed)):
        if isinstance(event, h11.Data):
            body += event.data
        assert event is not h11.NEED_DATA, "the response was cut"
    assert body == b"".join(FLOOD)  # every byte, in order
