"""The pooled async clients' network streams (``_aio_stream``) on real loopback sockets: reads, the end,
timeouts, resets, cancels, back-pressure, TLS, and what an idle pooled connection reports."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import threading
import time
from pathlib import Path
from typing import Any

import httpcore
import pytest
from agent_core_providers.transport import aio_stream as _aio_stream
from agent_core_providers.transport.aio_stream import AsyncioBackend
from agent_core_providers._pool import (
    aclose_clients,
    async_client_for,
    close_clients,
    sync_client_for,
)


async def _serve(handler):  # type: ignore[no-untyped-def]
    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


def test_reads_what_arrives_then_the_end() -> None:
    async def main() -> None:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            assert await reader.readexactly(5) == b"hello"
            for part in (b"one ", b"two ", b"three"):
                writer.write(part)
                await writer.drain()
                await asyncio.sleep(0.01)
            writer.close()

        server, port = await _serve(handler)
        stream = await AsyncioBackend().connect_tcp("127.0.0.1", port, timeout=5)
        await stream.write(b"hello", timeout=5)
        got = b""
        while data := await stream.read(3, timeout=5):  # smaller than what arrives: split, nothing lost
            assert len(data) <= 3
            got += data
        assert got == b"one two three"
        assert await stream.read(10, timeout=5) == b""  # stays at the end
        await stream.aclose()
        server.close()

    asyncio.run(main())


def test_a_silent_server_is_a_read_timeout_and_a_cancel_is_a_cancel() -> None:
    async def main() -> None:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await asyncio.sleep(5)

        server, port = await _serve(handler)
        stream = await AsyncioBackend().connect_tcp("127.0.0.1", port, timeout=5)
        with pytest.raises(httpcore.ReadTimeout):
            await stream.read(10, timeout=0.05)
        task = asyncio.ensure_future(stream.read(10, timeout=5))
        await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):  # not mistaken for the timeout
            await task
        await stream.aclose()
        server.close()

    asyncio.run(main())


def test_the_read_timeout_is_per_read_not_per_stream() -> None:
    """One timer serves every read of a connection: each read still gets its own full timeout,
    and a read with a shorter timeout than the one before still times out on time."""
    async def main() -> None:
        more, go = asyncio.Event(), asyncio.Event()

        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            for i in range(8):  # 8 pieces 40 ms apart: 320 ms in all, each read waits 40 ms
                await asyncio.sleep(0.04)
                writer.write(b"%d" % i)
            await more.wait()
            writer.write(b"8")
            await go.wait()
            writer.write(b"late")
            await asyncio.sleep(5)

        server, port = await _serve(handler)
        stream = await AsyncioBackend().connect_tcp("127.0.0.1", port, timeout=5)
        got = b""
        for _ in range(8):
            got += await stream.read(10, timeout=0.15)  # less than the whole, more than a gap
        assert got == b"01234567"
        await asyncio.sleep(0.3)  # the timer fires with no read waiting, and is not set again
        more.set()
        assert await stream.read(10, timeout=5) == b"8"  # this read sets it 5 s ahead
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(httpcore.ReadTimeout):
            await stream.read(10, timeout=0.05)
        assert loop.time() - started < 1.0  # the timer set 5 s ahead did not delay it
        go.set()
        assert await stream.read(10, timeout=5) == b"late"  # a timed-out read leaves the stream usable
        await stream.aclose()
        server.close()

    asyncio.run(main())


def test_a_reset_is_a_read_error_and_a_refused_connect_a_connect_error() -> None:
    async def main() -> None:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            sock = writer.get_extra_info("socket")
            sock.setsockopt(__import__("socket").SOL_SOCKET, __import__("socket").SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            writer.transport.abort()  # RST

        server, port = await _serve(handler)
        stream = await AsyncioBackend().connect_tcp("127.0.0.1", port, timeout=5)
        with contextlib.suppress(httpcore.ReadError):  # a reset may also read as the end, by platform timing
            assert await stream.read(10, timeout=5) == b""
        server.close()
        await server.wait_closed()
        with pytest.raises(httpcore.ConnectError):
            await AsyncioBackend().connect_tcp("127.0.0.1", port, timeout=5)

    asyncio.run(main())


def test_a_flood_pauses_reading_and_loses_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_aio_stream, "HIGH_WATER", 64 * 1024)
    payload = bytes(range(256)) * 4096  # 1 MiB

    async def main() -> None:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write(payload)
            await writer.drain()
            writer.close()

        server, port = await _serve(handler)
        stream = await AsyncioBackend().connect_tcp("127.0.0.1", port, timeout=5)
        await asyncio.sleep(0.2)  # let it arrive unread: the transport must have paused
        reader = stream._reader  # type: ignore[attr-defined]
        assert reader.paused and reader.queued < len(payload)
        got = bytearray()
        while data := await stream.read(65536, timeout=5):
            got += data
        assert bytes(got) == payload
        server.close()

    asyncio.run(main())


def _unconnected() -> tuple[Any, Any]:
    """A reader and its stream on the running loop with no socket: data is handed in by the test."""
    reader = _aio_stream._Reader()
    reader.loop = asyncio.get_running_loop()
    return reader, _aio_stream.AsyncioStream(None, reader)  # type: ignore[arg-type]


async def _waiting(max_bytes: int) -> tuple[Any, Any, asyncio.Future[bytes]]:
    """An unconnected reader and stream, and a read of ``max_bytes`` already waiting on it."""
    reader, stream = _unconnected()
    read = asyncio.ensure_future(stream.read(max_bytes, timeout=5))
    await asyncio.sleep(0)  # the read waits
    return reader, stream, read


def test_data_for_a_waiting_read_is_handed_to_it_not_queued() -> None:
    async def main() -> None:
        reader, stream, read = await _waiting(100)
        reader.data_received(b"abc")
        assert not reader.queue and reader.queued == 0  # straight to the read: no queue, no take
        reader.data_received(b"def")  # arrives before the read's task runs: queued behind it
        assert await read == b"abc"
        assert await stream.read(100, timeout=5) == b"def" and reader.queued == 0

    asyncio.run(main())


def test_handed_data_bigger_than_the_read_keeps_its_rest_ahead_of_what_came_after() -> None:
    async def main() -> None:
        reader, stream, read = await _waiting(2)
        reader.data_received(b"abcde")
        reader.data_received(b"fg")
        got = [await read]
        while reader.queue:
            got.append(await stream.read(2, timeout=5))
        assert got == [b"ab", b"cd", b"e", b"fg"] and reader.queued == 0

    asyncio.run(main())


def test_data_handed_to_a_read_cancelled_before_it_ran_is_kept_for_the_next() -> None:
    async def main() -> None:
        reader, stream, read = await _waiting(100)
        reader.data_received(b"abc")
        read.cancel()  # in the same turn of the loop: the task is woken with the cancel, not the data
        with pytest.raises(asyncio.CancelledError):
            await read
        assert reader.waiter is None
        assert await stream.read(100, timeout=5) == b"abc"

    asyncio.run(main())


def test_an_idle_connection_reports_the_servers_close() -> None:
    async def main() -> None:
        closing = asyncio.Event()

        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await closing.wait()
            writer.close()

        server, port = await _serve(handler)
        stream = await AsyncioBackend().connect_tcp("127.0.0.1", port, timeout=5)
        assert stream.get_extra_info("is_readable") is False
        assert stream.get_extra_info("server_addr")[1] == port
        closing.set()
        await asyncio.sleep(0.05)
        assert stream.get_extra_info("is_readable") is True
        server.close()

    asyncio.run(main())


def test_https_through_the_pooled_client(certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """An HTTPS upstream: the handshake on the loop's transport, the certificate checked, then a streamed body."""
    cert, key = certificate
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the pooled client's default context trusts this CA

    async def main() -> None:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
            await writer.drain()

        server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        server_ctx.load_cert_chain(cert, key)
        server = await asyncio.start_server(handler, "127.0.0.1", 0, ssl=server_ctx)
        url = f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        try:
            client = async_client_for(url, 10.0)
            async with client.stream("GET", f"{url}/x") as response:
                assert response.status_code == 200
                assert await response.aread() == b"hello"
                assert response.extensions["network_stream"].get_extra_info("ssl_object") is not None
        finally:
            await aclose_clients()
            server.close()

    asyncio.run(main())


def test_an_untrusted_certificate_is_a_connect_error(certificate: tuple[Path, Path]) -> None:
    cert, key = certificate

    async def main() -> None:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await asyncio.sleep(1)

        server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        server_ctx.load_cert_chain(cert, key)
        server = await asyncio.start_server(handler, "127.0.0.1", 0, ssl=server_ctx)
        url = f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        try:
            stream = await AsyncioBackend().connect_tcp("127.0.0.1", server.sockets[0].getsockname()[1], timeout=5)
            with pytest.raises(httpcore.ConnectError, match="(?i)certificate"):
                await stream.start_tls(ssl.create_default_context(), server_hostname="127.0.0.1", timeout=5)
        finally:
            await aclose_clients()
            server.close()
        assert url

    asyncio.run(main())


def test_https_through_the_pooled_sync_client(certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """The sync client reads a TLS body from the TLS socket itself (the fast path), never from the raw one."""
    cert, key = certificate
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(cert, key)
    listener = socket.create_server(("127.0.0.1", 0))
    url = f"https://127.0.0.1:{listener.getsockname()[1]}"

    def serve() -> None:
        conn, _ = listener.accept()
        with server_ctx.wrap_socket(conn, server_side=True) as tls:
            buf = b""
            while b"\r\n\r\n" not in buf:
                buf += tls.recv(4096)
            tls.sendall(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n")
            time.sleep(0.05)  # a second read on the client's side
            tls.sendall(b"6\r\n world\r\n0\r\n\r\n")
            tls.recv(1)  # until the client goes away

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        with sync_client_for(url, 10.0).stream("GET", f"{url}/x") as response:
            stream = response.extensions["network_stream"]
            assert isinstance(stream._sock, ssl.SSLSocket)  # read directly, and decrypted
            assert list(response.iter_raw()) == [b"hello", b" world"]
    finally:
        close_clients()
        listener.close()
        thread.join(5)


@pytest.mark.parametrize("loop_kind", ["asyncio", "uvloop"])
def test_a_waiting_read_waits_on_a_future_of_the_connections_loop(loop_kind: str) -> None:
    """The read's future is made without asking the loop (asyncio.Future() of the running loop): it is still its own."""
    if loop_kind == "uvloop":
        new_loop = pytest.importorskip("uvloop").new_event_loop
    else:
        new_loop = asyncio.new_event_loop

    async def main() -> None:
        reader, stream, read = await _waiting(100)
        assert reader.waiter.get_loop() is asyncio.get_running_loop()
        reader.data_received(b"abc")
        assert await read == b"abc"

    with asyncio.Runner(loop_factory=new_loop) as runner:
        runner.run(main())
