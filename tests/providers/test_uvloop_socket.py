"""A cancel shuts the upstream socket under uvloop too (uvicorn runs on it when it is installed).

uvloop's stand-in for a transport's socket refuses ``shutdown``; the cancel path
must still wake a reader blocked on that socket at once.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from agent_core_providers._inflight import _shutdown

uvloop = pytest.importorskip("uvloop")


def test_shutdown_wakes_a_reader_on_a_uvloop_socket() -> None:
    async def main() -> float:
        async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await asyncio.sleep(30)  # never answers

        server = await asyncio.start_server(silent, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        sock = writer.get_extra_info("socket")
        assert type(sock).__name__ == "PseudoSocket"  # the loop's stand-in, not a socket.socket
        read = asyncio.ensure_future(reader.read(10))
        await asyncio.sleep(0.05)
        started = time.monotonic()
        assert _shutdown(sock)
        assert await asyncio.wait_for(read, 5) == b""  # end of stream, not the 30 s silence
        took = time.monotonic() - started
        writer.close()
        assert _shutdown(sock)  # a closed one is no error
        server.close()
        return took

    assert uvloop.run(main()) < 2
