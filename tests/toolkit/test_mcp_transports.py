"""The byte counting of ``mcp_transports``: a cap per message, never per stream.

The servers in ``test_mcp_misbehaving.py`` prove the caps end to end; here the
boundaries: an SSE stream of many small events is never cut, however long it
runs, and one event (or a JSON body) over the cap is, at the chunk that passes it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest
from agent_core_plugins.mcp_transports import CapPassed, _Counted


class Chunks:
    def __init__(self, *chunks: bytes) -> None:
        self.chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk

    async def aclose(self) -> None:
        pass


def _read(*chunks: bytes, cap: int) -> tuple[bytes, list[int]]:
    seen: list[int] = []

    async def go() -> bytes:
        got = b""
        async for chunk in _Counted(Chunks(*chunks), cap, seen.append):
            got += chunk
        return got

    return anyio.run(go), seen


def test_many_small_sse_events_pass_however_long_the_stream() -> None:
    event = b"event: message\ndata: " + b"x" * 60 + b"\n\n"
    body, seen = _read(*[event] * 1000, cap=100)
    assert body == event * 1000 and seen == []


def test_a_blank_line_split_across_chunks_still_ends_an_event() -> None:
    body, seen = _read(b"data: " + b"x" * 90 + b"\n", b"\ndata: " + b"y" * 90 + b"\r\n\r", b"\n", cap=100)
    assert seen == [] and body.endswith(b"\r\n\r\n")


def test_one_event_or_body_over_the_cap_stops_at_the_chunk_that_passes_it() -> None:
    with pytest.raises(CapPassed):
        _read(b"data: " + b"x" * 60, b"x" * 60, b"never read\n\n", cap=100)
    seen: list[int] = []

    async def partial() -> list[bytes]:
        got = []
        with pytest.raises(CapPassed):
            async for chunk in _Counted(Chunks(b"{" + b"1" * 80, b"2" * 80, b"}"), 100, seen.append):
                got.append(chunk)
        return got

    assert anyio.run(partial) == [b"{" + b"1" * 80] and seen == [161]
