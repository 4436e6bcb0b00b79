"""Server-sent events: bytes in, decoded JSON events out, with no I/O.

Theory of operation
-------------------
Both bundled providers read an SSE body (``text/event-stream``). The body
arrives in arbitrary byte chunks; :class:`SSEDecoder` splits them into lines,
groups lines into events at each blank line, and returns ``(event, data)``
pairs. :class:`JSONEventReader` sits on top: it decodes each ``data`` payload
with one reused ``msgspec.json.Decoder``, drops keep-alives, turns an error
event into a typed :class:`~agent_core.errors.LLMError`, and knows when the
stream is *complete* (OpenAI's ``data: [DONE]``, Anthropic's ``message_stop``)
so that a body that ends before that is reported instead of silently
truncating the answer.

Neither class touches a socket, so a streamed call (:mod:`._streaming`)
feeds them the same way sync and async, and tests can feed them bytes.

Work per byte is constant: an unterminated tail longer than 64 KiB is kept
as a list of pieces, each later read without a line end is only appended,
and the pieces are joined once, when the line ends (joining the tail to every
read made a long line cost time quadratic in its length). Shorter tails are still copied
into the next read, which is cheaper than the bookkeeping and bounded. A line longer
than :data:`MAX_LINE_BYTES` (16 MiB) is refused with
:class:`~agent_core.errors.MalformedResponseError`, so a server cannot make
the client buffer without bound.

End of body: a server may end the body right after the last event's data
line, without the blank line that closes an event (real recordings do).
:meth:`JSONEventReader.finish` dispatches that event when it is complete; a
body cut inside a line is reported as truncated, quoting the partial line.

Quoted lines in error texts are scrubbed of the reader's ``secrets`` before
they are cut to length (:func:`quote_line`).

Why not httpx-sse
-----------------
httpx-sse decodes the bytes to text and parses it line by line in Python; here a
read is split once with ``bytes.split`` and each event's JSON is decoded straight
from bytes with a reused decoder, so it does markedly less work per event, and it
is no extra dependency. ``benchmarks/bench_sse.py`` streams the same OpenAI and
Anthropic bodies through both (with ``json.loads`` and with msgspec behind
httpx-sse) and times one very long line, and prints the figures.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import msgspec
from agent_core.errors import LLMError, MalformedResponseError

from ._errors import scrub

__all__ = ["MAX_LINE_BYTES", "JSONEventReader", "SSEDecoder", "bad_utf8", "quote_line"]

#: Longest SSE line accepted (bytes); a longer one is a MalformedResponseError.
MAX_LINE_BYTES = 16 * 1024 * 1024
_QUOTE_LIMIT = 200
# A tail longer than this is kept as a list of pieces (joined once, at its line end) instead of
# being copied into every read: below it the copy is cheaper than the bookkeeping.
_GATHER_ABOVE = 64 * 1024
_IGNORED_FIELDS = (b"id:", b"retry:")
# Field names alone on a line (no colon) are legal SSE with an empty value.
_BARE_FIELDS = frozenset({b"id", b"retry", b"event", b"data"})


def bad_utf8(exc: Exception) -> bool:
    """True when a JSON decode failed on bytes that are not UTF-8.

    msgspec up to 0.22 raises ``UnicodeDecodeError`` for them; 0.23 a ``DecodeError`` that
    says "Invalid UTF-8". Either way the body is named for what is wrong with it.
    """
    return isinstance(exc, UnicodeDecodeError) or "UTF-8" in str(exc)


def quote_line(line: bytes | str, limit: int = _QUOTE_LIMIT, secrets: Iterable[str | None] = ()) -> str:
    """A short, printable rendering of a wire line for an error message.

    ``secrets`` are scrubbed from the whole line *before* it is cut to
    ``limit`` characters, so a key near the cut cannot leave half of itself.
    """
    text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
    if secrets:
        text = scrub(text, secrets)
    return repr(text if len(text) <= limit else text[:limit] + "...")


class SSEDecoder:
    """Incremental SSE parser: ``feed(bytes)`` returns the events completed by it.

    Each event is a ``(event_name, data)`` pair; ``event_name`` is ``""`` when
    the server sent no ``event:`` field, and ``data`` is the ``data:`` lines
    joined with ``\\n`` (as bytes, ready for a JSON decoder). Comment lines
    (``: keep-alive``) and the ``id:``/``retry:`` fields are ignored. A line
    with any other field name is not SSE at all (a server that answers with
    raw JSON lines, an HTML error page); it raises ``MalformedResponseError``
    quoting it, as does a line longer than :data:`MAX_LINE_BYTES`.

    Lines may end in ``\\n``, ``\\r\\n`` or ``\\r`` and may be split anywhere
    across chunks. :attr:`pending` is the unterminated tail, for error texts.
    """

    __slots__ = (
        "_tail",
        "_pieces",
        "_size",
        "_check_above",
        "_event",
        "_data",
        "_skip_lf",
        "provider",
        "secrets",
        "max_line",
    )

    def __init__(self, provider: str | None = None, *, max_line: int = MAX_LINE_BYTES) -> None:
        self._tail = b""  # the unterminated tail, when short
        self._pieces: list[bytes] | None = None  # a tail gathered over reads without a line end
        self._size = 0
        self._event = ""
        self._data: list[bytes] = []
        self._skip_lf = False
        self.provider = provider
        self.secrets: tuple[str, ...] = ()
        self.max_line = max_line
        self._check_above = min(_GATHER_ABOVE, max_line)

    @property
    def pending(self) -> bytes:
        """Bytes received after the last complete line."""
        return self._tail if self._pieces is None else b"".join(self._pieces)

    def feed(self, chunk: bytes) -> list[tuple[str, bytes]]:
        """Consume ``chunk``; return the events it completed (possibly none)."""
        # The usual read of a chat stream is one whole event: "data: {...}" and a blank line,
        # nothing held from before. Taken as it is, without splitting it into lines. (``13 in chunk``
        # asks for a CR by its byte value: ``b"\r" in chunk`` first tries the operand as an int and
        # raises and clears a TypeError inside CPython on every call, several times the cost.)
        if (chunk[-2:] == b"\n\n" and not self._tail and not self._data and chunk.find(b"\n") == len(chunk) - 2
                and chunk[:6] == b"data: " and self._pieces is None and not self._skip_lf and 13 not in chunk
                and len(chunk) <= self._check_above):
            event, self._event = self._event, ""
            return [(event, chunk[6:-2])]
        if self._skip_lf:
            # The previous chunk ended in CR: a LF opening this one is the same line ending.
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        if self._pieces is not None:  # gathering a long line (rare)
            if b"\n" not in chunk and b"\r" not in chunk:
                self._gather(chunk)
                return []
            self._pieces.append(chunk)
            buf = b"".join(self._pieces)
            self._pieces = None
        else:
            buf = self._tail + chunk if self._tail else chunk
        if b"\r" in buf:
            self._skip_lf = buf.endswith(b"\r")
            buf = buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = buf.split(b"\n")
        self._tail = lines.pop()
        if len(buf) > self._check_above:  # one comparison on the hot path; the rest only for long lines
            self._check_long(lines)
        return self._lines(lines) if lines else []

    def _check_long(self, lines: list[bytes]) -> None:
        """Refuse a line over the cap; keep a long unterminated tail in pieces from now on."""
        longest = max((self._tail, *lines), key=len)
        if len(longest) > self.max_line:
            self._too_long(longest)
        if len(self._tail) > _GATHER_ABOVE:
            self._pieces, self._size, self._tail = [self._tail], len(self._tail), b""

    def _gather(self, chunk: bytes) -> None:
        assert self._pieces is not None
        self._pieces.append(chunk)
        self._size += len(chunk)
        if self._size > self.max_line:
            self._too_long(self._pieces[0])

    def flush(self) -> list[tuple[str, bytes]]:
        """End of body: the last event, if the body ended before its closing blank line.

        A tail that is not a valid SSE line (a body cut mid-line, say inside
        ``data:``) yields nothing; it stays in :attr:`pending` so the caller
        can quote it when it reports the truncated stream.
        """
        tail = self.pending
        try:
            return self._lines([tail, b""] if tail else [b""])
        except LLMError:
            return []

    def _too_long(self, line: bytes) -> None:
        head = quote_line(line[:100], 100, self.secrets)
        raise MalformedResponseError(
            f"server-sent event line longer than {self.max_line} bytes, refused (starts {head})",
            provider=self.provider,
        )

    def _lines(self, lines: list[bytes]) -> list[tuple[str, bytes]]:
        out: list[tuple[str, bytes]] = []
        data = self._data
        for line in lines:
            if not line:
                if data:
                    out.append((self._event, data[0] if len(data) == 1 else b"\n".join(data)))
                    data = self._data = []
                self._event = ""
                continue
            if line.startswith(b"data:"):
                value = line[5:]
                data.append(value[1:] if value[:1] == b" " else value)
            elif line.startswith(b"event:"):
                self._event = line[6:].strip().decode("utf-8", "replace")
            elif line[:1] == b":" or line.startswith(_IGNORED_FIELDS) or line in _BARE_FIELDS:
                continue  # a comment (keep-alive), id/retry, or an empty field
            else:
                raise MalformedResponseError(
                    f"malformed server-sent event line: {quote_line(line, secrets=self.secrets)}",
                    provider=self.provider,
                )
        return out


Classify = Callable[[str, dict[str, Any]], "str | LLMError | None"]


class JSONEventReader:
    """One response body's SSE events, decoded to JSON objects.

    Every API read here sends one object an event, so an event that decodes
    to anything else is refused here, once, before ``classify`` sees it.

    Args:
        provider: provider name for error messages.
        classify: ``(event_name, decoded object) -> verdict`` where the verdict is
            ``None`` (yield the event), ``"skip"`` (a keep-alive), ``"done"``
            (the stream is complete; yield nothing), ``"last"`` (yield it,
            then the stream is complete) or an ``LLMError`` to raise (the
            API's mid-stream error event).
        done_data: a raw ``data`` payload that marks the end without being
            JSON (OpenAI's ``[DONE]``).
        is_preamble: tells events that carry no output yet (Anthropic's
            ``message_start``, OpenAI's role-only first chunk). Until an
            event that is not preamble is returned, :attr:`output_seen` stays
            False, so the transport may still retry the request safely.

    What a retry after output needs to know is noted by ``classify`` as it
    sees each event (the reader does not look for it, so it costs nothing
    more per event): :attr:`usage`, the API's latest usage report in the
    API's own shape, and :attr:`repeatable`, False once an event shows work
    the API did itself that a repeat would do again (a server-side tool).
    ``normalize_usage`` turns a report into ``{"input_tokens", "output_tokens", ...}``.

    ``feed`` raises ``MalformedResponseError`` for data that is not JSON or
    not UTF-8, quoting it (scrubbed of :attr:`secrets`, which the transport
    sets). :meth:`finish` dispatches a last event the body did not close;
    :meth:`incomplete_reason` says why a body that ended is not complete.
    """

    __slots__ = (
        "_sse",
        "_decode",
        "_classify",
        "_done_data",
        "_is_preamble",
        "done",
        "output_seen",
        "provider",
        "status_code",
        "_cut",
        "usage",
        "repeatable",
        "normalize_usage",
    )

    _decoder = msgspec.json.Decoder()

    def __init__(
        self,
        provider: str,
        classify: Classify,
        *,
        done_data: bytes | None = None,
        is_preamble: Callable[[Any], bool] | None = None,
        normalize_usage: Callable[[Any], Any] | None = None,
    ) -> None:
        self._sse = SSEDecoder(provider)
        self._decode = self._decoder.decode
        self._classify = classify
        self._done_data = done_data
        self._is_preamble = is_preamble
        self.done = False
        self.output_seen = False
        self.provider = provider
        self.status_code: int | None = None
        self._cut: bytes | None = None  # a last event's data that ended mid-JSON
        self.usage: Any = None
        self.repeatable = True
        self.normalize_usage = normalize_usage

    @property
    def pending(self) -> bytes:
        return self._sse.pending

    @property
    def secrets(self) -> tuple[str, ...]:
        """Strings scrubbed from every quoted line (the transport sets the call's secrets)."""
        return self._sse.secrets

    @secrets.setter
    def secrets(self, value: tuple[str, ...]) -> None:
        self._sse.secrets = tuple(value)

    def feed(self, chunk: bytes) -> list[Any]:
        """Decode the events completed by ``chunk``; events after the end are ignored."""
        if self.done:
            return []
        return self._values(self._sse.feed(chunk), False)

    def finish(self) -> list[Any]:
        """End of body: the values of a last event that had no closing blank line.

        Returns nothing when the stream was complete already, or when the
        last event was cut inside its JSON (then :meth:`incomplete_reason`
        quotes it). An error event dispatched here raises as in :meth:`feed`.
        """
        if self.done:
            return []
        return self._values(self._sse.flush(), True)

    def _values(self, events: list[tuple[str, bytes]], at_end: bool) -> list[Any]:
        """Decode events (for :meth:`feed` and :meth:`finish`); at the end of the body, JSON cut short is truncation."""
        out: list[Any] = []
        for name, data in events:
            if data == self._done_data:
                self.done = True
                break
            try:
                value = self._decode(data)
            except (msgspec.DecodeError, UnicodeDecodeError) as exc:
                if at_end:
                    self._cut = data  # the body ended inside this event: truncated, not malformed
                    break
                raise self._malformed(data, exc) from None
            if type(value) is not dict:
                raise self._malformed(data, None)
            verdict = self._classify(name, value)
            if verdict is None or verdict == "last":
                out.append(value)
                if not self.output_seen and not (self._is_preamble is not None and self._is_preamble(value)):
                    self.output_seen = True
                if verdict == "last":
                    self.done = True
                    break
            elif verdict == "skip":
                continue
            elif verdict == "done":
                self.done = True
                break
            else:
                raise verdict  # type: ignore[misc]
        return out

    def _malformed(self, data: bytes, exc: Exception | None) -> MalformedResponseError:
        """The error for an event's data that did not decode (``exc``), or decoded to no object (``None``)."""
        if exc is None:
            what = "the server sent an answer in an unexpected shape (the event is not an object):"
        else:
            what = ("invalid UTF-8" if bad_utf8(exc) else "malformed JSON") + " in server-sent event:"
        return MalformedResponseError(
            f"{what} {quote_line(data, secrets=self.secrets)}",
            provider=self.provider,
            status_code=self.status_code,
        )

    def billed(self) -> Any:
        """The usage the API reported so far, normalized; ``None`` when it reported none."""
        if not self.usage or self.normalize_usage is None:
            return None
        return self.normalize_usage(self.usage)

    def incomplete_reason(self) -> str | None:
        """Why the stream is not complete (``None`` when it is)."""
        if self.done:
            return None
        tail = self._sse.pending
        if tail.strip():
            quoted = quote_line(tail, secrets=self.secrets)
            return f"stream ended in the middle of an event; last partial line: {quoted}"
        if self._cut is not None:
            return f"stream ended in the middle of an event; its data: {quote_line(self._cut, secrets=self.secrets)}"
        return "stream ended before the API marked it complete"
