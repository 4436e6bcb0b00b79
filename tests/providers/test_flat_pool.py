"""The async pooled clients' connection pool (``transport.flat_pool``): reuse, caps, dead sockets, constant work per request.

A real HTTP/1.1 server on 127.0.0.1 runs in the test's own event loop and counts
the connections it accepts; the clients are the providers' pooled ones.
"""

from __future__ import annotations

import asyncio
import contextlib

import httpcore
import pytest
from agent_core_providers._pool import aclose_clients, async_client_for, transport_of
from agent_core_providers.transport.flat_pool import SETTLE, FlatAsyncPool

#: this module tests agent-core's own transport (tests/providers/conftest.py)
OUR_TRANSPORT_ONLY = True

BODY = b"data: one\n\ndata: two\n\n"


class CountingServer:
    """Answers every request with a short chunked body; ``hold`` makes bodies wait for ``release``."""

    def __init__(self) -> None:
        self.accepted = 0
        self.writers: list[asyncio.StreamWriter] = []
        self.release = asyncio.Event()
        self.release.set()
        self.server: asyncio.Server | None = None

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        self.writers.append(writer)
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                await reader.readexactly(length)
                writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
                writer.write(b"%x\r\n%s\r\n" % (4, b"data"))
                await self.release.wait()
                writer.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(BODY), BODY))
                await writer.drain()

    def drop_all(self) -> None:
        """Close every connection from the server's side (what an upstream does to idle keep-alives)."""
        for writer in self.writers:
            writer.close()
        self.writers.clear()

    async def stop(self) -> None:
        self.drop_all()
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()


async def _get(url: str) -> bytes:
    client = async_client_for(url, 10.0)
    async with client.stream("POST", f"{url}/v1/x", json={"q": 1}) as response:
        return b"".join([part async for part in response.aiter_bytes()])


def _pool(url: str) -> FlatAsyncPool:
    pool = transport_of(async_client_for(url, 10.0)).pool  # type: ignore[union-attr]
    assert isinstance(pool, FlatAsyncPool)
    return pool


def _run(body):  # type: ignore[no-untyped-def]
    async def main() -> None:
        server = CountingServer()
        url = await server.start()
        try:
            await body(server, url)
        finally:
            await aclose_clients()
            await server.stop()

    asyncio.run(main())


def test_sequential_requests_reuse_one_connection() -> None:
    async def body(server: CountingServer, url: str) -> None:
        for _ in range(5):
            assert await _get(url) == b"data" + BODY
        assert server.accepted == 1
        assert _pool(url).connections == 1

    _run(body)


def test_concurrent_streams_each_get_a_connection_and_then_are_reused() -> None:
    async def body(server: CountingServer, url: str) -> None:
        server.release.clear()
        tasks = [asyncio.ensure_future(_get(url)) for _ in range(40)]
        while server.accepted < 40:  # all 40 are mid-body at once: 40 connections
            await asyncio.sleep(0.01)
        server.release.set()
        assert all(r == b"data" + BODY for r in await asyncio.gather(*tasks))
        assert _pool(url).connections == 40
        assert all(r == b"data" + BODY for r in await asyncio.gather(*(_get(url) for _ in range(40))))
        assert server.accepted == 40  # the second wave found them idle

    _run(body)


def test_connections_the_server_closed_are_not_used_again() -> None:
    async def body(server: CountingServer, url: str) -> None:
        await asyncio.gather(*(_get(url) for _ in range(3)))
        server.drop_all()
        await asyncio.sleep(0.05)
        assert await _get(url) == b"data" + BODY  # no error: the dead ones are noticed before a write
        assert server.accepted == 4  # all three dead ones skipped, one fresh connection, no failed request

    _run(body)


def test_a_connection_still_open_well_after_its_answer_marks_its_origin_as_keeping_them() -> None:
    async def body(server: CountingServer, url: str) -> None:
        assert await _get(url) == b"data" + BODY
        await asyncio.sleep(SETTLE * 2)  # open well past the time a close after the answer takes
        assert await _get(url) == b"data" + BODY
        assert set(_pool(url)._habits.values()) == {"keeps"}  # learned without waiting: later reuses never wait
        assert server.accepted == 1

    _run(body)


def test_idle_connections_are_capped() -> None:
    async def body(server: CountingServer, url: str) -> None:
        pool = _pool(url)
        pool._max_keepalive = 3
        server.release.clear()
        tasks = [asyncio.ensure_future(_get(url)) for _ in range(8)]
        while server.accepted < 8:
            await asyncio.sleep(0.01)
        server.release.set()
        await asyncio.gather(*tasks)
        assert pool.connections == 3

    _run(body)


def test_a_stream_closed_midway_does_not_return_its_connection() -> None:
    async def body(server: CountingServer, url: str) -> None:
        server.release.clear()
        client = async_client_for(url, 10.0)
        async with client.stream("POST", f"{url}/v1/x", json={}) as response:
            async for part in response.aiter_bytes():
                assert part == b"data"
                break  # leave with the body unread: the connection cannot carry another request
        assert _pool(url).connections == 0
        server.release.set()
        assert await _get(url) == b"data" + BODY
        assert server.accepted == 2

    _run(body)


def test_a_cancelled_request_leaves_nothing_busy() -> None:
    async def body(server: CountingServer, url: str) -> None:
        server.release.clear()
        task = asyncio.ensure_future(_get(url))
        while server.accepted < 1:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert _pool(url).connections == 0

    _run(body)


def test_work_per_request_does_not_grow_with_idle_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    """With 100 idle connections, a request looks at one or two of them, not all (httpcore's pool walks every one)."""
    checks = []
    original = httpcore.AsyncHTTPConnection.has_expired

    def counted(self: httpcore.AsyncHTTPConnection) -> bool:
        checks.append(self)
        return original(self)

    async def body(server: CountingServer, url: str) -> None:
        server.release.clear()
        tasks = [asyncio.ensure_future(_get(url)) for _ in range(100)]
        while server.accepted < 100:
            await asyncio.sleep(0.01)
        server.release.set()
        await asyncio.gather(*tasks)
        assert _pool(url).connections == 100
        monkeypatch.setattr(httpcore.AsyncHTTPConnection, "has_expired", counted)
        for _ in range(10):
            await _get(url)
        assert len(checks) <= 20  # one on taking, at most one more on giving back, per request
        assert server.accepted == 100

    _run(body)


def test_a_url_without_http_is_refused_by_name() -> None:
    async def main() -> None:
        pool = FlatAsyncPool(network_backend=None, max_keepalive=1, keepalive_expiry=None)
        request = httpcore.Request("GET", "ftp://127.0.0.1/x")
        with pytest.raises(httpcore.UnsupportedProtocol, match="ftp://"):
            await pool.handle_async_request(request)

    asyncio.run(main())
