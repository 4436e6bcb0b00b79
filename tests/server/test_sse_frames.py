"""The chat stream's text frames (made from bytes prepared once per stream) carry the same JSON as ``chunk``."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("starlette", reason="agent-core serve needs the server extra")

from agent_core.server.http.wire import json_bytes, sse_frame
from agent_core.server.facades.chat.dialect import TextFrames, chunk


def _body(frame: bytes) -> object:
    assert frame.startswith(b"data: ") and frame.endswith(b"\n\n")
    return json.loads(frame[6:-2])


@given(text=st.text(), rid=st.text(min_size=1, max_size=20), model=st.text(max_size=30),
       created=st.integers(0, 2**40), index=st.integers(0, 3))
def test_a_text_frame_is_the_chunk_it_stands_for(text: str, rid: str, model: str, created: int, index: int) -> None:
    frames = TextFrames(rid, model, created, choices=4)
    assert _body(frames.frame(text, index)) == chunk(rid, model, created, {"content": text}, index=index)


def test_strings_msgspec_refuses_still_encode() -> None:
    lone = "a\ud800b"  # a lone surrogate: a plugin can make one; msgspec will not encode it
    assert json.loads(json_bytes(lone)) == lone
    assert _body(TextFrames("r", "m", 1).frame(lone)) == chunk("r", "m", 1, {"content": lone})
    assert _body(sse_frame({"x": lone, "n": None})) == {"x": lone, "n": None}


def test_a_value_json_cannot_carry_is_still_a_type_error() -> None:
    with pytest.raises(TypeError):
        json_bytes({"x": object()})
