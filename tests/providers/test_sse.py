"""The pure SSE decoder and JSON event reader (no sockets)."""

from __future__ import annotations

import pytest
from agent_core.errors import LLMError, MalformedResponseError
from agent_core.plugin_kit import push, text_of
from agent_core_providers._errors import scrub
from agent_core_providers._sse import MAX_LINE_BYTES, JSONEventReader, SSEDecoder, quote_line
from hypothesis import given, settings
from hypothesis import strategies as st

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


def test_a_read_that_is_one_whole_event_is_taken_without_splitting_it_into_lines(monkeypatch):
    decoder = SSEDecoder()
    monkeypatch.setattr(SSEDecoder, "_lines", lambda self, lines: pytest.fail("the read was split into lines"))
    assert decoder.feed(b'data: {"a": 1}\n\n') == [("", b'{"a": 1}')]
    assert decoder.feed(b"data: \n\n") == [("", b"")]


@pytest.mark.parametrize("reads", [
    [b"event: ping\n", b"data: {}\n\n", b"data: {}\n\n"],  # the name applies to the next event only
    [b"data: a\n", b"data: b\n\n"],  # a data line held from the read before
    [b'data: {"x"', b": 1}\n\n"],  # an unterminated tail held
    [b"data: a\r", b"\ndata: b\n\n"],  # a CR whose LF opens the next read
    [b"data: a\n\ndata: b\n\n", b"data: c\n\n"],  # two events in one read, then one
    [b"data: a\r\n\r\n", b"data: b\n\n"],  # CRLF endings are not the whole-event shape
])
def test_whole_event_reads_after_any_held_state_give_what_one_read_gives(reads):
    decoder, events = SSEDecoder(), []
    for read in reads:
        events += decoder.feed(read)
    assert events == SSEDecoder().feed(b"".join(reads))


def test_a_lone_cr_inside_a_whole_event_shaped_read_still_ends_a_line():
    # "data: ..." and a blank line, as the whole-event shape looks, but a CR inside splits two data lines
    assert SSEDecoder().feed(b"data: a\rdata: b\n\n") == [("", b"a\nb")]


def test_a_whole_event_over_the_line_cap_is_still_refused():
    with pytest.raises(MalformedResponseError, match="longer than 16 bytes"):
        SSEDecoder("p", max_line=16).feed(b"data: " + b"x" * 20 + b"\n\n")


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


# -- linear work, the line cap, the end of the body, bytes that are not UTF-8 ---------------------------


def test_a_long_line_is_kept_in_pieces_until_its_end():
    decoder = SSEDecoder()
    piece = b"x" * 65536
    assert decoder.feed(b"data: ") == []
    for _ in range(50):  # 3.2 MB in 64 KiB reads, no line end yet
        assert decoder.feed(piece) == []
    # Past 64 KiB the tail is kept in pieces, appended, never re-joined per read (that was quadratic).
    assert decoder._pieces is not None and len(decoder._pieces) == 50
    (event,) = decoder.feed(b"\n\n")
    assert event == ("", piece * 50) and decoder.pending == b""


def test_a_line_over_the_cap_is_refused_whether_split_or_whole():
    split = SSEDecoder("p", max_line=1000)
    split.feed(b"data: " + b"a" * 900)
    with pytest.raises(MalformedResponseError, match="longer than 1000 bytes") as info:
        split.feed(b"a" * 200)
    assert info.value.provider == "p"
    with pytest.raises(MalformedResponseError, match="longer than 1000 bytes"):
        SSEDecoder("p", max_line=1000).feed(b"data: " + b"a" * 1200 + b"\n\n")
    at_cap = b"data: " + b"a" * 994
    assert SSEDecoder(max_line=1000).feed(at_cap + b"\n\n") == [("", b"a" * 994)]
    assert MAX_LINE_BYTES == 16 * 1024 * 1024


def _reader() -> JSONEventReader:
    def classify(name, value):
        if value.get("type") == "error":
            return LLMError("boom", provider="p")
        return "last" if value.get("type") == "stop" else None

    return JSONEventReader("p", classify)


def test_finish_dispatches_a_complete_last_event_without_blank_line():
    reader = _reader()
    assert reader.feed(b'data: {"type": "a"}\n\ndata: {"type": "stop"}') == [{"type": "a"}]
    assert reader.finish() == [{"type": "stop"}]
    assert reader.done and reader.incomplete_reason() is None


def test_finish_reports_a_last_event_cut_inside_its_json():
    reader = _reader()
    reader.feed(b'data: {"type": "a"}\n\ndata: {"type": "st')
    assert reader.finish() == [] and not reader.done
    assert "partial line: 'data: {\"type\": \"st'" in reader.incomplete_reason()
    whole_line = _reader()
    whole_line.feed(b'data: {"type": "st\n')  # the line ended, the JSON did not
    assert whole_line.finish() == []
    assert "its data: '{\"type\": \"st'" in whole_line.incomplete_reason()


def test_finish_raises_an_error_event_left_unclosed():
    reader = _reader()
    reader.feed(b'data: {"type": "error"}')
    with pytest.raises(LLMError, match="boom"):
        reader.finish()


def test_bytes_that_are_not_utf8_are_a_malformed_response():
    reader = _reader()
    reader.status_code = 200
    with pytest.raises(MalformedResponseError, match="invalid UTF-8") as info:
        reader.feed(b'data: {"type": "a", "text": "\xff"}\n\n')
    assert info.value.status_code == 200


def test_quoted_lines_are_scrubbed_before_they_are_cut():
    key = "sk-live-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    line = "x" * 180 + key  # the 200-character cut falls inside the key
    quoted = quote_line(line, secrets=[key])
    assert "***" in quoted
    assert not any(key[i : i + 8] in quoted for i in range(len(key) - 7))
    reader = _reader()
    reader.secrets = (key,)
    with pytest.raises(MalformedResponseError) as info:
        reader.feed(f"data: {{{line}\n\n".encode())
    assert not any(key[i : i + 8] in str(info.value) for i in range(len(key) - 7))


def test_scrub_masks_pieces_of_a_key_cut_elsewhere():
    key = "sk-live-ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    assert scrub(f"head {key[:12]}", [key]) == "head ***"  # a prefix left by someone else's cut
    assert scrub(f"{key[-9:]} tail", [key]) == "*** tail"
    assert scrub("sk-live-", [key]) == "***"  # exactly 8 characters: masked
    assert scrub("short sk-liv", [key]) == "short sk-liv"  # 7: too short to mean the key
    assert scrub(f"{key} and {key}", [key]) == "*** and ***"


def test_bad_utf8_is_named_whichever_way_msgspec_reports_it():
    import msgspec
    from agent_core_providers._sse import bad_utf8

    assert bad_utf8(UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"))  # msgspec up to 0.22
    assert bad_utf8(msgspec.DecodeError("Invalid UTF-8 encoded string"))  # msgspec 0.23
    assert not bad_utf8(msgspec.DecodeError("JSON is malformed: invalid character (byte 0)"))
