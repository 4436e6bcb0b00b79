"""An event's SSE frame in parts: a big session is encoded a slice of messages at a time.

Theory of operation
-------------------
The ``done`` event of a sessions-API turn carries the whole session (the
event contract). For a session of megabytes, encoding it is milliseconds of
C code that holds the interpreter, so a worker thread would not free the
event loop either, and every other stream waited that long for its next
chunk. :func:`frame_parts` writes the same bytes in parts instead: the event
with a one-message stand-in for the session's messages is encoded once and
cut where the stand-in is, and the messages are encoded :data:`SLICE` at a
time in between, the loop let run after each slice. The client reads one
frame, byte for byte the one ``sse_frame(encode_event(event))`` makes.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from typing import Any

import msgspec

from ... import encode_event
from ...types import Message, Session
from ..http.wire import sse_frame

__all__ = ["SLICE", "frame_parts"]

#: messages encoded between two turns of the event loop
SLICE = 256


async def frame_parts(event: Any) -> AsyncIterator[bytes]:
    """The SSE frame of ``event``, in parts when it is a ``done`` event with more than :data:`SLICE` messages."""
    session = getattr(event, "session", None) if event.type == "done" else None
    messages = session.messages if session is not None else ()
    if len(messages) <= SLICE:
        yield sse_frame(encode_event(event))
        return
    # A stand-in no text of the event can hold: its content is 128 random bits.
    stand_in = Message("user", f"agent-core:{secrets.token_hex(16)}")
    whole = encode_event(msgspec.structs.replace(
        event, session=Session(session.session_id, [stand_in], session.metadata)))
    item = encode_event(stand_in)  # type: ignore[arg-type]  # the encoder of events encodes any of their parts
    at = whole.index(b"[" + item + b"]")
    yield b"".join((b"data: ", whole[:at + 1]))
    for start in range(0, len(messages), SLICE):
        part = encode_event(messages[start:start + SLICE])[1:-1]  # type: ignore[arg-type]  # a list, less its brackets
        yield part if start == 0 else b"," + part
        await asyncio.sleep(0)  # the other streams' chunks, between two slices
    yield b"".join((whole[at + len(item) + 1:], b"\n\n"))
