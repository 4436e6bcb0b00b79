"""HTTP transport shared by the bundled providers: pooling, retries, cancellation.

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
the API's ``retry-after`` (capped at :data:`MAX_RETRY_SLEEP`) or an
exponential backoff, but only while no output has been yielded: once the
caller has seen output, repeating the request would duplicate it. Events
that carry none yet (Anthropic's ``message_start``, OpenAI's role-only first
chunk) do not count, because APIs often fail right after sending them.

Cancellation: every call registers an :class:`InFlight` record in the
provider instance's :class:`InFlightTable` under its request id.
``cancel(request_id)`` (from any thread or task) marks it, wakes a retry
sleep, and shuts down the response's socket. Shutting down the socket, unlike
closing the response from a foreign thread, wakes a reader blocked in
``recv`` at once in both the sync and the async (selector) case; the driver
then raises :class:`~agent_core.errors.ProviderRequestCancelled`.

Pooling: provider instances live for one request, so connections are pooled
here, per ``(base_url, timeout)``, in module-level clients (async ones per
event loop, since an ``AsyncClient``'s connections belong to one loop).
:func:`close_clients` / :func:`aclose_clients` close them; an ``atexit`` hook
closes the sync ones.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import socket
import threading
import uuid
import weakref
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
import msgspec

from agent_core.errors import LLMError, ProviderRequestCancelled, ProviderUnavailableError

from ._errors import error_from_response, error_from_transport, scrub
from ._sse import JSONEventReader, quote_line

__all__ = [
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

#: Longest sleep before a retry, whatever ``retry-after`` says.
MAX_RETRY_SLEEP = 60.0
_BACKOFF_BASE = 0.5
_json_decoder = msgspec.json.Decoder()


@dataclass(frozen=True, slots=True)
class HTTPCall:
    """Everything needed to send one API request (built fresh for each call).

    ``secrets`` are scrubbed from every error text; ``repr`` leaves out the
    headers and the secrets, so a logged call never shows a key.
    """

    provider: str
    url: str
    body: bytes
    headers: Mapping[str, str] = field(repr=False)
    max_retries: int = 2
    secrets: tuple[str, ...] = field(default=(), repr=False)
    method: str = "POST"


# -- retry policy (pure) ---------------------------------------------------------


def retry_delay(error: LLMError, attempt: int, max_retries: int) -> float | None:
    """Seconds to wait before retry number ``attempt + 1``, or ``None`` for "give up".

    Retries only errors marked ``retryable``; honours ``retry_after`` when the
    API gave one, else backs off exponentially; never sleeps longer than
    :data:`MAX_RETRY_SLEEP`.
    """
    if attempt >= max_retries or not error.retryable:
        return None
    after = getattr(error, "retry_after", None)
    delay = after if after is not None else _BACKOFF_BASE * (2**attempt)
    return min(max(0.0, float(delay)), MAX_RETRY_SLEEP)


def _check_status(call: HTTPCall, response: httpx.Response, body: bytes) -> None:
    if response.status_code >= 400:
        raise error_from_response(call.provider, response.status_code, response.headers, body, call.secrets)


def _decode_body(call: HTTPCall, body: bytes) -> Any:
    try:
        return _json_decoder.decode(body)
    except msgspec.DecodeError:
        raise LLMError(f"the API answered with invalid JSON: {quote_line(body)}", provider=call.provider) from None


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


# -- in-flight requests and cancellation -------------------------------------------


class InFlight:
    """One running call: its current response and whether it was cancelled."""

    __slots__ = ("request_id", "cancelled", "response", "_wake", "_loop", "_async_wake")

    def __init__(self, request_id: str) -> None:
        self.request_id = request_id
        self.cancelled = False
        self.response: httpx.Response | None = None
        self._wake = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._async_wake: asyncio.Event | None = None

    def bind_loop(self) -> None:
        """Remember the running loop so a cancel from another thread can wake it."""
        self._loop = asyncio.get_running_loop()
        self._async_wake = asyncio.Event()

    def cancel(self) -> None:
        self.cancelled = True
        self._wake.set()
        if self._loop is not None and self._async_wake is not None:
            try:
                self._loop.call_soon_threadsafe(self._async_wake.set)
            except RuntimeError:  # the loop is already closed
                pass
        response = self.response
        if response is not None:
            _abort(response, self._loop)

    def sleep(self, seconds: float) -> bool:
        """Sleep (sync); True when woken by a cancel."""
        return self._wake.wait(seconds)

    async def asleep(self, seconds: float) -> bool:
        """Sleep (async); True when woken by a cancel."""
        assert self._async_wake is not None
        try:
            await asyncio.wait_for(self._async_wake.wait(), seconds)
        except asyncio.TimeoutError:
            return self.cancelled
        return True

    def raise_if_cancelled(self) -> None:
        if self.cancelled:
            raise ProviderRequestCancelled(self.request_id)


def _abort(response: httpx.Response, loop: asyncio.AbstractEventLoop | None) -> None:
    """Wake whoever reads ``response``: shut its socket down, else close it."""
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if sock is not None:
        try:
            if isinstance(sock, socket.socket):
                # The base method: ssl.SSLSocket.shutdown would also drop its
                # SSL object under the feet of the thread reading from it.
                socket.socket.shutdown(sock, socket.SHUT_RDWR)
            else:  # asyncio's TransportSocket
                sock.shutdown(socket.SHUT_RDWR)
            return
        except OSError:
            return  # already closed: the reader is waking up anyway
    # No socket (an injected in-memory transport): close the response instead.
    if loop is None:
        response.close()
    else:
        try:
            loop.call_soon_threadsafe(lambda: loop.create_task(response.aclose()))
        except RuntimeError:
            pass


class InFlightTable:
    """The calls running on one provider instance, by request id (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[str, InFlight] = {}

    def open(self, request_id: str | None) -> InFlight:
        record = InFlight(request_id or f"anonymous-{uuid.uuid4().hex}")
        with self._lock:
            self._items[record.request_id] = record
        return record

    def close(self, record: InFlight) -> None:
        with self._lock:
            if self._items.get(record.request_id) is record:
                del self._items[record.request_id]

    def cancel(self, request_id: str) -> bool:
        """Cancel the call for ``request_id``; False when none is running."""
        with self._lock:
            record = self._items.get(request_id)
        if record is None:
            return False
        record.cancel()
        return True


# -- the drivers -----------------------------------------------------------------------


def _give_up_or_wait(call: HTTPCall, error: LLMError, attempt: int) -> float:
    delay = retry_delay(error, attempt, call.max_retries)
    if delay is None:
        raise error
    log.info("%s: retry %d/%d in %.2fs after: %s", call.provider, attempt + 1, call.max_retries, delay, error)
    return delay


def stream_call(
    client: httpx.Client,
    call: HTTPCall,
    make_reader: Callable[[], JSONEventReader],
    record: InFlight,
) -> Iterator[Any]:
    """Send ``call`` and yield its decoded SSE events (sync).

    Raises:
        LLMError: a typed error for an error status, a transport failure, a
            malformed or truncated stream, or an error event.
        ProviderRequestCancelled: ``record`` was cancelled.
    """
    attempt = 0
    while True:
        reader: JSONEventReader | None = None
        try:
            with client.stream(call.method, call.url, headers=call.headers, content=call.body) as response:
                record.response = response
                record.raise_if_cancelled()
                if response.status_code >= 400:
                    _check_status(call, response, response.read())
                reader = make_reader()
                for raw in response.iter_bytes():
                    record.raise_if_cancelled()
                    for event in reader.feed(raw):
                        yield event
                    # After the end marker the loop only drains the body, so the
                    # connection goes back to the pool instead of being dropped.
                record.raise_if_cancelled()
                truncated = _truncated(call, reader)
                if truncated is not None:
                    raise truncated
                return
        except httpx.HTTPError as exc:
            record.raise_if_cancelled()
            if reader is not None and reader.done:
                return  # the answer was complete; only the body's tail broke off
            error: LLMError = _transport_error(call, exc, reader)
        except LLMError as exc:
            record.raise_if_cancelled()
            error = exc
        finally:
            record.response = None
        if reader is not None and reader.output_seen:
            raise error  # never retry after the caller saw output
        delay = _give_up_or_wait(call, error, attempt)
        if record.sleep(delay):
            record.raise_if_cancelled()
        attempt += 1


async def astream_call(
    client: httpx.AsyncClient,
    call: HTTPCall,
    make_reader: Callable[[], JSONEventReader],
    record: InFlight,
) -> AsyncIterator[Any]:
    """Async twin of :func:`stream_call` (same errors, same retry rule)."""
    record.bind_loop()
    attempt = 0
    while True:
        reader: JSONEventReader | None = None
        try:
            async with client.stream(call.method, call.url, headers=call.headers, content=call.body) as response:
                record.response = response
                record.raise_if_cancelled()
                if response.status_code >= 400:
                    _check_status(call, response, await response.aread())
                reader = make_reader()
                async for raw in response.aiter_bytes():
                    record.raise_if_cancelled()
                    for event in reader.feed(raw):
                        yield event
                    # After the end marker the loop only drains the body, so the
                    # connection goes back to the pool instead of being dropped.
                record.raise_if_cancelled()
                truncated = _truncated(call, reader)
                if truncated is not None:
                    raise truncated
                return
        except httpx.HTTPError as exc:
            record.raise_if_cancelled()
            if reader is not None and reader.done:
                return  # the answer was complete; only the body's tail broke off
            error: LLMError = _transport_error(call, exc, reader)
        except LLMError as exc:
            record.raise_if_cancelled()
            error = exc
        finally:
            record.response = None
        if reader is not None and reader.output_seen:
            raise error
        delay = _give_up_or_wait(call, error, attempt)
        if await record.asleep(delay):
            record.raise_if_cancelled()
        attempt += 1


def post_call(client: httpx.Client, call: HTTPCall, record: InFlight) -> Any:
    """Send ``call`` and return its decoded JSON answer (sync, with retries)."""
    attempt = 0
    while True:
        try:
            with client.stream(call.method, call.url, headers=call.headers, content=call.body) as response:
                record.response = response
                body = response.read()
            record.raise_if_cancelled()
            _check_status(call, response, body)
            return _decode_body(call, body)
        except httpx.HTTPError as exc:
            record.raise_if_cancelled()
            error: LLMError = error_from_transport(call.provider, exc, call.secrets)
        except LLMError as exc:
            error = exc
        finally:
            record.response = None
        delay = _give_up_or_wait(call, error, attempt)
        if record.sleep(delay):
            record.raise_if_cancelled()
        attempt += 1


async def apost_call(client: httpx.AsyncClient, call: HTTPCall, record: InFlight) -> Any:
    """Async twin of :func:`post_call`."""
    record.bind_loop()
    attempt = 0
    while True:
        try:
            async with client.stream(call.method, call.url, headers=call.headers, content=call.body) as response:
                record.response = response
                body = await response.aread()
            record.raise_if_cancelled()
            _check_status(call, response, body)
            return _decode_body(call, body)
        except httpx.HTTPError as exc:
            record.raise_if_cancelled()
            error: LLMError = error_from_transport(call.provider, exc, call.secrets)
        except LLMError as exc:
            error = exc
        finally:
            record.response = None
        delay = _give_up_or_wait(call, error, attempt)
        if await record.asleep(delay):
            record.raise_if_cancelled()
        attempt += 1


# -- connection pools ---------------------------------------------------------------------

_pool_lock = threading.Lock()
_sync_clients: dict[tuple[str, float], httpx.Client] = {}
_async_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, float], httpx.AsyncClient]] = (
    weakref.WeakKeyDictionary()
)


def _timeout(seconds: float) -> httpx.Timeout:
    # Connecting should fail fast even when a long read timeout suits slow models.
    return httpx.Timeout(seconds, connect=min(seconds, 15.0))


def sync_client_for(base_url: str, timeout: float) -> httpx.Client:
    """The pooled sync client for ``(base_url, timeout)``, created on first use."""
    key = (base_url, float(timeout))
    with _pool_lock:
        client = _sync_clients.get(key)
        if client is None or client.is_closed:
            client = _sync_clients[key] = httpx.Client(timeout=_timeout(timeout))
        return client


def async_client_for(base_url: str, timeout: float) -> httpx.AsyncClient:
    """The pooled async client for ``(base_url, timeout)`` in the running event loop."""
    loop = asyncio.get_running_loop()
    key = (base_url, float(timeout))
    with _pool_lock:
        clients = _async_clients.setdefault(loop, {})
        client = clients.get(key)
        if client is None or client.is_closed:
            client = clients[key] = httpx.AsyncClient(timeout=_timeout(timeout))
        return client


def close_clients() -> None:
    """Close every pooled sync client (also run at interpreter exit).

    Async clients belong to their event loop; close them from inside it with
    :func:`aclose_clients`. Those of loops that ended are dropped here.
    """
    with _pool_lock:
        clients = list(_sync_clients.values())
        _sync_clients.clear()
        for loop in list(_async_clients):
            if loop.is_closed():
                del _async_clients[loop]
    for client in clients:
        client.close()


async def aclose_clients() -> None:
    """Close the pooled async clients of the running event loop."""
    loop = asyncio.get_running_loop()
    with _pool_lock:
        clients = list(_async_clients.pop(loop, {}).values())
    for client in clients:
        await client.aclose()


atexit.register(close_clients)
