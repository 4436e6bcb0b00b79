"""HTTP transport shared by the bundled providers: retries, deadlines, cancellation.

Theory of operation
-------------------
A provider call is described by an :class:`HTTPCall` (URL, headers with the
credentials added at send time, JSON body, retry budget). Four thin drivers
send it: :func:`stream_call` / :func:`astream_call` (SSE, yielding decoded
events) and :func:`post_call` / :func:`apost_call` (one JSON answer). The sync
and async twins differ only in ``await``; everything that decides something
(error mapping, the retry verdict, SSE decoding, the "stream complete" check)
is a pure function shared by both.

Retries: an attempt that fails with a retryable error (429, 5xx/529, a
dropped connection, a timeout) is repeated up to ``max_retries`` times, after
the API's ``retry-after`` or an exponential backoff, but only while no output
has been yielded: once the caller has seen output, repeating the request
would duplicate it. Events that carry none yet (Anthropic's
``message_start``, OpenAI's role-only first chunk) do not count, because APIs
often fail right after sending them. A ``retry-after`` longer than
``max_retry_wait_s`` is not slept through: the error is raised at once, with
its ``retry_after``. A pooled keep-alive connection that the server had
already closed (it fails before the first byte of the answer) is not a
retry: the request goes again at once on a fresh connection.

Ends of streams: after the end marker (``[DONE]`` / ``message_stop``) the
rest of the body is drained for at most :data:`DRAIN_GRACE` seconds, so the
connection can go back to the pool, and then dropped: a server that keeps
the body open does not hold the answer back (on the pooled clients the reads
get a short timeout; on injected clients a timer shuts the socket down). A body that ends without the
blank line after its last event still delivers that event.

Cancellation and deadlines: every call registers an :class:`InFlight` record
in the provider instance's :class:`InFlightTable` under its request id.
``cancel(request_id)`` (from any thread or task) marks it, wakes a retry
sleep, and shuts down the socket of the request: from the moment the request
is written (see :mod:`._pool`), so a server that has not sent its headers
yet is no obstacle, and also after the headers for injected clients. Shutting
a socket down, unlike closing a response from a foreign thread, wakes a
reader blocked in ``recv`` at once in both the sync and the async (selector)
case; the driver then raises :class:`~agent_core.errors.ProviderRequestCancelled`.
``deadline_s`` arms a timer that does the same and raises
:class:`~agent_core.errors.LLMTimeoutError` instead.

Secrets: every error leaving a driver is scrubbed of the call's secrets
(:func:`~._errors.scrub_error`), whoever built it.
"""

from __future__ import annotations

import asyncio
import logging
import math
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpcore
import httpx
import msgspec
from agent_core.errors import (
    LLMError,
    LLMTimeoutError,
    MalformedResponseError,
    ProviderRequestCancelled,
    ProviderUnavailableError,
)

from ._errors import error_from_response, error_from_transport, scrub, scrub_error
from ._pool import aclose_clients, async_client_for, bound, close_clients, sync_client_for
from ._sse import JSONEventReader, quote_line

__all__ = [
    "DRAIN_GRACE",
    "MAX_RETRY_SLEEP",
    "HTTPCall",
    "InFlight",
    "InFlightTable",
    "aclose_clients",
    "apost_call",
    "astream_call",
    "async_client_for",
    "close_clients",
    "post_call",
    "retry_delay",
    "stream_call",
    "sync_client_for",
]

log = logging.getLogger("agent_core_providers")

#: Default longest wait before a retry (``max_retry_wait_s``); a longer ``retry-after`` fails fast.
MAX_RETRY_SLEEP = 60.0
#: Seconds the rest of a body may take after the end marker before the connection is dropped.
DRAIN_GRACE = 0.25
#: Stale pooled connections replaced per call without counting as a retry.
_MAX_STALE = 4
_BACKOFF_BASE = 0.5
_json_decoder = msgspec.json.Decoder()

FromAnswer = Callable[[Any], Iterable[Any]]


@dataclass(frozen=True, slots=True)
class HTTPCall:
    """Everything needed to send one API request (built fresh for each call).

    ``secrets`` are scrubbed from every error text; ``repr`` leaves out the
    headers and the secrets, so a logged call never shows a key.
    ``max_retry_wait`` caps a ``retry-after`` worth waiting for; ``deadline``
    (seconds, ``None`` for none) bounds the whole call, retries included.
    """

    provider: str
    url: str
    body: bytes
    headers: Mapping[str, str] = field(repr=False)
    max_retries: int = 2
    secrets: tuple[str, ...] = field(default=(), repr=False)
    method: str = "POST"
    max_retry_wait: float = MAX_RETRY_SLEEP
    deadline: float | None = None


# -- retry policy (pure) ---------------------------------------------------------


def retry_delay(error: LLMError, attempt: int, max_retries: int, max_wait: float = MAX_RETRY_SLEEP) -> float | None:
    """Seconds to wait before retry number ``attempt + 1``, or ``None`` for "give up".

    Retries only errors marked ``retryable``; honours ``retry_after`` when the
    API gave one, unless it is longer than ``max_wait`` (then gives up, so the
    caller learns at once how long the API wants); else backs off
    exponentially, never longer than ``max_wait``.
    """
    if attempt >= max_retries or not error.retryable:
        return None
    after = getattr(error, "retry_after", None)
    if after is not None:
        return None if after > max_wait else max(0.0, float(after))
    return min(_BACKOFF_BASE * (2**attempt), max_wait)


def _check_status(call: HTTPCall, response: httpx.Response, body: bytes) -> None:
    if response.status_code >= 400:
        raise error_from_response(
            call.provider, response.status_code, response.headers, body, call.secrets, url=call.url, method=call.method
        )


def _decode_body(call: HTTPCall, body: bytes, status: int) -> Any:
    try:
        return _json_decoder.decode(body)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        what = "not valid UTF-8" if isinstance(exc, UnicodeDecodeError) else "invalid JSON"
        raise MalformedResponseError(
            f"the API answered with {what}: {quote_line(body, secrets=call.secrets)}",
            provider=call.provider,
            status_code=status,
        ) from None


def _is_json(response: httpx.Response) -> bool:
    return response.headers.get("content-type", "").lower().startswith("application/json")


def _looks_like_sse(body: bytes) -> bool:
    return body.lstrip()[:6].startswith((b"data:", b"event:", b":", b"id:", b"retry:"))


async def _once(body: bytes) -> AsyncIterator[bytes]:
    yield body


def _truncated(call: HTTPCall, reader: JSONEventReader) -> LLMError | None:
    reason = reader.incomplete_reason()
    if reason is None:
        return None
    return ProviderUnavailableError(scrub(reason, call.secrets), provider=call.provider)


def _transport_error(call: HTTPCall, exc: httpx.HTTPError, reader: JSONEventReader | None) -> LLMError:
    """A transport failure, naming the half-received event when the body broke off."""
    error = error_from_transport(call.provider, exc, call.secrets)
    reason = reader.incomplete_reason() if reader is not None and reader.pending.strip() else None
    if reason is not None:
        error = type(error)(scrub(f"{error.message}; {reason}", call.secrets), provider=call.provider)
    return error


def _salvage(reader: JSONEventReader | None) -> list[Any] | None:
    """After the body broke off: the last events if they complete the answer, else ``None``."""
    if reader is None:
        return None
    if reader.done:
        return []
    try:
        events = reader.finish()
    except LLMError:
        return None
    return events if reader.done else None


def _start_drain(record: InFlight) -> float:
    """Let the body's remaining reads take at most DRAIN_GRACE; return when draining must stop.

    A watched connection (the pooled clients) caps its read timeout; for an
    injected client a timer shuts the response's socket down if the drain
    outlasts the grace (the failed read then ends the complete answer).
    """
    stream = record.stream
    if stream is not None:
        stream.read_cap = DRAIN_GRACE
    else:
        record.arm_drain(DRAIN_GRACE)
    return time.monotonic() + DRAIN_GRACE


def _stale(exc: httpx.HTTPError, record: InFlight) -> bool:
    """A reused pooled connection failed before any byte of the answer: the server had closed it."""
    return (
        isinstance(exc, httpx.TransportError)
        and not isinstance(exc, httpx.TimeoutException)
        and record.reused
        and not record.received
    )


def _wait_error(call: HTTPCall, error: LLMError) -> LLMError:
    """``error`` with a note saying why it was not waited out, when the API asked for too long a wait."""
    after = getattr(error, "retry_after", None)
    if after is not None and after > call.max_retry_wait and error.retryable:
        note = f"; not retried: the API asks to wait {after:g}s, more than max_retry_wait_s ({call.max_retry_wait:g}s)"
        error.message += note
        error.args = (error.message, *error.args[1:])
    return error


# -- in-flight requests, cancellation and deadlines -------------------------------------------


class InFlight:
    """One running call: its current connection and response, and whether it was stopped.

    ``cancelled`` (by the caller) and ``expired`` (``deadline_s`` passed) both
    stop the call; :meth:`raise_if_cancelled` raises the matching error.
    ``stream``, ``reused`` and ``received`` describe the current attempt's
    connection (set by the watched streams of :mod:`._pool`).
    """

    __slots__ = (
        "request_id",
        "cancelled",
        "expired",
        "response",
        "stream",
        "reused",
        "received",
        "_wake",
        "_loop",
        "_async_wake",
        "_timer",
        "_drain_timer",
        "_deadline",
        "_provider",
    )

    def __init__(self, request_id: str) -> None:
        self.request_id = request_id
        self.cancelled = False
        self.expired = False
        self.response: httpx.Response | None = None
        self.stream: Any = None
        self.reused = False
        self.received = False
        self._wake = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._async_wake: asyncio.Event | None = None
        self._timer: Any = None
        self._drain_timer: Any = None
        self._deadline: float | None = None
        self._provider: str | None = None

    def bind_loop(self) -> None:
        """Remember the running loop so a cancel from another thread can wake it."""
        self._loop = asyncio.get_running_loop()
        self._async_wake = asyncio.Event()

    def arm(self, call: HTTPCall) -> None:
        """Start the ``deadline`` timer of ``call`` (if it has one)."""
        self._provider = call.provider
        if call.deadline is None or math.isinf(call.deadline):
            return
        self._deadline = call.deadline
        if self._loop is not None:
            self._timer = self._loop.call_later(call.deadline, self.expire)
        else:
            timer = threading.Timer(call.deadline, self.expire)
            timer.daemon = True
            timer.start()
            self._timer = timer

    def disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def arm_drain(self, seconds: float) -> None:
        """Shut the current response's socket if it is still being drained ``seconds`` from now."""
        if self._loop is not None:
            self._drain_timer = self._loop.call_later(seconds, self._abort_response)
        else:
            timer = threading.Timer(seconds, self._abort_response)
            timer.daemon = True
            timer.start()
            self._drain_timer = timer

    def end_drain(self) -> None:
        if self._drain_timer is not None:
            self._drain_timer.cancel()
            self._drain_timer = None

    def _abort_response(self) -> None:
        response = self.response
        if response is not None:
            _abort(response, self._loop)

    def begin_attempt(self) -> None:
        self.stream = None
        self.reused = False
        self.received = False

    def watch(self, stream: Any) -> None:
        """Called by a watched stream on the first write of this attempt's request."""
        self.stream = stream
        self.reused = stream.requests > 0
        stream.requests += 1
        self.received = False
        if self.cancelled or self.expired:  # checked after publishing the stream: a cancel sees one or the other
            raise httpcore.WriteError("request cancelled before it was sent")

    def cancel(self) -> None:
        self.cancelled = True
        self._interrupt()

    def expire(self) -> None:
        self.expired = True
        self._interrupt()

    def _interrupt(self) -> None:
        self._wake.set()
        if self._loop is not None and self._async_wake is not None:
            try:
                self._loop.call_soon_threadsafe(self._async_wake.set)
            except RuntimeError:  # the loop is already closed
                pass
        stream = self.stream
        if stream is not None:
            _shutdown(stream.get_extra_info("socket"))
        response = self.response
        if response is not None:
            _abort(response, self._loop)

    def sleep(self, seconds: float) -> bool:
        """Sleep (sync); True when woken by a cancel or the deadline."""
        return self._wake.wait(seconds)

    async def asleep(self, seconds: float) -> bool:
        """Sleep (async); True when woken by a cancel or the deadline."""
        assert self._async_wake is not None
        try:
            await asyncio.wait_for(self._async_wake.wait(), seconds)
        except asyncio.TimeoutError:
            return self.cancelled or self.expired
        return True

    def raise_if_cancelled(self) -> None:
        if self.cancelled:
            raise ProviderRequestCancelled(self.request_id)
        if self.expired:
            raise LLMTimeoutError(
                f"the request did not finish within its deadline_s of {self._deadline:g}s",
                provider=self._provider,
                retryable=False,
            )


def _shutdown(sock: Any) -> bool:
    """Shut ``sock`` down so a blocked reader wakes; False when there is no socket to shut."""
    if sock is None:
        return False
    try:
        if isinstance(sock, socket.socket):
            # The base method: ssl.SSLSocket.shutdown would also drop its
            # SSL object under the feet of the thread reading from it.
            socket.socket.shutdown(sock, socket.SHUT_RDWR)
        else:  # asyncio's TransportSocket
            sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed: the reader is waking up anyway
    return True


def _abort(response: httpx.Response, loop: asyncio.AbstractEventLoop | None) -> None:
    """Wake whoever reads ``response``: shut its socket down, else close it."""
    stream = response.extensions.get("network_stream")
    if _shutdown(stream.get_extra_info("socket") if stream is not None else None):
        return
    # No socket (an injected in-memory transport): close the response instead.
    if loop is None:
        response.close()
    else:
        try:
            loop.call_soon_threadsafe(lambda: loop.create_task(response.aclose()))
        except RuntimeError:
            pass


class InFlightTable:
    """The calls running on one provider instance, by request id (thread-safe).

    A cancel can arrive between the engine handing the request to this
    provider and the call opening its record (the engine attaches the
    provider first, then calls it). Such an early cancel is remembered, and
    the call that later opens under that id starts out cancelled instead of
    running to the end. Provider instances live for one request, so the
    remembered ids cannot pile up.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[str, InFlight] = {}
        self._cancelled_early: set[str] = set()

    def open(self, request_id: str | None) -> InFlight:
        record = InFlight(request_id or f"anonymous-{uuid.uuid4().hex}")
        with self._lock:
            self._items[record.request_id] = record
            early = record.request_id in self._cancelled_early
        if early:
            record.cancel()
        return record

    def close(self, record: InFlight) -> None:
        record.disarm()
        with self._lock:
            if self._items.get(record.request_id) is record:
                del self._items[record.request_id]

    def cancel(self, request_id: str) -> bool:
        """Cancel the call for ``request_id``; False when none is running."""
        with self._lock:
            record = self._items.get(request_id)
            if record is None:
                self._cancelled_early.add(request_id)
        if record is None:
            return False
        record.cancel()
        return True


# -- the drivers -----------------------------------------------------------------------


def _give_up_or_wait(call: HTTPCall, error: LLMError, attempt: int, record: InFlight) -> float:
    delay = retry_delay(error, attempt, call.max_retries, call.max_retry_wait)
    if delay is None:
        raise _wait_error(call, error)
    log.info("%s: retry %d/%d in %.2fs after: %s", call.provider, attempt + 1, call.max_retries, delay, error)
    return delay


class _Attempts:
    """The bookkeeping every driver's retry loop shares, so the four drivers differ only in their I/O.

    An attempt begins by checking for a cancel. A failed one is first a
    candidate for an immediate resend (a pooled connection the server had
    closed, a bounded number of times), else a typed, scrubbed error that is
    either waited out (the retry rule, :func:`retry_delay`) or raised.
    """

    __slots__ = ("call", "record", "attempt", "stale")

    def __init__(self, call: HTTPCall, record: InFlight) -> None:
        self.call, self.record = call, record
        self.attempt = self.stale = 0
        record.arm(call)

    def begin(self) -> None:
        self.record.raise_if_cancelled()
        self.record.begin_attempt()

    def resend(self, exc: Exception) -> bool:
        """True when ``exc`` only means a stale pooled connection: send again at once."""
        if isinstance(exc, httpx.HTTPError) and _stale(exc, self.record) and self.stale < _MAX_STALE:
            self.stale += 1
            log.debug("%s: pooled connection was closed by the server; sending again", self.call.provider)
            return True
        return False

    def error(self, exc: Exception, reader: JSONEventReader | None = None) -> LLMError:
        """The typed error a failed attempt raised (an LLMError) or caused (a transport failure), scrubbed."""
        if isinstance(exc, LLMError):
            return scrub_error(exc, self.call.secrets)
        return _transport_error(self.call, exc, reader)  # type: ignore[arg-type]

    def delay(self, error: LLMError) -> float:
        """How long to wait before the next attempt; raises ``error`` when it is not retried."""
        delay = _give_up_or_wait(self.call, error, self.attempt, self.record)
        self.attempt += 1
        return delay


def _identity(response: httpx.Response) -> bool:
    """True when the body is sent as it is (no ``Content-Encoding``), the usual event stream.

    Then the raw bytes are read without httpx's decoder layer: one
    generator and a decoder call fewer per network read on the hot path.
    """
    if response.is_stream_consumed:  # a body already read (a replay, a mock transport): iter_bytes serves it
        return False
    encoding = response.headers.get("content-encoding")
    return not encoding or encoding.strip().lower() == "identity"


def _request(client: httpx.Client | httpx.AsyncClient, call: HTTPCall) -> httpx.Request:
    return client.build_request(call.method, call.url, headers=call.headers, content=call.body)


def stream_call(
    client: httpx.Client,
    call: HTTPCall,
    make_reader: Callable[[], JSONEventReader],
    record: InFlight,
    from_answer: FromAnswer | None = None,
) -> Iterator[Any]:
    """Send ``call`` and yield its decoded SSE events (sync).

    ``from_answer`` turns a complete JSON answer (a server that ignored
    ``stream: true``) into the events the stream would have carried.

    Raises:
        LLMError: a typed error for an error status, a transport failure, a
            malformed or truncated stream, or an error event.
        LLMTimeoutError: the call's deadline passed.
        ProviderRequestCancelled: ``record`` was cancelled.
    """
    tries = _Attempts(call, record)
    while True:
        tries.begin()
        reader: JSONEventReader | None = None
        tail: list[Any] | None = None
        try:
            with bound(record):
                response = client.send(_request(client, call), stream=True)
            try:
                record.response = response
                record.raise_if_cancelled()
                if response.status_code >= 400:
                    _check_status(call, response, response.read())
                chunks: Iterable[bytes] = response.iter_raw() if _identity(response) else response.iter_bytes()
                if from_answer is not None and _is_json(response):
                    body = response.read()
                    if not _looks_like_sse(body):
                        yield from from_answer(_decode_body(call, body, response.status_code))
                        return
                    chunks = (body,)  # an event stream mislabelled as JSON: read it as one
                reader = make_reader()
                reader.secrets, reader.status_code = call.secrets, response.status_code
                drain_until: float | None = None
                for raw in chunks:
                    record.raise_if_cancelled()
                    for event in reader.feed(raw):
                        yield event
                    if reader.done:  # drain briefly so the connection can be reused, then let go
                        if drain_until is None:
                            drain_until = _start_drain(record)
                        elif time.monotonic() > drain_until:
                            break
                record.raise_if_cancelled()
                if not reader.done:
                    for event in reader.finish():
                        yield event
                truncated = _truncated(call, reader)
                if truncated is not None:
                    raise truncated
                return
            finally:
                record.end_drain()
                record.response = None
                response.close()
        except (httpx.HTTPError, LLMError) as exc:
            record.raise_if_cancelled()
            tail = _salvage(reader) if isinstance(exc, httpx.HTTPError) else None
            if tail is None:
                if tries.resend(exc):
                    continue
                error = tries.error(exc, reader)
        if tail is not None:
            yield from tail  # the answer was complete; only the body's tail broke off
            return
        if reader is not None and reader.output_seen:
            raise error  # never retry after the caller saw output (raised here: no exception context)
        if record.sleep(tries.delay(error)):
            record.raise_if_cancelled()


async def astream_call(
    client: httpx.AsyncClient,
    call: HTTPCall,
    make_reader: Callable[[], JSONEventReader],
    record: InFlight,
    from_answer: FromAnswer | None = None,
) -> AsyncIterator[Any]:
    """Async twin of :func:`stream_call` (same errors, same retry rule)."""
    record.bind_loop()
    tries = _Attempts(call, record)
    while True:
        tries.begin()
        reader: JSONEventReader | None = None
        tail: list[Any] | None = None
        try:
            with bound(record):
                response = await client.send(_request(client, call), stream=True)
            try:
                record.response = response
                record.raise_if_cancelled()
                if response.status_code >= 400:
                    _check_status(call, response, await response.aread())
                chunks: AsyncIterator[bytes] = response.aiter_raw() if _identity(response) else response.aiter_bytes()
                if from_answer is not None and _is_json(response):
                    body = await response.aread()
                    if not _looks_like_sse(body):
                        for event in from_answer(_decode_body(call, body, response.status_code)):
                            yield event
                        return
                    chunks = _once(body)
                reader = make_reader()
                reader.secrets, reader.status_code = call.secrets, response.status_code
                drain_until: float | None = None
                async for raw in chunks:
                    record.raise_if_cancelled()
                    for event in reader.feed(raw):
                        yield event
                    if reader.done:
                        if drain_until is None:
                            drain_until = _start_drain(record)
                        elif time.monotonic() > drain_until:
                            break
                record.raise_if_cancelled()
                if not reader.done:
                    for event in reader.finish():
                        yield event
                truncated = _truncated(call, reader)
                if truncated is not None:
                    raise truncated
                return
            finally:
                record.end_drain()
                record.response = None
                await response.aclose()
        except (httpx.HTTPError, LLMError) as exc:
            record.raise_if_cancelled()
            tail = _salvage(reader) if isinstance(exc, httpx.HTTPError) else None
            if tail is None:
                if tries.resend(exc):
                    continue
                error = tries.error(exc, reader)
        if tail is not None:
            for event in tail:
                yield event
            return
        if reader is not None and reader.output_seen:
            raise error
        if await record.asleep(tries.delay(error)):
            record.raise_if_cancelled()


def post_call(client: httpx.Client, call: HTTPCall, record: InFlight) -> Any:
    """Send ``call`` and return its decoded JSON answer (sync, with retries).

    Raises the same errors as :func:`stream_call`; a body that is not JSON
    (or not UTF-8) is a :class:`~agent_core.errors.MalformedResponseError`.
    """
    tries = _Attempts(call, record)
    while True:
        tries.begin()
        try:
            with bound(record):
                response = client.send(_request(client, call), stream=True)
            try:
                record.response = response
                body = response.read()
            finally:
                record.response = None
                response.close()
            record.raise_if_cancelled()
            _check_status(call, response, body)
            return _decode_body(call, body, response.status_code)
        except (httpx.HTTPError, LLMError) as exc:
            record.raise_if_cancelled()
            if tries.resend(exc):
                continue
            error = tries.error(exc)
        if record.sleep(tries.delay(error)):
            record.raise_if_cancelled()


async def apost_call(client: httpx.AsyncClient, call: HTTPCall, record: InFlight) -> Any:
    """Async twin of :func:`post_call`."""
    record.bind_loop()
    tries = _Attempts(call, record)
    while True:
        tries.begin()
        try:
            with bound(record):
                response = await client.send(_request(client, call), stream=True)
            try:
                record.response = response
                body = await response.aread()
            finally:
                record.response = None
                await response.aclose()
            record.raise_if_cancelled()
            _check_status(call, response, body)
            return _decode_body(call, body, response.status_code)
        except (httpx.HTTPError, LLMError) as exc:
            record.raise_if_cancelled()
            if tries.resend(exc):
                continue
            error = tries.error(exc)
        if await record.asleep(tries.delay(error)):
            record.raise_if_cancelled()
