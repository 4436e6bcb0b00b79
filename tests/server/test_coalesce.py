"""The server's writes of one loop turn leave as one socket write, unchanged in bytes and order."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("starlette", reason="agent-core serve needs the server extra")

from agent_core.server.http.uvicorn_tuning.coalesce import CoalescingTransport


class Counted:
    """The real transport, with its writes counted."""

    def __init__(self, inner: asyncio.Transport, owner: asyncio.StreamWriter) -> None:
        self.inner = inner
        self.owner = owner  # kept: a collected StreamWriter closes its transport
        self.writes = 0

    def write(self, data: bytes) -> None:
        self.writes += 1
        self.inner.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


async def _pair() -> tuple[asyncio.StreamReader, Counted, CoalescingTransport, asyncio.Server]:
    accepted: asyncio.Future[asyncio.StreamReader] = asyncio.get_running_loop().create_future()

    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.set_result(reader)
        await asyncio.sleep(5)

    server = await asyncio.start_server(on_client, "127.0.0.1", 0)
    _, writer = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
    counted = Counted(writer.transport, writer)  # type: ignore[arg-type]
    coalescing = CoalescingTransport(counted, asyncio.get_running_loop())  # type: ignore[arg-type]
    return await accepted, counted, coalescing, server


def test_writes_of_one_turn_are_one_write_in_order() -> None:
    async def main() -> None:
        reader, counted, transport, server = await _pair()
        pieces = [f"data: {i}\n\n".encode() for i in range(100)]
        for piece in pieces:
            transport.write(piece)
        transport.write(b"")  # nothing to send: no write
        assert counted.writes == 0  # kept until the turn ends
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert counted.writes == 1
        assert await reader.readexactly(sum(map(len, pieces))) == b"".join(pieces)
        transport.write(b"next")  # a later turn: its own write
        await asyncio.sleep(0.01)
        assert counted.writes == 2
        assert await reader.readexactly(4) == b"next"
        transport.close()
        server.close()

    asyncio.run(main())


def test_a_whole_batch_is_written_at_once_unless_something_is_kept() -> None:
    async def main() -> None:
        reader, counted, transport, server = await _pair()
        transport.write_alone(b"batch one;")  # nothing kept: written now, no callback of its own
        assert counted.writes == 1
        transport.write(b"head;")
        transport.write_alone(b"batch two;")  # behind what is kept: kept too, so the order holds
        assert counted.writes == 1
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert counted.writes == 2
        assert await reader.readexactly(25) == b"batch one;head;batch two;"
        transport.close()
        transport.write_alone(b"after the end")  # a closing connection: nothing more goes out
        await asyncio.sleep(0.01)
        assert counted.writes == 2
        server.close()

    asyncio.run(main())


def test_close_sends_what_was_kept_first() -> None:
    async def main() -> None:
        reader, counted, transport, server = await _pair()
        transport.write(b"last words")
        assert transport.get_write_buffer_size() >= len(b"last words")
        transport.close()  # in the same turn as the write
        assert await reader.read() == b"last words"  # then the end of the stream
        await asyncio.sleep(0.01)
        assert counted.writes == 1  # the scheduled flush found nothing more
        server.close()

    asyncio.run(main())


def test_abort_drops_what_was_kept() -> None:
    async def main() -> None:
        reader, counted, transport, server = await _pair()
        transport.write(b"never sent")
        transport.abort()
        await asyncio.sleep(0.01)
        assert counted.writes == 0
        assert await reader.read() == b""
        server.close()

    asyncio.run(main())


def test_the_rest_is_the_real_transports() -> None:
    async def main() -> None:
        _, counted, transport, server = await _pair()
        assert transport.get_extra_info("peername") == counted.inner.get_extra_info("peername")
        assert transport.is_closing() is False
        transport.close()
        assert transport.is_closing() is True
        server.close()

    asyncio.run(main())
