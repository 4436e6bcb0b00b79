"""The I/O of one API call, as effects: each step a ``Call`` whose sync and async callables do the same.

Theory of operation
-------------------
A provider call is an :class:`~._call.HTTPCall` (URL, headers with the
credentials, JSON body, retry budget). Its attempts are written once, as
generators: the retry rule in :mod:`._retry`, a streamed attempt in
:mod:`._streaming`, a one-shot attempt in :mod:`._oneshot`. Whenever an
attempt needs I/O (send, read the body, wait before a retry) it yields one of
the effects an :class:`Exchange` makes, and the driver of
:mod:`agent_core.plugin_kit` that runs it performs the effect: ``drive_sync``
calls the sync callable, ``drive_async`` awaits the async one, and the result
(or the exception) goes back in at the same ``yield``. The engine runs its
request the same way. So the sync and the async call differ only in the
pairs below, a line or two of httpx each, and everything that decides
something (the status, the retry verdict, SSE decoding, the "stream
complete" check) is the same code in both modes.

The body of a stream is read with the drivers' ``Pump``: the driver itself
loops over the network reads and hands each to the attempt's step function,
so a chunk costs no effect and no generator resumption of the attempt.

An :class:`Exchange` owns the response of the current attempt. The attempts
let it go themselves (:meth:`Exchange.release`) on every way out they see; the
provider hook that drives them closes the exchange for the one they cannot
see (``with`` around the sync driver; the async hook's ``FlowStream`` leaves
it as its context): a consumer that stops early closes the generator, and a
generator being closed can no longer ask for I/O. Closing
also ends the call's in-flight record (its deadline timer, its entry in the
provider's table of calls that can be cancelled).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
from agent_core.errors import MalformedResponseError
from agent_core.plugin_kit import Call, OpenIter

from ._call import HTTPCall, build_request
from ._decoding import raw_body
from ._direct import TRANSPORT_ERRORS, as_httpx, direct_chunks, plain_body
from ._inflight import InFlight
from ._pool import asend, send
from .transport.watched import bound

__all__ = ["MAX_ANSWER_BYTES", "Exchange"]

#: The largest whole (non-streamed) answer read, after any content decoding. A model's JSON answer is
#: kilobytes; an upstream sending more (a gzip bomb of a megabyte becomes a gigabyte) is refused, not kept.
MAX_ANSWER_BYTES = 64 * 1024 * 1024


class _Kept:
    """The parts of a body being read, refused once they pass :data:`MAX_ANSWER_BYTES`."""

    __slots__ = ("call", "status", "parts", "size")

    def __init__(self, call: HTTPCall, status: int) -> None:
        self.call, self.status, self.parts, self.size = call, status, [], 0

    def add(self, part: bytes) -> None:
        self.size += len(part)
        if self.size > MAX_ANSWER_BYTES:
            raise _too_long(self.call, self.status)
        self.parts.append(part)

    def body(self) -> bytes:
        return b"".join(self.parts)


def _too_long(call: HTTPCall, status: int) -> MalformedResponseError:
    return MalformedResponseError(
        f"the API's answer is larger than {MAX_ANSWER_BYTES // (1024 * 1024)} MiB once decoded; refused rather "
        "than held in memory", provider=call.provider, status_code=status)


class Exchange:
    """One API call's client, call, in-flight record and current response, and its I/O as effects.

    ``on_close`` is called with the record when the exchange closes (the
    provider's in-flight table forgets the call then). Use it as a context
    manager: ``with`` in sync code, ``async with`` in async code.
    """

    __slots__ = ("client", "call", "record", "response", "answered", "extensions", "_on_close")

    def __init__(
        self,
        client: httpx.Client | httpx.AsyncClient,
        call: HTTPCall,
        record: InFlight,
        on_close: Callable[[InFlight], None] | None = None,
    ) -> None:
        self.client, self.call, self.record = client, call, record
        self.response: httpx.Response | None = None
        self.answered: httpx.Headers | None = None  # the headers of the response that answered the call
        #: the current attempt's request extensions (its ``timeout``, which a stream's body reads when it starts)
        self.extensions: dict[str, Any] = {}
        self._on_close = on_close

    # -- the effects the attempts yield ---------------------------------------------------------

    def start(self) -> Call:
        """Arm the call's deadline: on a timer thread (sync) or on the running loop (async)."""
        return Call(self._start, self._astart, "start the API call")

    def send(self) -> Call:
        """Send the request; the value is the response, whose body is not read yet."""
        return Call(self._send, self._asend, "send the API request")

    def read_all(self) -> Call:
        """Read the whole body, then let the response go; the value is the body."""
        return Call(self._read_all, self._aread_all, "read the API answer")

    def open_body(self) -> OpenIter:
        """Open the body as an iterator of byte chunks, for a ``Pump``."""
        return OpenIter(self._chunks, self._achunks, "read the API event stream")

    def release(self) -> Call:
        """Let the current response go (nothing when there is none)."""
        return Call(self._release, self._arelease, "release the API response")

    def sleep(self, seconds: float) -> Call:
        """Wait before the next attempt; the value is True when a cancel or the deadline cut the wait short."""
        record = self.record
        return Call(lambda: record.sleep(seconds), lambda: record.asleep(seconds), "wait before retrying")

    # -- their sync and async callables ------------------------------------------------------------

    def _start(self) -> None:
        self.record.arm(self.call)

    async def _astart(self) -> None:
        self.record.bind_loop()
        self.record.arm(self.call)

    def _send(self) -> httpx.Response:
        client, record, call = self.client, self.record, self.call
        request = build_request(client, call, record.trace)
        self.extensions = request.extensions
        with bound(record):  # the watched connection reports to the record from the first write
            response = send(client, request)  # type: ignore[arg-type]
        self.response = record.response = response
        return response

    async def _asend(self) -> httpx.Response:
        client, record, call = self.client, self.record, self.call
        request = build_request(client, call, record.atrace)
        self.extensions = request.extensions
        with bound(record):
            response = await asend(client, request)  # type: ignore[arg-type]
        self.response = record.response = response
        return response

    def _read_all(self) -> bytes:
        try:
            response = self._current()
            kept, body = _Kept(self.call, response.status_code), plain_body(response)
            try:  # an encoded body (gzip...) is counted after decoding, read by read
                for part in response.iter_bytes() if body is None else body:
                    kept.add(part)
            except TRANSPORT_ERRORS as exc:
                raise as_httpx(exc) from exc
            return kept.body()
        finally:
            self._release()

    async def _aread_all(self) -> bytes:
        try:
            response = self._current()
            kept, body = _Kept(self.call, response.status_code), plain_body(response)
            try:
                async for part in response.aiter_bytes() if body is None else body:
                    kept.add(part)
            except TRANSPORT_ERRORS as exc:
                raise as_httpx(exc) from exc
            return kept.body()
        finally:
            await self._arelease()

    def _chunks(self) -> Iterator[bytes]:
        response = self._current()
        if not raw_body(response):
            return response.iter_bytes()
        return direct_chunks(response, False) or response.iter_raw()

    def _achunks(self) -> AsyncIterator[bytes]:
        response = self._current()
        if not raw_body(response):
            return response.aiter_bytes()
        return direct_chunks(response, True) or response.aiter_raw()

    def _release(self) -> None:
        response = self._detach()
        if response is not None:
            response.close()

    async def _arelease(self) -> None:
        response = self._detach()
        if response is not None:
            await response.aclose()

    def _current(self) -> httpx.Response:
        assert self.response is not None, "no response: send first"
        return self.response

    def _detach(self) -> httpx.Response | None:
        """Forget the current response (no drain, no cancel reaches it any more) and hand it over to close."""
        record = self.record
        record.end_drain()
        record.response = None
        response, self.response = self.response, None
        return response

    # -- closing, by the provider hook that drives the attempts ------------------------------------

    def _closed(self) -> None:
        if self._on_close is not None:
            self._on_close(self.record)

    def __enter__(self) -> Exchange:
        return self

    def __exit__(self, *exc_info: object) -> None:
        try:
            self._release()
        finally:
            self._closed()

    async def __aenter__(self) -> Exchange:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        try:
            await self._arelease()
        finally:
            self._closed()
