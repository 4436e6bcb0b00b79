"""A big session's ``done`` frame is written in slices, byte for byte the frame it replaces."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("starlette", reason="agent-core serve needs the server extra")

from agent_core import encode_event  # noqa: E402
from agent_core.server.http.wire import sse_frame  # noqa: E402
from agent_core.server.sessions.sliced import SLICE, frame_parts  # noqa: E402
from agent_core.types import Message, Session  # noqa: E402
from agent_core.values.events import DoneEvent, Outcome, Usage  # noqa: E402


def _done(messages: list[Message], metadata: dict[str, object] | None = None) -> DoneEvent:
    """A ``done`` event whose session holds ``messages``, with a final message and usage beside it."""
    return DoneEvent("req-1", Session("s-1", messages, metadata or {"title": "t"}), Outcome("finished"),
                     Usage(3, 5, 1), [Message("assistant", "the last word")])


async def _collect(event: object) -> tuple[list[bytes], int]:
    """The parts, and how many times another task ran while they were made."""
    turns = 0
    stop = asyncio.Event()

    async def other() -> None:
        nonlocal turns
        while not stop.is_set():
            turns += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(other())
    await asyncio.sleep(0)
    before = turns
    parts = [part async for part in frame_parts(event)]
    stop.set()
    await task
    return parts, turns - before


TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)


@settings(max_examples=25, deadline=None)
@given(n=st.sampled_from([0, 1, SLICE, SLICE + 1, 2 * SLICE + 7]), text=TEXT,
       key=st.text(min_size=1, max_size=5), value=TEXT)
def test_the_parts_join_to_the_frame_encode_event_makes(n: int, text: str, key: str, value: str) -> None:
    messages = [Message("user" if i % 2 else "assistant", f"{text}{i}", {key: value} if i % 3 == 0 else None)
                for i in range(n)]
    event = _done(messages, {key: value})
    parts, _ = asyncio.run(_collect(event))
    assert b"".join(parts) == sse_frame(encode_event(event))
    assert len(parts) == (1 if n <= SLICE else 2 + -(-n // SLICE))


def test_the_loop_runs_between_slices() -> None:
    event = _done([Message("user", "x" * 100) for _ in range(3 * SLICE)])
    parts, others = asyncio.run(_collect(event))
    assert len(parts) == 5  # head, three slices, tail
    assert others >= 3  # another task ran after every slice


def test_a_small_event_is_one_part() -> None:
    event = _done([Message("user", "hi")])
    parts, _ = asyncio.run(_collect(event))
    assert parts == [sse_frame(encode_event(event))]
