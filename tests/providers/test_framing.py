"""The body decoders of the pooled clients (``_framing``), checked against h11 0.16 as the oracle.

Differential: a generated response (chunked with extensions and trailers, sized,
or read until the close) is serialised, cut into reads at points hypothesis
picks, and given both to an h11 client connection and, after the head, to the
decoder ``framing_for`` picks, the way ``_lean_conn`` hands it over (h11's
``trailing_data`` after the ``Response`` event first, then the later reads).
Both must give the same pieces, both must finish, and what came after the
message must be the same leftover. Then each refusal by name, and a property
over junk: only ``RemoteProtocolError``, and a buffer that stays bounded.
"""

from __future__ import annotations

import itertools
import string
from typing import Any

import h11
import httpcore
import pytest
from agent_core_providers.transport import framing as _framing
from agent_core_providers.transport.framing import (
    MAX_LINE,
    MAX_TRAILERS,
    Chunked,
    Empty,
    Sized,
    UntilClose,
    framing_for,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SECRET = b"S3CRET-BODY"  # body bytes that must never appear in an error message

_TCHAR = string.ascii_letters + string.digits + "!#$%&'*+-.^_`|~"
_token = st.text(alphabet=_TCHAR, min_size=1, max_size=8)
_ext = st.lists(
    st.tuples(_token, st.none() | _token | st.just('"quoted value; with ,"')), max_size=2,
).map(lambda pairs: "".join(f";{k}" if v is None else f";{k}={v}" for k, v in pairs))
_ows = st.sampled_from(["", " ", "\t", " \t "])
_trailer_name = _token.filter(lambda n: n.lower() not in ("content-length", "transfer-encoding"))
_trailer_value = st.text(alphabet=string.ascii_letters + string.digits + " ,;=/", max_size=12).map(str.strip)


@st.composite
def _chunk_frame(draw: st.DrawFn, payload: bytes) -> bytes:
    digits = format(len(payload), draw(st.sampled_from(["x", "X"])))
    size = "0" * draw(st.integers(0, 3)) + digits
    return (size + draw(_ext) + draw(_ows)).encode() + b"\r\n" + payload + (b"\r\n" if payload else b"")


@st.composite
def responses(draw: st.DrawFn) -> dict:
    """A response on the wire: its kind, head, body frames, the payloads, what follows it, and where reads end."""
    kind = draw(st.sampled_from(["chunked", "sized", "close"]))
    extra = b""
    if kind == "chunked":
        payloads = draw(st.lists(st.binary(min_size=1, max_size=40), max_size=6))
        frames = [draw(_chunk_frame(p)) for p in payloads]
        trailers = draw(st.lists(st.tuples(_trailer_name, _trailer_value), max_size=3))
        last = draw(_chunk_frame(b"")) + b"".join(f"{n}: {v}\r\n".encode() for n, v in trailers) + b"\r\n"
        frames.append(last)
        head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        extra = draw(st.binary(max_size=20))
    elif kind == "sized":
        body = draw(st.binary(max_size=200))
        payloads, frames = [body], [body]
        head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body)
        extra = draw(st.binary(max_size=20))
    else:
        body = draw(st.binary(min_size=1, max_size=200))
        payloads, frames = [body], [body]
        head = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"
    wire = head + b"".join(frames) + extra
    cuts = sorted(draw(st.sets(st.integers(1, len(wire) - 1), max_size=20)))
    return {"kind": kind, "head": head, "frames": frames, "payloads": payloads, "extra": extra, "wire": wire,
            "cuts": cuts}


def _reads(wire: bytes, cuts: list[int]) -> list[bytes]:
    bounds = [0, *cuts, len(wire)]
    return [wire[a:b] for a, b in itertools.pairwise(bounds) if b > a]


def _client() -> h11.Connection:
    conn = h11.Connection(our_role=h11.CLIENT)
    conn.send(h11.Request(method="GET", target="/", headers=[("Host", "example")]))
    conn.send(h11.EndOfMessage())
    return conn


def _h11_body(reads: list[bytes], until_close: bool) -> tuple[list[bytes], bool, bytes]:
    """The oracle: h11's Data pieces, whether it saw the EndOfMessage, and what it left unread."""
    conn = _client()
    pieces: list[bytes] = []
    done = False
    for data in [*reads, b""] if until_close else reads:
        conn.receive_data(data)
        while True:
            event = conn.next_event()
            if event in (h11.NEED_DATA, h11.PAUSED) or isinstance(event, h11.ConnectionClosed):
                break
            if isinstance(event, h11.Data):
                pieces.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                done = True
    return pieces, done, bytes(conn.trailing_data[0])


def _ours(reads: list[bytes], until_close: bool) -> tuple[list[bytes], bool, bytes, type]:
    """As ``_lean_conn`` does it: h11 until the head, then the decoder ``framing_for`` picks for it."""
    conn = _client()
    reads = list(reads)
    event = h11.NEED_DATA
    while event is h11.NEED_DATA:
        conn.receive_data(reads.pop(0))
        event = conn.next_event()
    assert isinstance(event, h11.Response)
    framing = framing_for(b"GET", event.status_code, list(event.headers))
    pieces: list[bytes] = []
    first = bytes(conn.trailing_data[0])
    for data in [first, *reads] if first else reads:
        got = framing.feed(data)
        assert all(isinstance(p, bytes) and p for p in got), got  # no empty pieces handed on
        pieces += got
    if until_close:
        framing.eof()
    return pieces, framing.done, framing.leftover, type(framing)


def _boundaries(parts: list[bytes]) -> set[int]:
    at, out = 0, set()
    for part in parts:
        at += len(part)
        out.add(at)
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(responses())
def test_same_body_as_h11_however_the_reads_are_cut(msg: dict) -> None:
    reads = _reads(msg["wire"], msg["cuts"])
    until_close = msg["kind"] == "close"
    want, want_done, want_left = _h11_body(reads, until_close)
    got, done, left, kind = _ours(reads, until_close)
    assert kind is {"chunked": Chunked, "sized": Sized, "close": UntilClose}[msg["kind"]]
    assert want_done and done
    assert b"".join(got) == b"".join(want) == b"".join(msg["payloads"])
    assert got == want  # the same pieces: one per chunk per read, as h11 gave them
    assert left == want_left == msg["extra"]
    if msg["kind"] == "chunked":  # a piece never spans two chunks
        assert _boundaries(msg["payloads"]) <= _boundaries(got) | {0}


@settings(max_examples=200, deadline=None)
@given(responses().filter(lambda m: m["kind"] == "chunked"), st.data())
def test_whole_chunks_per_read_give_one_piece_per_chunk(msg: dict, data: st.DataObject) -> None:
    frames = msg["frames"]
    ends = sorted(data.draw(st.sets(st.integers(1, len(frames)))))  # each read ends where a chunk frame ends
    reads, start = [], 0
    for end in ends:
        reads.append(b"".join(frames[start:end]))
        start = end
    if start < len(frames):
        reads.append(b"".join(frames[start:]))
    reads[-1] += msg["extra"]
    decoder = Chunked()
    pieces: list[bytes] = []
    for read in reads:
        pieces += decoder.feed(read)
    assert pieces == msg["payloads"]
    assert decoder.done
    assert decoder.leftover == msg["extra"]


def test_several_chunks_in_one_read_are_handed_on_one_by_one() -> None:
    decoder = Chunked()
    assert decoder.feed(b"3\r\none\r\n3;x=1\r\ntwo\r\n5\r\nthree\r\n0\r\n\r\n") == [b"one", b"two", b"three"]
    assert decoder.done and decoder.leftover == b""


# -- refusals, each by name and never quoting the body -----------------------------------


def _refused(decoder: _framing.Framing, *reads: bytes) -> str:
    with pytest.raises(httpcore.RemoteProtocolError) as info:
        for data in reads:
            decoder.feed(data)
    message = str(info.value)
    assert SECRET.decode() not in message
    return message


@pytest.mark.parametrize("reads", [
    (b"b\r\n" + SECRET + b"XX",),  # data, then not CRLF
    (b"b\r\n" + SECRET, b"\n\r"),  # split right after the data
    (b"b\r\n" + SECRET + b"\r", b"X"),  # half a CRLF, then something else
    (b"b\r\n" + SECRET + b"\n",),  # a bare LF
])
def test_chunk_data_must_be_followed_by_crlf(reads: tuple[bytes, ...]) -> None:
    assert "not followed by CRLF" in _refused(Chunked(), *reads)


@pytest.mark.parametrize("line", [b"zz", b"0x5", b"-5", b" 5", b"", b"5 x", SECRET])
def test_a_size_line_must_be_hex(line: bytes) -> None:
    assert "not a hexadecimal size" in _refused(Chunked(), b"5\r\nhello\r\n" + line + b"\r\n" + SECRET)


@pytest.mark.parametrize("line", [b"0x5", b"0X5", b"+5", b" 5", b"\t5", b"0_5", b"5g"])
def test_a_size_line_int_would_take_is_refused_in_a_read_of_one_whole_chunk(line: bytes) -> None:
    # A read that is exactly one chunk frame takes a shortcut past the regular expression; what
    # int(line, 16) accepts but HTTP does not (a 0x prefix, a sign, blanks, underscores) is refused there too.
    assert "not a hexadecimal size" in _refused(Chunked(), line + b"\r\nhello\r\n")


@pytest.mark.parametrize("line", [b"5", b"05", b"0000000000000005", b"5 ", b"5;ext=1", b"5\t;x"])
def test_a_read_of_one_whole_chunk_gives_its_data_whatever_the_size_line(line: bytes) -> None:
    assert Chunked().feed(line + b"\r\nhello\r\n") == [b"hello"]
    assert Chunked().feed(line.replace(b"5", b"A") + b"\r\nhelloworld\r\n") == [b"helloworld"]


def test_a_plain_whole_chunk_is_read_without_the_regular_expression(monkeypatch) -> None:
    class Refuse:
        def fullmatch(self, *args: object) -> None:
            pytest.fail("the size line went through the regular expression")

    monkeypatch.setattr(_framing, "_SIZE", Refuse())
    assert Chunked().feed(b"1f\r\n" + b"x" * 31 + b"\r\n") == [b"x" * 31]


def test_a_size_line_without_end_is_refused_past_max_line() -> None:
    decoder = Chunked()
    decoder.feed(b"1;" + b"e" * (MAX_LINE - 2))  # MAX_LINE bytes and no CRLF yet: still waiting
    assert f"longer than {MAX_LINE} bytes" in _refused(decoder, b"ee")
    assert f"longer than {MAX_LINE} bytes" in _refused(Chunked(), b"1" * (MAX_LINE * 3))  # in one read too


def test_a_size_line_of_max_line_bytes_is_accepted_in_one_read() -> None:
    line = b"1;" + b"e" * (MAX_LINE - 2)
    decoder = Chunked()
    assert decoder.feed(line + b"\r\nx\r\n0\r\n\r\n") == [b"x"]
    assert decoder.done


def test_a_long_size_line_cut_into_small_reads_is_put_back_together() -> None:
    wire = b"3;" + b"e" * (MAX_LINE - 100) + b"\r\nabc\r\n0;" + b"f" * 3000 + b"\r\n\r\n"
    decoder = Chunked()
    pieces = []
    for i in range(0, len(wire), 7):
        pieces += decoder.feed(wire[i:i + 7])
    assert b"".join(pieces) == b"abc"
    assert decoder.done and decoder.leftover == b""


def test_a_size_line_of_max_line_bytes_is_accepted_however_the_crlf_is_cut() -> None:
    line = b"1;" + b"e" * (MAX_LINE - 2)
    decoder = Chunked()
    assert decoder.feed(line + b"\r") == []
    assert decoder.feed(b"\nx\r\n0\r\n\r\n") == [b"x"]
    assert decoder.done


def _trailer_lines(total: int) -> bytes:
    """Trailer lines of ``total`` bytes in all, CRLFs included."""
    lines, left = [], total
    while left:
        size = min(left, 1000)
        assert size >= 5
        lines.append(b"x:" + b"v" * (size - 4) + b"\r\n")
        left -= size
    return b"".join(lines)


def test_trailers_beyond_max_trailers_are_refused() -> None:
    too_many = _trailer_lines(MAX_TRAILERS - 5) + b"y: 1234\r\n"
    assert f"trailers were longer than {MAX_TRAILERS}" in _refused(Chunked(), b"0\r\n" + too_many + b"\r\n")
    # and when the lines come one read at a time
    decoder = Chunked()
    decoder.feed(b"0\r\n")
    assert f"trailers were longer than {MAX_TRAILERS}" in _refused(decoder, *[
        too_many[i:i + 7] for i in range(0, len(too_many), 7)])
    # one endless trailer line without CRLF
    assert f"trailers were longer than {MAX_TRAILERS}" in _refused(Chunked(), b"0\r\nx:" + b"v" * MAX_TRAILERS)


def test_trailers_of_exactly_max_trailers_are_accepted() -> None:
    decoder = Chunked()
    assert decoder.feed(b"0\r\n" + _trailer_lines(MAX_TRAILERS) + b"\r\n") == []
    assert decoder.done


def test_trailers_of_exactly_max_trailers_are_accepted_however_the_end_is_cut() -> None:
    decoder = Chunked()
    assert decoder.feed(b"0\r\n" + _trailer_lines(MAX_TRAILERS) + b"\r") == []
    assert decoder.feed(b"\n") == []
    assert decoder.done


def test_a_trailer_line_must_be_a_header_field() -> None:
    assert "trailer line was not a header field" in _refused(Chunked(), b"1\r\nx\r\n0\r\n" + SECRET + b"\r\n\r\n")


def test_eof_before_the_end_of_a_chunked_body_is_an_error() -> None:
    for reads in ([], [b"5\r\nhel"], [b"5\r\nhello\r\n"], [b"0\r\n"], [b"0\r\nx: 1\r\n"], [b"0\r\n\r"]):
        decoder = Chunked()
        for data in reads:
            decoder.feed(data)
        assert not decoder.done
        with pytest.raises(httpcore.RemoteProtocolError, match="incomplete chunked read"):
            decoder.eof()
    decoder = Chunked()
    decoder.feed(b"0\r\n\r\n")
    decoder.eof()  # complete: the end of the connection is no error


def test_eof_before_the_end_of_a_sized_body_says_how_much_came() -> None:
    decoder = Sized(10)
    assert decoder.feed(b"abc") == [b"abc"]
    assert not decoder.done
    with pytest.raises(httpcore.RemoteProtocolError, match="received 3 bytes, expected 10") as info:
        decoder.eof()
    assert "abc" not in str(info.value)
    with pytest.raises(httpcore.RemoteProtocolError, match="received 0 bytes, expected 1"):
        Sized(1).eof()
    done = Sized(3)
    done.feed(b"abc")
    done.eof()


def test_a_body_until_the_close_is_complete_at_the_close() -> None:
    decoder = UntilClose()
    assert decoder.feed(b"ab") == [b"ab"]
    assert decoder.feed(b"c") == [b"c"]
    assert not decoder.done
    decoder.eof()
    assert decoder.done and decoder.leftover == b""


@pytest.mark.parametrize(("method", "status", "headers"), [
    (b"HEAD", 200, [(b"content-length", b"10")]),
    (b"HEAD", 200, [(b"transfer-encoding", b"chunked")]),
    (b"GET", 204, []),
    (b"GET", 304, [(b"content-length", b"10")]),
    (b"GET", 100, []),
    (b"GET", 103, [(b"link", b"</a>")]),
    (b"GET", 101, [(b"upgrade", b"websocket")]),
])
def test_no_body_for_head_204_304_and_1xx(method: bytes, status: int, headers: list) -> None:
    decoder = framing_for(method, status, headers)
    assert isinstance(decoder, Empty)
    assert decoder.done
    decoder.eof()  # nothing to wait for
    assert decoder.feed(b"HTTP/1.1 200 OK\r\n") == []
    assert decoder.leftover == b"HTTP/1.1 200 OK\r\n"


def test_framing_for_picks_by_headers() -> None:
    assert isinstance(framing_for(b"GET", 200, [(b"transfer-encoding", b"chunked")]), Chunked)
    assert isinstance(framing_for(b"POST", 201, [(b"content-length", b"0"), (b"x", b"y")]), Sized)
    sized = framing_for(b"GET", 200, [(b"content-length", b"7")])
    assert isinstance(sized, Sized) and sized.size == 7 and not sized.done
    assert framing_for(b"GET", 200, [(b"content-length", b"0")]).done
    assert isinstance(framing_for(b"GET", 200, [(b"content-type", b"text/plain")]), UntilClose)


@pytest.mark.parametrize(("decoder", "body"), [
    (Sized(5), b"hello"),
    (Chunked(), b"5\r\nhello\r\n0\r\n\r\n"),
    (Chunked(), b"5\r\nhello\r\n0\r\nx: y\r\n\r\n"),
])
def test_bytes_after_the_end_are_leftover(decoder: _framing.Framing, body: bytes) -> None:
    assert b"".join(decoder.feed(body + b"HTTP/1.1")) == b"hello"
    assert decoder.done
    assert decoder.leftover == b"HTTP/1.1"
    assert decoder.feed(b" 200") == []  # later reads are leftover too, never body
    assert decoder.leftover == b"HTTP/1.1 200"


def test_bytes_after_the_end_in_a_later_read_are_leftover() -> None:
    for decoder, body in ((Sized(5), b"hello"), (Chunked(), b"5\r\nhello\r\n0\r\n\r\n")):
        assert b"".join(decoder.feed(body)) == b"hello"
        assert decoder.done and decoder.leftover == b""
        assert decoder.feed(b"junk") == []
        assert decoder.leftover == b"junk"


# -- junk: only RemoteProtocolError, and bounded memory ---------------------------------

_junk_part = st.one_of(
    st.binary(max_size=64),
    st.sampled_from([b"\r\n", b"\r", b"\n", b"0", b"5", b"a", b"F", b";", b":", b" ", b"0\r\n", b"1\r\nx\r\n",
                     b"x: y\r\n", b"\r\n\r\n"]),
    st.integers(0, 3 * MAX_LINE).map(lambda n: b"e" * n),
    st.integers(0, 2 * MAX_TRAILERS).map(lambda n: b"x:" + b"v" * n),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_junk_part, max_size=30))
def test_junk_gives_pieces_or_a_protocol_error_and_bounded_memory(reads: list[bytes]) -> None:
    decoder = Chunked()
    for data in reads:
        if not data:
            continue
        try:
            pieces = decoder.feed(data)
        except httpcore.RemoteProtocolError:
            return
        assert all(isinstance(p, bytes) and p for p in pieces)
        assert len(decoder._buf) <= MAX_LINE + MAX_TRAILERS + 4
    if not decoder.done:
        with pytest.raises(httpcore.RemoteProtocolError):
            decoder.eof()


def _verdict(run: Any) -> str:
    """What a decoder made of a body: its bytes, or 'refused' when it raised a protocol error."""
    try:
        pieces = run()
    except (h11.RemoteProtocolError, httpcore.RemoteProtocolError):
        return "refused"
    return b"".join(pieces[0]).decode()


@pytest.mark.parametrize("digits", [1, 16, 17, 20, 21, 30])
@pytest.mark.parametrize("size", [b"5", b"0"], ids=["data", "last"])
def test_a_size_line_of_many_digits_is_taken_or_refused_as_h11_does(digits: int, size: bytes) -> None:
    # h11 takes up to 20 hex digits (leading zeros included) before it calls a size line bad.
    line = size.rjust(digits, b"0")
    body = line + b"\r\nhello\r\n0\r\n\r\n" if size != b"0" else line + b"\r\n\r\n"
    reads = [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + body]
    want = _verdict(lambda: _h11_body(reads, False))
    assert want == ("refused" if digits > 20 else "hello" if size != b"0" else "")
    assert _verdict(lambda: _ours(reads, False)) == want
