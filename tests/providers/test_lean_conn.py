"""The pooled clients' HTTP/1.1 connections (``_lean_conn`` in ``_flat_pool``) against exact bytes on real sockets.

A raw-socket server on 127.0.0.1 writes the bytes each test scripts (one reply
per request, in the order requests arrive), counts the connections it accepts
and notes which connection carried each request, so a test sees whether a
connection was reused. Every test runs twice, through ``sync_client_for`` and
through ``async_client_for``: the test body is one coroutine, driven with a thin
adapter per mode (the sync client simply blocks the loop it runs in).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from typing import Any

import httpx
import pytest
from agent_core_providers._pool import (
    aclose_clients,
    async_client_for,
    close_clients,
    sync_client_for,
    transport_of,
)
from agent_core_providers.transport import flat_pool as _flat_pool

from ._raw import CLOSE, Hold, RawServer, serving

#: this module tests agent-core's own transport (tests/providers/conftest.py)
OUR_TRANSPORT_ONLY = True


@pytest.fixture
def server() -> Iterator[RawServer]:
    yield from serving()


# -- one test body, two clients ------------------------------------------------------------


async def _pieces(it: Iterable[bytes]) -> AsyncIterator[bytes]:
    for piece in it:
        yield piece


class _Sync:
    def __init__(self, url: str) -> None:
        self.url = url
        self.client = sync_client_for(url, 10.0)

    async def request(self, method: str = "GET") -> httpx.Response:
        return self.client.request(method, self.url + "/v1/x")

    @contextlib.asynccontextmanager
    async def stream(self, timeout: httpx.Timeout | None = None) -> AsyncIterator[AsyncIterator[bytes]]:
        kwargs = {} if timeout is None else {"timeout": timeout}
        with self.client.stream("GET", self.url + "/v1/x", **kwargs) as response:
            yield _pieces(response.iter_raw())

    async def close(self) -> None:
        close_clients()


class _Async:
    def __init__(self, url: str) -> None:
        self.url = url
        self.client = async_client_for(url, 10.0)

    async def request(self, method: str = "GET") -> httpx.Response:
        return await self.client.request(method, self.url + "/v1/x")

    @contextlib.asynccontextmanager
    async def stream(self, timeout: httpx.Timeout | None = None) -> AsyncIterator[AsyncIterator[bytes]]:
        kwargs = {} if timeout is None else {"timeout": timeout}
        async with self.client.stream("GET", self.url + "/v1/x", **kwargs) as response:
            yield response.aiter_raw()

    async def close(self) -> None:
        await aclose_clients()


Client = _Sync | _Async


def _pool(c: Client) -> Any:
    return transport_of(c.client).pool  # type: ignore[union-attr]


def _run(mode: str, server: RawServer, body: Callable[[Client], Awaitable[None]]) -> None:
    async def main() -> None:
        c = _Sync(server.url) if mode == "sync" else _Async(server.url)
        try:
            await body(c)
        finally:
            await c.close()

    asyncio.run(main())


modes = pytest.mark.parametrize("mode", ["sync", "async"])

CHUNKED = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n"
SIZED = b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world"
CHUNKED_HEAD = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"


# -- keep-alive and when it must not hold --------------------------------------------------


@modes
@pytest.mark.parametrize("reply", [CHUNKED, SIZED], ids=["chunked", "sized"])
def test_two_requests_reuse_one_connection(mode: str, server: RawServer, reply: bytes) -> None:
    server.script(reply, reply)

    async def body(c: Client) -> None:
        for _ in range(2):
            response = await c.request()
            assert response.status_code == 200
            assert response.content == b"hello world"
            assert _pool(c).connections == 1  # idle, back in the pool
        assert server.accepted == 1
        assert server.conns() == [1, 1]

    _run(mode, server, body)


@modes
def test_large_bodies_arrive_whole_over_many_reads(mode: str, server: RawServer) -> None:
    data = bytes(range(256)) * 4096  # 1 MiB, many times READ_SIZE
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (data[:300_000], data[300_000:]))
    server.script(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(data) + data,
                  CHUNKED_HEAD + chunks + b"0\r\n\r\n", SIZED)

    async def body(c: Client) -> None:
        assert (await c.request()).content == data
        assert (await c.request()).content == data
        assert (await c.request()).content == b"hello world"
        assert server.conns() == [1, 1, 1]

    _run(mode, server, body)


@modes
def test_large_request_bodies_leave_whole_and_in_order(mode: str, server: RawServer) -> None:
    small, big = b"{}", bytes(range(256)) * 4096  # big: 1 MiB, written as it is rather than joined
    edge = b"x" * (64 * 1024 + 1)  # just over one read's size
    server.script(SIZED, SIZED, SIZED)

    async def body(c: Client) -> None:
        for content in (big, small, edge):
            sent = c.client.post(c.url + "/v1/x", content=content)
            response = await sent if isinstance(c, _Async) else sent
            assert response.content == b"hello world"
        assert [w.split(b"\r\n\r\n", 1)[1] for w in server.wire] == [big, small, edge]
        assert server.conns() == [1, 1, 1]  # each ended cleanly: the connection carried the next

    _run(mode, server, body)


NOT_REUSABLE = {
    # the server keeps its side open: only the response says the connection is done
    "connection-close": (b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 5\r\n\r\nhello",),
    "connection-close-chunked": (CHUNKED_HEAD.replace(b"\r\n\r\n", b"\r\nConnection: keep-alive, Close\r\n\r\n")
                                 + b"5\r\nhello\r\n0\r\n\r\n",),
    "http-1.0": (b"HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhello",),
    "until-close": (b"HTTP/1.1 200 OK\r\n\r\nhel", b"lo", CLOSE),
    "bytes-after-sized": (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 200 OK\r\n",),
    "bytes-after-chunked": (CHUNKED_HEAD + b"5\r\nhello\r\n0\r\n\r\njunk",),
}


@modes
@pytest.mark.parametrize("reply", NOT_REUSABLE.values(), ids=NOT_REUSABLE.keys())
def test_a_connection_that_cannot_carry_another_request_is_not_reused(
        mode: str, server: RawServer, reply: tuple[Any, ...]) -> None:
    server.script(reply, SIZED)

    async def body(c: Client) -> None:
        response = await c.request()
        assert response.content == b"hello"
        assert _pool(c).connections == 0  # closed, not put back
        assert (await c.request()).content == b"hello world"
        assert server.conns() == [1, 2]

    _run(mode, server, body)


@modes
def test_bytes_after_a_bodiless_head_keep_its_connection_out_of_the_pool(mode: str, server: RawServer) -> None:
    # what follows a 204 in the same read answers nothing that was asked: the connection is done
    server.script((b"HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nbad",), SIZED)

    async def body(c: Client) -> None:
        async with c.stream():  # closed unread: nothing but the head's read saw those bytes
            pass
        assert _pool(c).connections == 0
        assert (await c.request()).content == b"hello world"
        assert server.conns() == [1, 2]

    _run(mode, server, body)


@modes
def test_informational_heads_before_the_response_are_skipped(mode: str, server: RawServer) -> None:
    early = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n"
    server.script((early, SIZED), (b"HTTP/1.1 100 Continue\r\n\r\n", CHUNKED))  # the second: written apart

    async def body(c: Client) -> None:
        response = await c.request()
        assert (response.status_code, response.content) == (200, b"hello world")
        response = await c.request()
        assert (response.status_code, response.content) == (200, b"hello world")
        assert server.conns() == [1, 1]

    _run(mode, server, body)


@modes
def test_head_204_and_304_have_no_body_and_keep_the_connection(mode: str, server: RawServer) -> None:
    server.script(
        b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n",
        b"HTTP/1.1 204 No Content\r\n\r\n",
        b"HTTP/1.1 304 Not Modified\r\nContent-Length: 11\r\n\r\n",
        SIZED,
    )

    async def body(c: Client) -> None:
        head = await c.request("HEAD")
        assert (head.status_code, head.headers["content-length"], head.content) == (200, "11", b"")
        assert (await c.request()).status_code == 204
        not_modified = await c.request()
        assert (not_modified.status_code, not_modified.content) == (304, b"")
        assert (await c.request()).content == b"hello world"  # read right after the bodiless ones
        assert server.conns() == [1, 1, 1, 1]
        assert [line.split(b" ")[0] for _, line in server.requests] == [b"HEAD", b"GET", b"GET", b"GET"]

    _run(mode, server, body)


# -- errors ---------------------------------------------------------------------------------


CUT_SHORT = {
    "sized": ((b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello", CLOSE), "received 5 bytes, expected 11"),
    "chunked-no-last-chunk": ((CHUNKED_HEAD + b"5\r\nhello\r\n", CLOSE), "incomplete chunked read"),
    "chunked-mid-data": ((CHUNKED_HEAD + b"b\r\nhello", CLOSE), "incomplete chunked read"),
    "chunked-mid-trailers": ((CHUNKED_HEAD + b"5\r\nhello\r\n0\r\nx: y\r\n", CLOSE), "incomplete chunked read"),
}


@modes
@pytest.mark.parametrize(("reply", "message"), CUT_SHORT.values(), ids=CUT_SHORT.keys())
def test_a_body_cut_short_is_an_error_and_its_connection_is_dropped(
        mode: str, server: RawServer, reply: tuple[Any, ...], message: str) -> None:
    server.script(reply, SIZED)

    async def body(c: Client) -> None:
        with pytest.raises(httpx.RemoteProtocolError, match=message):
            await c.request()
        assert _pool(c).connections == 0
        assert (await c.request()).content == b"hello world"
        assert server.conns() == [1, 2]

    _run(mode, server, body)


MALFORMED = {
    "status": (b"HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n", "status"),
    "not-http": (b"SSH-2.0-OpenSSH_9.6\r\n\r\n", "illegal status line"),
    "header-line": (b"HTTP/1.1 200 OK\r\nno colon here\r\nContent-Length: 0\r\n\r\n", "illegal header line"),
    "two-lengths": (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello", "conflicting"),
    "transfer-encoding": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nhello", "Transfer-Encoding"),
    "chunk-size": (CHUNKED_HEAD + b"5\r\nhello\r\nzz\r\nsecret\r\n0\r\n\r\n", "not a hexadecimal size"),
    "chunk-size-first": (CHUNKED_HEAD + b"0x5\r\nhello\r\n0\r\n\r\n", "not a hexadecimal size"),
    "chunk-crlf": (CHUNKED_HEAD + b"5\r\nhelloXY0\r\n\r\n", "not followed by CRLF"),
}


@modes
@pytest.mark.parametrize(("reply", "message"), MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_response_is_a_protocol_error_and_its_connection_is_dropped(
        mode: str, server: RawServer, reply: bytes, message: str) -> None:
    server.script(reply, SIZED)  # the server keeps the connection open: the error must not wait for its end

    async def body(c: Client) -> None:
        with pytest.raises(httpx.RemoteProtocolError, match=message) as info:
            await c.request()
        assert "secret" not in str(info.value)
        assert _pool(c).connections == 0
        assert (await c.request()).content == b"hello world"
        assert server.conns() == [1, 2]

    _run(mode, server, body)


# -- the server closes an idle connection --------------------------------------------------


@modes
@pytest.mark.parametrize("ending", ["closed", "unasked-bytes"])
def test_an_idle_connection_the_server_ended_is_replaced_without_an_error(
        mode: str, server: RawServer, ending: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # as a server whose keep-alive timeout ran out: not one that closes right after answers (test_hostile_upstream)
    monkeypatch.setattr(_flat_pool, "PROMPT_CLOSE", 0.0)
    in_pool = server.event()
    # keep-alive by its headers, then closed (or sent what nobody asked for) while idle in the pool
    server.script((SIZED, Hold(in_pool), CLOSE if ending == "closed" else b"HTTP/1.1 200 OK\r\n"), SIZED)

    async def body(c: Client) -> None:
        assert (await c.request()).content == b"hello world"
        in_pool.set()
        pool = _pool(c)
        idle = [conn for stack in pool._idle.values() for conn in stack]
        assert len(idle) == 1
        # wait until the client's side can see it (the async stream needs the loop to run for that)
        deadline = time.monotonic() + 5
        while not idle[0].network_stream.get_extra_info("is_readable"):
            assert time.monotonic() < deadline, "the client never saw the server's close"
            await asyncio.sleep(0.002)
        assert (await c.request()).content == b"hello world"  # no "Server disconnected" from the dead one
        assert server.conns() == [1, 2]
        assert server.holds == [True]
        assert _pool(c).connections == 1

    _run(mode, server, body)


# -- streaming ------------------------------------------------------------------------------


@modes
def test_a_stream_is_delivered_piece_by_piece(mode: str, server: RawServer) -> None:
    first_seen = server.event()
    server.script((CHUNKED_HEAD + b"5\r\nfirst\r\n", Hold(first_seen),
                   b"6\r\nsecond\r\n5\r\nthird\r\n0\r\n\r\n"), SIZED)

    async def body(c: Client) -> None:
        async with c.stream() as pieces:
            assert await anext(pieces) == b"first"  # before the server sent the rest
            first_seen.set()
            rest = [piece async for piece in pieces]
        assert rest == [b"second", b"third"]  # one piece per chunk, though one read held both
        assert server.holds == [True]
        assert (await c.request()).content == b"hello world"
        assert server.conns() == [1, 1]

    _run(mode, server, body)


@modes
def test_a_stalled_body_is_a_read_timeout(mode: str, server: RawServer) -> None:
    server.script((CHUNKED_HEAD + b"5\r\nhello\r\n", Hold(server.event())), SIZED)

    async def body(c: Client) -> None:
        got = []
        started = time.monotonic()
        with pytest.raises(httpx.ReadTimeout):
            async with c.stream(timeout=httpx.Timeout(10, read=0.2)) as pieces:
                async for piece in pieces:
                    got.append(piece)
        assert 0.15 < time.monotonic() - started < 1.5  # the 0.2 s of this request, not the client's 10 s
        assert got == [b"hello"]
        assert _pool(c).connections == 0
        assert (await c.request()).content == b"hello world"
        assert server.conns() == [1, 2]

    _run(mode, server, body)


@modes
def test_closing_a_response_before_its_end_drops_the_connection(mode: str, server: RawServer) -> None:
    release = server.event()
    server.script((CHUNKED_HEAD + b"5\r\nhello\r\n", Hold(release), b"5\r\nworld\r\n0\r\n\r\n"), SIZED)

    async def body(c: Client) -> None:
        async with c.stream() as pieces:
            assert await anext(pieces) == b"hello"
        assert _pool(c).connections == 0
        release.set()
        assert (await c.request()).content == b"hello world"
        assert server.conns() == [1, 2]

    _run(mode, server, body)


def test_threads_sharing_the_sync_pool_each_get_a_whole_answer_and_reuse_connections(server: RawServer) -> None:
    """The sync pool is shared by every thread of a process: its stacks change under a lock."""
    threads, each = 12, 15
    server.script(*([CHUNKED, SIZED] * (threads * each // 2)))
    client = sync_client_for(server.url, 10.0)
    bodies: list[bytes] = []
    errors: list[BaseException] = []
    start = threading.Barrier(threads)

    def work() -> None:
        start.wait()
        try:
            for _ in range(each):
                with client.stream("GET", server.url + "/v1/x") as response:
                    bodies.append(b"".join(response.iter_raw()))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    workers = [threading.Thread(target=work) for _ in range(threads)]
    try:
        for w in workers:
            w.start()
        for w in workers:
            w.join(30)
        assert errors == []
        assert bodies == [b"hello world"] * (threads * each)
        # never more connections than threads at once, and every one of them back in the pool
        assert server.accepted <= threads
        assert transport_of(client).pool.connections == server.accepted  # type: ignore[union-attr]
    finally:
        close_clients()
