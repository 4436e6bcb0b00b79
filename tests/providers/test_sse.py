"""The pure SSE decoder and JSON event reader (no sockets)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_core.errors import LLMError
from agent_core_providers._sse import JSONEventReader, SSEDecoder
from agent_core_providers.accumulate import push, text_of

BODY = (
    b": keep-alive comment\n"
    b"event: message_start\n"
    b'data: {"a": 1}\n\n'
    b"id: 7\nretry: 100\n"
    b"data: line one\n"
    b"data: line two\n\n"
    b"data:no-space\r\n\r\n"
    b"event: ping\rdata: {}\r\r"
)
EXPECTED = [("message_start", b'{"a": 1}'), ("", b"line one\nline two"), ("", b"no-space"), ("ping", b"{}")]


def test_decoder_handles_every_line_ending_and_field():
    assert SSEDecoder().feed(BODY) == EXPECTED


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=len(BODY) - 1), max_size=12))
def test_any_chunking_gives_the_same_events(cuts):
    decoder = SSEDecoder()
    events = []
    bounds = [0, *sorted(set(cuts)), len(BODY)]
    for start, end in zip(bounds, bounds[1:], strict=False):
        events += decoder.feed(BODY[start:end])
    assert events == EXPECTED


def test_pending_keeps_the_unterminated_tail():
    decoder = SSEDecoder()
    assert decoder.feed(b'data: {"x": 1}\n\ndata: {"y"') == [("", b'{"x": 1}')]
    assert decoder.pending == b'data: {"y"'
    # At the end of the body the last event is dispatched even without its blank line;
    # the JSON layer decides whether it was complete.
    assert decoder.flush() == [("", b'{"y"')]
    assert decoder.pending == b'data: {"y"'
    cut = SSEDecoder()
    assert cut.feed(b'data: {"x": 1}\n\nda') == [("", b'{"x": 1}')]
    assert cut.flush() == [] and cut.pending == b"da"  # cut inside a field name: nothing to dispatch


def test_non_sse_line_raises_quoting_it():
    with pytest.raises(LLMError, match=r"malformed server-sent event line: '<html>'"):
        SSEDecoder("p").feed(b"<html>\n")


def test_reader_classifies_events():
    def classify(name, value):
        return {"ping": "skip", "stop": "last"}.get(value.get("type")) if isinstance(value, dict) else None

    reader = JSONEventReader("p", classify, done_data=b"[DONE]")
    out = reader.feed(
        b'data: {"type": "a"}\n\ndata: {"type": "ping"}\n\ndata: {"type": "stop"}\n\ndata: {"type": "late"}\n\n'
    )
    assert out == [{"type": "a"}, {"type": "stop"}]
    assert reader.done and reader.incomplete_reason() is None
    assert reader.feed(b'data: {"type": "ignored"}\n\n') == []


def test_reader_reports_truncation_and_bad_json():
    reader = JSONEventReader("p", lambda n, v: None, done_data=b"[DONE]")
    assert reader.feed(b'data: {"x": 1}\n\ndata: {"x"') == [{"x": 1}]
    assert "last partial line: 'data: {\"x\"'" in reader.incomplete_reason()
    with pytest.raises(LLMError, match="malformed JSON"):
        JSONEventReader("p", lambda n, v: None).feed(b"data: {oops\n\n")
    done = JSONEventReader("p", lambda n, v: None, done_data=b"[DONE]")
    assert done.feed(b"data: [DONE]\n\n") == [] and done.done


def test_pieces_join_in_order():
    pieces = None
    for piece in ["a", "", "b", "cd"]:
        pieces = push(pieces, piece)
    assert text_of(pieces) == "abcd" and text_of(None) == ""
