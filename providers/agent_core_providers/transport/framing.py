"""How an HTTP/1.1 response body ends, read without I/O: chunked, by length, or at the close.

Theory of operation
-------------------
h11 parses a body event by event: two ``next_event`` calls, a state machine
step and a buffer copy for every network read. A model's stream arrives as
one small chunk per read, hundreds per answer, so that was most of what a
client paid per chunk below the provider (:mod:`.lean_conn` says where the figures are).
These decoders take the body over once the response head is read (:mod:`.head`): each
``feed`` is handed the bytes of one read and gives back the body bytes they
complete, usually in one ``find`` and one slice: a list with one item per
HTTP chunk, as h11 gave them (a server that writes each event as its own
chunk has its events handed on one by one even when a read holds several).

They are as strict as h11 0.16 where it matters for safety: a chunk's data
must be followed by exactly CRLF, a size line is 1 to 20 hex digits (as h11 takes them) with optional
extensions and ends in CRLF, a size line or trailer section longer than
:data:`MAX_LINE` / :data:`MAX_TRAILERS` bytes is refused, and a body that
ends early is an error, never a short answer taken for a whole one. Every
refusal is an ``httpcore.RemoteProtocolError`` (httpx maps it to its own),
whose message names what was wrong and never quotes the body.

``done`` says the body is complete; ``leftover`` holds what the server sent
after it (a connection with leftover bytes is not used again).
"""

from __future__ import annotations

import re

import httpcore

__all__ = ["MAX_LINE", "MAX_TRAILERS", "Chunked", "Framing", "Sized", "UntilClose", "framing_for"]

#: longest chunk-size line (with its extensions) accepted, in bytes
MAX_LINE = 4096
#: most bytes of trailer fields accepted after the last chunk
MAX_TRAILERS = 16384

_SIZE = re.compile(rb"([0-9A-Fa-f]{1,20})[ \t]*(?:;[^\r\n]*)?")

#: the parser's states, in the order of :meth:`Chunked._parse`'s steps
_LINE, _DATA, _CRLF, _TRAILER, _DONE = range(5)


class Framing:
    """A body decoder: ``feed`` each read, ``eof`` when the connection ends."""

    __slots__ = ("done", "leftover")

    def __init__(self) -> None:
        self.done = False
        self.leftover = b""

    def feed(self, data: bytes) -> list[bytes]:
        raise NotImplementedError

    def eof(self) -> None:
        """The connection ended; raises when that leaves the body incomplete."""
        if not self.done:
            raise httpcore.RemoteProtocolError(self._incomplete())

    def _incomplete(self) -> str:
        return "peer closed connection without sending complete message body"


class Empty(Framing):
    """No body at all (HEAD, 1xx, 204, 304): complete before the first read."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__()
        self.done = True

    def feed(self, data: bytes) -> list[bytes]:
        self.leftover += data
        return []


class Sized(Framing):
    """A ``Content-Length`` body: exactly that many bytes."""

    __slots__ = ("left", "size")

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = self.left = size
        self.done = size == 0

    def feed(self, data: bytes) -> list[bytes]:
        left = self.left
        if self.done:
            self.leftover += data
            return []
        if len(data) < left:
            self.left = left - len(data)
            return [data]
        self.left = 0
        self.done = True
        if len(data) > left:
            self.leftover = data[left:]
            return [data[:left]]
        return [data]

    def _incomplete(self) -> str:
        got = self.size - self.left
        return f"peer closed connection without sending complete message body: received {got} bytes, expected {self.size}"


class UntilClose(Framing):
    """Neither length nor chunks: the body is whatever comes until the server closes."""

    __slots__ = ()

    def feed(self, data: bytes) -> list[bytes]:
        return [data]

    def eof(self) -> None:
        self.done = True


class Chunked(Framing):
    """``Transfer-Encoding: chunked``: size lines, data, CRLF; a zero size, trailers, a blank line."""

    __slots__ = ("_buf", "_left", "_state", "_trailers")

    def __init__(self) -> None:
        super().__init__()
        self._buf = b""
        self._state = _LINE
        self._left = 0
        self._trailers = 0

    def feed(self, data: bytes) -> list[bytes]:
        if self.done:
            self.leftover += data
            return []
        if self._state == _LINE and not self._buf:  # the usual read: exactly one whole chunk
            # A bare size of hex digits, checked without the regular expression: isalnum() leaves
            # out the sign, spaces and underscores int() would take, and the x and X bytes (120,
            # 88) its 0x prefix. Anything else (an extension, a long line) goes step by step.
            eol = data.find(b"\r\n")
            if 0 < eol <= 16:
                head = data[:eol]
                if head.isalnum() and 120 not in head and 88 not in head:
                    try:
                        stop = eol + 2 + int(head, 16)
                    except ValueError:  # a letter past f: the size line step names it
                        stop = 0
                    if stop > eol + 2 and len(data) == stop + 2 and data[stop:] == b"\r\n":
                        return [data[eol + 2:stop]]
        return self._parse(self._buf + data if self._buf else data)

    def _parse(self, buf: bytes) -> list[bytes]:
        """Every other read: one step of the state in force at a time, until the bytes run out.

        Each step takes what its state can from ``buf`` at ``at`` and says where it stopped; a
        step that stops where it began waits for the next read, and what is left is kept.
        """
        end = len(buf)
        at = 0
        out: list[bytes] = []
        steps = self._STEPS
        while at < end:
            moved = steps[self._state](self, buf, at, end, out)
            if moved == at:
                break
            at = moved
        self._buf = buf[at:] if at < end else b""
        return out

    def _data(self, buf: bytes, at: int, end: int, out: list[bytes]) -> int:
        take = min(self._left, end - at)
        out.append(buf[at:at + take])
        self._left -= take
        if not self._left:
            self._state = _CRLF
        return at + take

    def _crlf(self, buf: bytes, at: int, end: int, out: list[bytes]) -> int:
        if end - at < 2:
            if buf[at:end] != b"\r":
                raise httpcore.RemoteProtocolError("chunk data was not followed by CRLF")
            return at
        if buf[at:at + 2] != b"\r\n":
            raise httpcore.RemoteProtocolError("chunk data was not followed by CRLF")
        self._state = _LINE
        return at + 2

    def _line(self, buf: bytes, at: int, end: int, out: list[bytes]) -> int:
        eol = buf.find(b"\r\n", at, at + MAX_LINE + 2)
        if eol < 0:
            if end - at - _cr_at_end(buf) > MAX_LINE:  # a CR that may start the CRLF does not count
                raise httpcore.RemoteProtocolError(f"a chunk size line was longer than {MAX_LINE} bytes")
            return at
        matched = _SIZE.fullmatch(buf, at, eol)
        if matched is None:
            raise httpcore.RemoteProtocolError("a chunk size line was not a hexadecimal size")
        at = eol + 2
        size = int(matched.group(1), 16)
        if not size:
            self._state = _TRAILER
            return at
        stop = at + size
        if buf[stop:stop + 2] == b"\r\n":  # the whole chunk is here: its data and CRLF in this step
            out.append(buf[at:stop])
            return stop + 2
        self._left = size
        self._state = _DATA
        return at

    def _trailer(self, buf: bytes, at: int, end: int, out: list[bytes]) -> int:
        eol = buf.find(b"\r\n", at)
        if eol < 0:
            if self._trailers + end - at - _cr_at_end(buf) > MAX_TRAILERS:
                raise httpcore.RemoteProtocolError(f"the trailers were longer than {MAX_TRAILERS} bytes")
            return at
        if eol == at:  # the blank line: the body is complete, what follows is the next response's
            self._state = _DONE
            self.done = True
            self.leftover = buf[at + 2:]
            return end
        self._trailers += eol + 2 - at
        if self._trailers > MAX_TRAILERS:
            raise httpcore.RemoteProtocolError(f"the trailers were longer than {MAX_TRAILERS} bytes")
        if b":" not in buf[at:eol]:
            raise httpcore.RemoteProtocolError("a trailer line was not a header field")
        return eol + 2

    #: the step for each state but the last, indexed by state
    _STEPS = (_line, _data, _crlf, _trailer)

    def _incomplete(self) -> str:
        return "peer closed connection without sending complete message body: incomplete chunked read"


def _cr_at_end(buf: bytes) -> int:
    """1 when ``buf`` ends in a CR whose LF may come with the next read."""
    return 1 if buf[-1:] == b"\r" else 0


def framing_for(method: bytes, status: int, headers: list[tuple[bytes, bytes]]) -> Framing:
    """The decoder for a response to ``method`` with ``status`` and ``headers`` (as :mod:`.head` checked them).

    The head reader has already refused a ``Transfer-Encoding`` other than ``chunked`` and a
    malformed or conflicting ``Content-Length``; names here are lower case.
    """
    if method == b"HEAD" or status < 200 or status in (204, 304):
        return Empty()
    length = None
    for name, value in headers:
        if name == b"transfer-encoding":
            return Chunked()
        if name == b"content-length":
            length = int(value)
    return UntilClose() if length is None else Sized(length)
