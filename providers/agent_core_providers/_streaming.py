"""A streamed call: the response body read as server-sent events, each network read one step.

One attempt (:class:`StreamAttempt`) sends the request, turns an error
status into its typed error, and hands the body to a ``Pump``: the driver
loops over the network reads and calls :meth:`StreamAttempt.step` with each,
which checks for a cancel and returns the events the read completed. That
step is the per-chunk hot path of every bundled provider; it costs one call.

What the retry rule needs to know comes from the attempt's event reader:
events that carry no output yet (Anthropic's ``message_start``, OpenAI's
role-only first chunk) do not count as output, because APIs often fail right
after sending them; a body that broke off after its answer was complete is
salvaged, not retried.

A silent stream: with ``chunk_timeout_s`` each read of the body (the first
one included, once the headers are in) may wait that long, not the whole
``timeout``; a stall past it fails the attempt as a retryable
:class:`~agent_core.errors.LLMTimeoutError` naming the setting. The read
timeout is the request's own (httpcore reads it from the request when the
body starts), so it works the same on the pooled and on injected clients.

A server that ignored ``stream: true`` answers with one JSON document;
``from_answer`` turns it into the events the stream would have carried (an
event stream mislabelled as JSON is read as one).

Ends of streams: after the end marker (``[DONE]`` / ``message_stop``) the
rest of the body is drained for at most :data:`DRAIN_GRACE` seconds, so the
connection can go back to the pool, and then dropped: a server that keeps
the body open does not hold the answer back (on the pooled clients the reads
get a short timeout; on injected clients a timer shuts the socket down). A
body that ends without the blank line after its last event still delivers
that event.

An endless stream: a body is read as it comes and its events are handed on,
but the answer they build is held until the stream ends, so a server (or a
proxy) that never stops would grow the process without bound. Once a
streamed body passes :data:`MAX_STREAM_BYTES` on the wire the call fails
with :class:`~agent_core.errors.MalformedResponseError`, not retried. The cap
sits far above any real answer: 128,000 tokens streamed as OpenAI chunks
take about 40 MB.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterable
from typing import Any

import httpx
from agent_core.errors import LLMError, LLMTimeoutError, MalformedResponseError
from agent_core.plugin_kit import Pump

from ._decoding import (
    check_status,
    decode_body,
    is_json,
    looks_like_sse,
    salvage,
    truncated,
)
from ._direct import TRANSPORT_ERRORS, as_httpx
from ._exchange import Exchange
from ._inflight import InFlight
from ._retry import Attempt, retried
from ._sse import JSONEventReader

__all__ = ["DRAIN_GRACE", "MAX_STREAM_BYTES", "StreamAttempt", "stream_flow"]

#: Seconds the rest of a body may take after the end marker before the connection is dropped.
DRAIN_GRACE = 0.25

#: Largest streamed body read (bytes on the wire, after any decoding): past it the call fails.
MAX_STREAM_BYTES = 256 * 1024 * 1024

FromAnswer = Callable[[Any], Iterable[Any]]


def stream_flow(
    exchange: Exchange, make_reader: Callable[[], JSONEventReader], from_answer: FromAnswer | None = None
) -> Generator[Any, Any, None]:
    """The streamed call of ``exchange``, with retries: its decoded SSE events, for either driver.

    ``from_answer`` turns a complete JSON answer (a server that ignored
    ``stream: true``) into the events the stream would have carried.

    Raises:
        LLMError: a typed error for an error status, a transport failure, a
            malformed or truncated stream, or an error event.
        LLMTimeoutError: the call's deadline passed.
        ProviderRequestCancelled: the call was cancelled.
    """
    return retried(exchange, lambda: StreamAttempt(exchange, make_reader, from_answer))


class _DrainOver(Exception):
    """The step's way to end the pump: the drain grace after the end marker has passed."""


class StreamAttempt(Attempt):
    """One attempt at a streamed call, and the event reader of its body."""

    __slots__ = ("_drain_until", "_room", "exchange", "from_answer", "make_reader", "reader", "record")
    announces = True

    def __init__(
        self, exchange: Exchange, make_reader: Callable[[], JSONEventReader], from_answer: FromAnswer | None
    ) -> None:
        self.exchange, self.record = exchange, exchange.record
        self.make_reader, self.from_answer = make_reader, from_answer
        self.reader: JSONEventReader | None = None
        self._drain_until: float | None = None
        self._room = MAX_STREAM_BYTES  # what the body may still bring

    def run(self) -> Generator[Any, Any, None]:
        """Send, check the status, then read the body: pumped as a stream, or whole when it is JSON."""
        exchange, call = self.exchange, self.exchange.call
        response = yield exchange.send()
        self.record.raise_if_cancelled()
        if response.status_code >= 300:  # a redirect or an error: the whole (bounded) body, then its typed error
            check_status(call, response, (yield exchange.read_all()))
        if self.from_answer is not None and is_json(response):
            body = yield exchange.read_all()
            if not looks_like_sse(body):
                yield from self.from_answer(decode_body(call, body, response.status_code))
                return
            reader = self._start_reader(response.status_code)  # an event stream mislabelled as JSON: one chunk
            self.record.raise_if_cancelled()
            yield from reader.feed(body)
        else:
            self._start_reader(response.status_code)
            if call.chunk_timeout is not None:
                _cap_reads(exchange.extensions, call.chunk_timeout)
            body_chunks = yield exchange.open_body()
            try:
                yield Pump(body_chunks, self.step)
            except _DrainOver:
                pass
            except TRANSPORT_ERRORS as exc:  # a body read straight from its connection (._direct): httpx's error
                raise as_httpx(exc) from exc
            yield exchange.release()
        yield from self._end()

    def step(self, raw: bytes) -> list[Any]:
        """The events one network read completed (the pump's step: the per-chunk hot path)."""
        record = self.record
        if record.cancelled or record.expired:
            record.raise_if_cancelled()
        self._room -= len(raw)
        if self._room < 0:
            raise _too_long(self.exchange.call.provider, self.reader)
        reader: JSONEventReader = self.reader  # type: ignore[assignment]
        events = reader.feed(raw)
        if reader.done:  # drain briefly so the connection can be reused, then let go
            if self._drain_until is None:
                self._drain_until = _start_drain(record)
            elif time.monotonic() > self._drain_until:
                raise _DrainOver
        return events

    def salvage(self, failure: Exception) -> list[Any] | None:
        return salvage(self.reader) if isinstance(failure, httpx.HTTPError) else None

    def output_seen(self) -> bool:
        return self.reader is not None and self.reader.output_seen

    def repeatable(self) -> bool:
        return self.reader is None or self.reader.repeatable

    def billed(self) -> Any:
        return None if self.reader is None else self.reader.billed()

    def error(self, failure: Exception) -> LLMError | None:
        """A read timeout with ``chunk_timeout_s`` set: the silence it was, as a retryable timeout."""
        timeout = self.exchange.call.chunk_timeout
        if timeout is None or not isinstance(failure, httpx.ReadTimeout) or self.reader is None:
            return None
        return LLMTimeoutError(
            f"the stream was silent for more than chunk_timeout_s ({timeout:g}s)",
            provider=self.exchange.call.provider, retryable=True,
        )

    def _start_reader(self, status: int) -> JSONEventReader:
        reader = self.reader = self.make_reader()
        reader.secrets, reader.status_code = self.exchange.call.secrets, status
        return reader

    def _end(self) -> Generator[Any, Any, None]:
        """The body ended: a last event without its blank line, then the check that the stream is complete."""
        self.record.raise_if_cancelled()
        reader: JSONEventReader = self.reader  # type: ignore[assignment]
        if not reader.done:
            yield from reader.finish()
        error = truncated(self.exchange.call, reader)
        if error is not None:
            raise error


def _too_long(provider: str | None, reader: JSONEventReader | None) -> MalformedResponseError:
    return MalformedResponseError(
        f"the streamed answer passed {MAX_STREAM_BYTES // (1024 * 1024)} MiB without ending; refused rather than "
        "held in memory", provider=provider, status_code=getattr(reader, "status_code", None))


def _cap_reads(extensions: dict[str, Any], seconds: float) -> None:
    """Let each read of the body wait at most ``seconds`` (``extensions``: the request's).

    httpx hands the request's extensions to httpcore as the same mapping (and
    :mod:`._direct` hands its own), and the connection takes the read timeout
    from it when the body starts, so setting it after the headers bounds the
    body only, not the wait for the answer.
    """
    timeouts = dict(extensions.get("timeout") or {})
    read = timeouts.get("read")
    timeouts["read"] = seconds if read is None else min(read, seconds)
    extensions["timeout"] = timeouts


def _start_drain(record: InFlight) -> float:
    """Let the body's remaining reads take at most DRAIN_GRACE; return when draining must stop.

    A watched connection (the pooled clients) caps its read timeout; for an
    injected client a timer shuts the response's socket down if the drain
    outlasts the grace (the failed read then ends the complete answer).
    """
    stream = record.reads
    if stream is not None:
        stream.read_cap = DRAIN_GRACE
    else:
        record.arm_drain(DRAIN_GRACE)
    return time.monotonic() + DRAIN_GRACE
