"""The pooled connections' HTTP/1.1 heads (``_head.py``) against h11, the parser they replaced, as the oracle.

For any response head, split into reads anywhere, ours and h11 read the same heads (status,
version, reason, headers with their case and lower-cased) and the same bytes after them, or
both refuse it. For any request, ours writes the bytes h11 writes, or both refuse it. The
generated heads mix valid parts with the ones that must be refused: control characters, a
space before the colon, a folded first line, conflicting lengths, a coding other than chunked,
a status under 100, heads longer than the limit.
"""

from __future__ import annotations

import h11
import httpcore
import pytest
from agent_core_providers.transport.head import HeadReader, RequestWriter
from agent_core_providers.transport.lean_conn import Cycle
from hypothesis import given, settings
from hypothesis import strategies as st

MAX = 200  # a small head limit, so the limit is crossed often

_token = st.text("abcXYZ-_!#09", min_size=1, max_size=8).map(str.encode)
_bad_name = st.sampled_from([b"", b"a b", b"a:b", b"\xff", b"na\x00me", b"x\ty"])
_good_value = st.text("abc 09;=,/", max_size=12).map(str.encode).map(bytes.strip)
_bad_value = st.sampled_from([b" padded ", b"tab\tinside", b"obs\xe9text", b"nul\x00", b"cr\rx", b"lf\nx", b"\x7f"])
_framing_header = st.sampled_from([
    (b"Content-Length", b"5"), (b"content-length", b"5, 5"), (b"Content-Length", b"5, 6"), (b"Content-Length", b"x"),
    (b"Content-Length", b"0"), (b"Content-Length", b"1" * 21), (b"Transfer-Encoding", b"chunked"),
    (b"Transfer-Encoding", b"Chunked"), (b"Transfer-Encoding", b"gzip"), (b"Transfer-Encoding", b"gzip, chunked"),
])


def _mostly(good: st.SearchStrategy, bad: st.SearchStrategy) -> st.SearchStrategy:
    """``good`` nine times in ten: whole heads then get through about as often as they are refused."""
    return st.integers(0, 9).flatmap(lambda i: bad if i == 0 else good)


_header = _mostly(st.tuples(_token, _good_value),
                  st.one_of(st.tuples(_bad_name, _good_value), st.tuples(_token, _bad_value), _framing_header))
_good_status = st.builds(lambda v, c, r: b"HTTP/%s %s%s" % (v, c, r), st.sampled_from([b"1.1", b"1.0"]),
                         st.sampled_from([b"200", b"204", b"100", b"103", b"404", b"999"]),
                         st.sampled_from([b" OK", b"", b" ", b" Not Found", b" tab\there", b" caf\xe9"]))
_status_line = _mostly(_good_status, st.one_of(
    st.builds(lambda v, c, r: b"HTTP/%s %s%s" % (v, c, r),
              st.sampled_from([b"1.1", b"2.0", b"1", b"x.y"]),
              st.sampled_from([b"200", b"101", b"099", b"20", b"2000"]),
              st.sampled_from([b" OK", b"", b" bad\x00", b"OK"])),
    st.sampled_from([b"", b" HTTP/1.1 200 OK", b"HTTP/1.1  200 OK", b"garbage"]),
))


@st.composite
def _response_bytes(draw: st.DrawFn) -> bytes:
    out = b""
    for _ in range(draw(st.integers(1, 2))):  # an informational head may come first
        eol = draw(st.sampled_from([b"\r\n", b"\n"]))
        lines = [draw(_status_line)]
        for name, value in draw(st.lists(_header, max_size=5)):
            lines.append(b"%s:%s%s" % (name, draw(st.sampled_from([b" ", b"", b"\t", b"  "])), value))
            if draw(st.integers(0, 19)) == 0:
                lines.append(draw(st.sampled_from([b" folded", b"\tfolded too"])))
        if draw(st.integers(0, 29)) == 0:
            lines.insert(1, b" folded first")
        out += eol.join(lines) + eol + eol
    return out + draw(st.binary(max_size=20))


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True) if data[a:b]]


def _read_h11(pieces: list[bytes]) -> tuple[list[tuple[object, ...]], bool, bytes]:
    conn = h11.Connection(our_role=h11.CLIENT, max_incomplete_event_size=MAX)
    conn.send(h11.Request(method=b"GET", target=b"/", headers=[(b"Host", b"x")]))
    conn.send(h11.EndOfMessage())
    heads: list[tuple[object, ...]] = []
    try:
        for piece in pieces:
            conn.receive_data(piece)
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA or event is h11.PAUSED:
                    break
                heads.append((event.status_code, event.http_version, event.reason,
                              list(event.headers.raw_items()), list(event.headers)))
                if isinstance(event, h11.Response) or event.status_code == 101:
                    return heads, False, bytes(conn.trailing_data[0])
    except h11.RemoteProtocolError:
        return heads, True, b""
    return heads, False, b""


def _read_ours(pieces: list[bytes]) -> tuple[list[tuple[object, ...]], bool, bytes]:
    reader = HeadReader(MAX)
    heads: list[tuple[object, ...]] = []
    try:
        for piece in pieces:
            reader.feed(piece)
            while (head := reader.next_head()) is not None:
                heads.append((head.status_code, head.http_version, head.reason, head.items, head.lowered))
                if head.status_code >= 200:
                    return heads, False, reader.rest
    except httpcore.RemoteProtocolError:
        return heads, True, b""
    return heads, False, b""


@settings(max_examples=400, deadline=None)
@given(_response_bytes(), st.lists(st.integers(0, 10_000), max_size=6))
def test_a_response_head_reads_as_h11_reads_it(data: bytes, cuts: list[int]) -> None:
    pieces = _split(data, cuts)
    assert _read_ours(pieces) == _read_h11(pieces)


_method = st.one_of(st.sampled_from([b"POST", b"GET"]), st.sampled_from([b"", b"PO ST", b"G\x00T"]))
_target = st.one_of(st.sampled_from([b"/v1/chat/completions", b"/a?b=c", b"*"]),
                    st.sampled_from([b"", b"/a b", b"/\x7f", b"/\xe9"]))


@settings(max_examples=400, deadline=None)
@given(_method, _target,
       st.lists(_header, max_size=5), st.sampled_from([[], [(b"Host", b"api.example")],
                                                        [(b"host", b"a"), (b"Host", b"b")]]),
       st.lists(st.binary(max_size=6), max_size=3))
def test_a_request_is_written_as_h11_writes_it(method: bytes, target: bytes, headers: list[tuple[bytes, bytes]],
                                               hosts: list[tuple[bytes, bytes]], body: list[bytes]) -> None:
    all_headers = [*headers[:1], *hosts, *headers[1:]]
    try:
        conn = h11.Connection(our_role=h11.CLIENT)
        theirs = conn.send(h11.Request(method=method, target=target, headers=all_headers)) or b""
        for chunk in body:
            theirs += conn.send(h11.Data(data=chunk)) or b""
        theirs += conn.send(h11.EndOfMessage()) or b""
    except h11.LocalProtocolError:
        theirs = None
    try:
        writer = RequestWriter()
        ours = writer.head(method, target, all_headers)
        for chunk in body:
            ours += writer.data(chunk)
        ours += writer.end()
    except httpcore.LocalProtocolError:
        ours = None
    assert ours == theirs


def test_the_connection_refuses_a_header_value_with_a_line_break() -> None:
    request = httpcore.Request(b"POST", b"http://api.example/v1", headers=[(b"Host", b"api.example"),
                                                                          (b"X-Key", b"a\r\nInjected: yes")])
    with pytest.raises(httpcore.LocalProtocolError, match="Illegal header value"):
        Cycle(request).head()


def test_a_disconnect_before_the_head_is_an_error_the_pool_knows() -> None:
    cycle = Cycle(httpcore.Request(b"GET", b"http://api.example/", headers=[(b"Host", b"api.example")]))
    cycle.receive(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 2")
    assert cycle.response() is None  # the informational head is skipped, the final one is not in yet
    with pytest.raises(httpcore.RemoteProtocolError, match="disconnected without sending a response"):
        cycle.receive(b"")


def test_a_head_that_arrives_a_byte_a_read_is_read_whole() -> None:
    """A slow upstream may send its head in many small reads; each piece is added, never re-copied."""
    head = b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-Pad-%d: %s\r\n" % (i, b"v" * 60) for i in range(1000)) + b"\r\nbody"
    reader = HeadReader(len(head) + 10)
    got = None
    for i in range(len(head)):
        reader.feed(head[i:i + 1])
        got = got or reader.next_head()
    assert got is not None and got.status_code == 200 and len(got.items) == 1000
    assert reader.rest == b"body"
