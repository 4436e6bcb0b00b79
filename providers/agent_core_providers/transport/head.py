"""HTTP/1.1 heads for the pooled connections: the request head written, the response head read.

Why not h11
-----------
These connections used h11 for both (and :mod:`.framing` for the body). On the server's
non-streamed requests h11's events, validation and state machine came to about an eighth of
the CPU: an ``h11.Connection`` per request, a validated ``Request`` event, a state machine
walked for the request, its end and the response. The grammar itself is small, so it is
written here once, with h11's rules (its regular expressions, its header normalization, its
answers to bad input) and h11 kept as the oracle in ``tests/providers/test_head.py``: for
any head, this module accepts what h11 accepts, refuses what it refuses, and reads the same
fields.

What is checked, as h11 checks it
---------------------------------
Sending: the method is a token, the target visible ASCII, header names tokens, values free of
control characters and of surrounding whitespace; exactly one ``Host``; ``Content-Length``
digits only (the same value when repeated); ``Transfer-Encoding`` only ``chunked``, once. The
body is then framed by length (more or fewer bytes than declared is refused) or chunked.
Receiving: the status line, each header line (obsolete folding joined with a space), a head
at most ``max_head`` bytes, a status from 100 to 999 but not 101 (no request asks to upgrade), the same ``Content-Length`` and
``Transfer-Encoding`` rules. Errors are httpcore's (``LocalProtocolError`` for what we would
send, ``RemoteProtocolError`` for what we read), as httpx expects of a connection.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import httpcore

__all__ = ["Head", "HeadReader", "RequestWriter"]

_TOKEN = rb"[-!#$%&'*+.^_`|~0-9a-zA-Z]+"
_FIELD_VALUE = rb"(?:[^\x00\s]+(?:[ \t]+[^\x00\s]+)*)?"
_TOKEN_RE = re.compile(_TOKEN)
_FIELD_VALUE_RE = re.compile(_FIELD_VALUE)
_TARGET_RE = re.compile(rb"[\x21-\x7e]+")
_DIGITS_RE = re.compile(rb"[0-9]+")
_STATUS_LINE_RE = re.compile(rb"HTTP/([0-9]\.[0-9]) ([0-9]{3})(?: ((?:[ \t]|[^\x00\s])*))?")
_HEADER_LINE_RE = re.compile(rb"(" + _TOKEN + rb"):[ \t]*(" + _FIELD_VALUE + rb")[ \t]*")
_FOLD_RE = re.compile(rb"[ \t]+")
_BLANK_LINE_RE = re.compile(rb"\n\r?\n")
_MAX_LENGTH_DIGITS = 20


def _normalized(headers: Iterable[tuple[bytes, bytes]], error: type[Exception]) -> list[tuple[bytes, bytes, bytes]]:
    """``(raw name, lower-case name, value)`` per header, with h11's rules for the two framing headers."""
    out = []
    length = None
    chunked = False
    for raw, value in headers:
        name = raw.lower()
        if name == b"content-length":
            lengths = {v.strip() for v in value.split(b",")}
            if len(lengths) != 1:
                raise error("conflicting Content-Length headers")
            value = lengths.pop()
            if not _DIGITS_RE.fullmatch(value) or len(value) > _MAX_LENGTH_DIGITS:
                raise error("bad Content-Length")
            if length is None:
                length = value
                out.append((raw, name, value))
            elif length != value:
                raise error("conflicting Content-Length headers")
        elif name == b"transfer-encoding":
            if chunked:
                raise error("multiple Transfer-Encoding headers")
            value = value.lower()
            if value != b"chunked":
                raise error("Only Transfer-Encoding: chunked is supported")
            chunked = True
            out.append((raw, name, value))
        else:
            out.append((raw, name, value))
    return out


class RequestWriter:
    """One request's bytes: its head, then its body framed as the head declares."""

    __slots__ = ("_left",)

    def __init__(self) -> None:
        self._left: int | None = 0  # bytes the body still owes; None: chunked

    def head(self, method: bytes, target: bytes, headers: Sequence[tuple[bytes, bytes]]) -> bytes:
        for name, value in headers:
            if not _TOKEN_RE.fullmatch(name):
                raise httpcore.LocalProtocolError(f"Illegal header name {name!r}")
            if not _FIELD_VALUE_RE.fullmatch(value):
                raise httpcore.LocalProtocolError(f"Illegal header value {value!r}")
        items = _normalized(headers, httpcore.LocalProtocolError)
        hosts = sum(1 for _, name, _ in items if name == b"host")
        if hosts == 0:
            raise httpcore.LocalProtocolError("Missing mandatory Host: header")
        if hosts > 1:
            raise httpcore.LocalProtocolError("Found multiple Host: headers")
        if not _TOKEN_RE.fullmatch(method):
            raise httpcore.LocalProtocolError("Illegal method characters")
        if not _TARGET_RE.fullmatch(target):
            raise httpcore.LocalProtocolError("Illegal target characters")
        self._left = 0
        for _, name, value in items:
            if name == b"transfer-encoding":  # chunked wins over a length, as h11 decides
                self._left = None
                break
            if name == b"content-length":
                self._left = int(value)
        lines = [b"%s %s HTTP/1.1\r\n" % (method, target)]
        lines += [b"%s: %s\r\n" % (raw, value) for raw, name, value in items if name == b"host"]  # Host first
        lines += [b"%s: %s\r\n" % (raw, value) for raw, name, value in items if name != b"host"]
        lines.append(b"\r\n")
        return b"".join(lines)

    def data(self, chunk: bytes) -> bytes:
        if self._left is None:
            return b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunk else b""
        if len(chunk) > self._left:
            raise httpcore.LocalProtocolError("Too much data for declared Content-Length")
        self._left -= len(chunk)
        return chunk

    def end(self) -> bytes:
        if self._left is None:
            return b"0\r\n\r\n"
        if self._left:
            raise httpcore.LocalProtocolError("Too little data for declared Content-Length")
        return b""


class Head:
    """A response's status line and headers as read; ``items`` keep each name's case, ``lowered`` does not."""

    __slots__ = ("http_version", "items", "lowered", "reason", "status_code")

    def __init__(self, http_version: bytes, status_code: int, reason: bytes,
                 items: list[tuple[bytes, bytes, bytes]]) -> None:
        self.http_version = http_version
        self.status_code = status_code
        self.reason = reason
        self.items = [(raw, value) for raw, _, value in items]
        self.lowered = [(name, value) for _, name, value in items]


class HeadReader:
    """Response heads out of the bytes read; :attr:`rest` is what follows the last head read."""

    __slots__ = ("_buf", "_max", "_searched")

    def __init__(self, max_head: int) -> None:
        self._buf = bytearray()  # grown in place: a head trickling in a byte a read stays linear, as h11's buffer
        self._max = max_head
        self._searched = 0

    @property
    def rest(self) -> bytes:
        return bytes(self._buf)

    def feed(self, data: bytes) -> None:
        self._buf += data

    def next_head(self) -> Head | None:
        """The next head in the buffer (informational ones included), or None when more bytes are needed."""
        buf = self._buf
        if buf[:1] == b"\n" or buf[:2] == b"\r\n":
            raise httpcore.RemoteProtocolError("no response line received")
        match = _BLANK_LINE_RE.search(buf, self._searched)
        if match is None:
            if buf and buf[0] < 0x21:
                raise httpcore.RemoteProtocolError("illegal request line")
            if len(buf) > self._max:
                raise httpcore.RemoteProtocolError("Receive buffer too long")
            self._searched = max(0, len(buf) - 2)
            return None
        end = match.end()
        head = bytes(buf[:end])
        del buf[:end]
        self._searched = 0
        lines = [line[:-1] if line.endswith(b"\r") else line for line in head.split(b"\n")[:-2]]
        status = _STATUS_LINE_RE.fullmatch(lines[0])
        if status is None:
            raise httpcore.RemoteProtocolError(f"illegal status line: {lines[0]!r}")
        pairs = []
        for line in _unfolded(lines[1:]):
            field = _HEADER_LINE_RE.fullmatch(line)
            if field is None:
                raise httpcore.RemoteProtocolError(f"illegal header line: {line!r}")
            pairs.append((field[1], field[2]))
        code = int(status[2])
        if code < 100:
            raise httpcore.RemoteProtocolError(f"status code {code} is not in the range [100, 1000)")
        if code == 101:  # as h11 does for a request that asked for no upgrade (ours never do)
            raise httpcore.RemoteProtocolError("a 101 Switching Protocols answer to a request without Upgrade")
        return Head(status[1], code, status[3] or b"", _normalized(pairs, httpcore.RemoteProtocolError))


def _unfolded(lines: list[bytes]) -> list[bytes]:
    """Header lines with each obsolete continuation line joined to the one before it, by a space."""
    out: list[bytes] = []
    for line in lines:
        fold = _FOLD_RE.match(line)
        if fold is None:
            out.append(line)
        elif not out:
            raise httpcore.RemoteProtocolError("continuation line at start of headers")
        else:
            out[-1] += b" " + line[fold.end():]
    return out
