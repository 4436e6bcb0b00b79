"""The retry rule: which failed attempts are sent again, after how long, and what is raised.

An attempt that fails with a retryable error (429, 5xx/529, a dropped
connection, a cut stream, an ``overloaded_error`` event, a timeout, a stall
past ``chunk_timeout_s``) is repeated up to ``max_retries`` times, after the
API's ``retry-after`` or an exponential backoff (:func:`retry_delay`). A
``retry-after`` longer than ``max_retry_wait_s`` is not slept through: the
error is raised at once, with its ``retry_after`` and a note saying why.

Output already yielded does not stop a retry, but it changes two things.
The attempt must be repeatable: an answer in which the API ran a tool of its
own (Anthropic's server tools) is not, since a repeat would run it again and
bill it twice, so its failure is raised as it is. And the caller must learn
what to forget: before the new attempt a
:class:`~agent_core.StreamRetry` is yielded, carrying the failure and the
usage the broken attempt reported, so the engine can drop what it built from
the void chunks (see :mod:`agent_core.engine.retract`). Tools the client runs
are never a reason not to repeat: the engine runs them only after the call
has ended, so none has run while its stream is still open.

A 429 is retried at most ``rate_limit_retries`` times (default: as many as
``max_retries`` allows): a gateway whose clients retry on their own sets it
to 0, so one throttled request does not become their retries times ours.
A spent quota (:class:`~agent_core.errors.QuotaExceededError`) is never
retried: it is not ``retryable``.

A request is sent again without counting as a retry only when the failure
proves the upstream never read it: a write of the request failed (the
connection was reset or closed under it) and no byte of an answer came. A
pooled connection the upstream had closed while it sat idle is seen closed
before anything is written to it and is not used at all. Any other failure
(the request was written, then the connection dropped before the answer) may
have reached a server that read the request and is generating, and is billing,
its answer: it is a retry under ``max_retries`` like any other, so
``max_retries: 0`` means exactly one request reaches the upstream.

:func:`retried` is that rule as a generator of effects, run by a driver of
:mod:`agent_core.plugin_kit` (see :mod:`._exchange`); each kind of call
brings its :class:`Attempt`. Every error it raises is typed and scrubbed of
the call's secrets (:func:`~._errors.scrub_error`), whoever built it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator
from typing import Any

import httpx
from agent_core import StreamRetry
from agent_core.errors import LLMError, RateLimitError

from ._call import MAX_RETRY_SLEEP, HTTPCall
from ._errors import error_from_transport, scrub, scrub_error
from ._exchange import Exchange
from ._inflight import InFlight
from ._sse import JSONEventReader

__all__ = ["Attempt", "Retries", "retried", "retry_delay"]

log = logging.getLogger("agent_core_providers")

#: Requests sent again per call without counting as a retry, because their write failed.
_MAX_UNSENT = 4
_BACKOFF_BASE = 0.5


def retry_delay(
    error: LLMError,
    attempt: int,
    max_retries: int,
    max_wait: float = MAX_RETRY_SLEEP,
    *,
    rate_limited: int = 0,
    rate_limit_retries: int | None = None,
) -> float | None:
    """Seconds to wait before retry number ``attempt + 1``, or ``None`` for "give up".

    Retries only errors marked ``retryable``, and a 429 only while fewer than
    ``rate_limit_retries`` retries followed one (``rate_limited`` so far;
    ``None``: no bound of its own); honours ``retry_after`` when the API gave
    one, unless it is longer than ``max_wait`` (then gives up, so the caller
    learns at once how long the API wants); else backs off exponentially,
    never longer than ``max_wait``.
    """
    if attempt >= max_retries or not error.retryable:
        return None
    if rate_limit_retries is not None and isinstance(error, RateLimitError) and rate_limited >= rate_limit_retries:
        return None
    after = getattr(error, "retry_after", None)
    if after is not None:
        return None if after > max_wait else max(0.0, float(after))
    return min(_BACKOFF_BASE * (2**attempt), max_wait)


class Retries:
    """The bookkeeping of one call's attempts, shared by every kind of call.

    An attempt begins by checking for a cancel. A failed one is first a
    candidate for an immediate resend (:meth:`resend`), else a typed,
    scrubbed error (:meth:`error`) that is either waited out or raised
    (:meth:`delay`).
    """

    __slots__ = ("call", "record", "attempt", "unsent", "rate_limited")

    def __init__(self, call: HTTPCall, record: InFlight) -> None:
        self.call, self.record = call, record
        self.attempt = self.unsent = self.rate_limited = 0

    def begin(self) -> None:
        """Raise when the call was cancelled or ran out of time; else start a fresh attempt."""
        self.record.raise_if_cancelled()
        self.record.begin_attempt()

    def resend(self, exc: Exception) -> bool:
        """True when ``exc`` proves the upstream never read the request: send again at once."""
        if isinstance(exc, httpx.HTTPError) and _never_read(exc, self.record) and self.unsent < _MAX_UNSENT:
            self.unsent += 1
            log.debug("%s: the request could not be written whole (the connection was closed under it); "
                      "sending again", self.call.provider)
            return True
        return False

    def error(self, exc: Exception, reader: JSONEventReader | None = None) -> LLMError:
        """The typed error a failed attempt raised (an LLMError) or caused (a transport failure), scrubbed."""
        if isinstance(exc, LLMError):
            return scrub_error(exc, self.call.secrets)
        return _transport_error(self.call, exc, reader)  # type: ignore[arg-type]

    def delay(self, error: LLMError) -> float:
        """How long to wait before the next attempt.

        Raises:
            LLMError: ``error`` itself when it is not retried (with a note when
                the API asked for a longer wait than ``max_retry_wait``).
        """
        call = self.call
        delay = retry_delay(error, self.attempt, call.max_retries, call.max_retry_wait,
                            rate_limited=self.rate_limited, rate_limit_retries=call.rate_limit_retries)
        if delay is None:
            raise _wait_error(call, error)
        log.info("%s: retry %d/%d in %.2fs after: %s", call.provider, self.attempt + 1, call.max_retries, delay, error)
        self.attempt += 1
        self.rate_limited += isinstance(error, RateLimitError)
        return delay


class Attempt:
    """One try at a call: a generator of effects and events (:meth:`run`), and what a failure leaves.

    The base is a one-shot attempt's view of a failure: no reader, nothing
    to salvage, no output seen, always repeatable, no usage, no error of its
    own making. A streamed attempt overrides them.
    """

    __slots__ = ()

    reader: JSONEventReader | None = None
    #: a streamed attempt tells its caller of every retry (a StreamRetry), before output too
    announces: bool = False

    def run(self) -> Generator[Any, Any, None]:
        raise NotImplementedError

    def salvage(self, failure: Exception) -> list[Any] | None:
        """The events still owed when ``failure`` came after a complete answer, else ``None``."""
        return None

    def output_seen(self) -> bool:
        """True once the caller has seen output: a retry must tell it what to forget."""
        return False

    def repeatable(self) -> bool:
        """False when the API did work of its own in this attempt that a repeat would do again."""
        return True

    def billed(self) -> Any:
        """The usage the API reported for this attempt (normalized), or ``None``."""
        return None

    def error(self, failure: Exception) -> LLMError | None:
        """A typed error this attempt knows better than the transport mapping, else ``None``."""
        return None


def retried(exchange: Exchange, new_attempt: Callable[[], Attempt]) -> Generator[Any, Any, None]:
    """Attempts of ``exchange.call`` until one succeeds, under the retry rule: written once for every call.

    Yields the effects for a driver to run and the attempt's events for the
    caller. When an attempt fails with a typed error or a transport failure,
    its response is let go and then, in this order: a cancel or a passed
    deadline raises; a stream whose events already complete the answer ends
    with them; a request the upstream never read (its write failed) is sent again at once; else the
    typed, scrubbed error is raised when output was already seen of an
    attempt that is not repeatable, or when the rule gives up; or it is
    waited out before the next attempt, and a :class:`~agent_core.StreamRetry`
    is yielded first when output was already seen (it voids that output) or
    the attempt is streamed (it only says a retry is coming).

    Raises:
        LLMError: the last attempt's typed error.
        LLMTimeoutError: the call's deadline passed.
        ProviderRequestCancelled: the call was cancelled.
    """
    record = exchange.record
    retries = Retries(exchange.call, record)
    yield exchange.start()
    while True:
        retries.begin()
        attempt = new_attempt()
        try:
            yield from attempt.run()
            return
        except (httpx.HTTPError, LLMError) as exc:
            failure = exc
        yield exchange.release()
        record.raise_if_cancelled()
        tail = attempt.salvage(failure)
        if tail is not None:
            yield from tail  # the answer was complete; only the body's tail broke off
            return
        if retries.resend(failure):
            continue
        error = attempt.error(failure) or retries.error(failure, attempt.reader)
        seen = attempt.output_seen()
        if seen and not attempt.repeatable():
            raise error  # the API ran a tool of its own: a repeat would run it again (raised here: no context)
        delay = retries.delay(error)  # raises when the rule gives up
        if seen or attempt.announces:
            # Before the wait: a UI clears what it saw at once (seen), and can say why nothing comes
            # for a while (a 429's retry-after); a one-shot call has no stream to say it in.
            yield StreamRetry(retries.attempt + 1, error, attempt.billed() if seen else None, delay_s=delay,
                              voids=seen, attempts=exchange.call.max_retries + 1)
        if (yield exchange.sleep(delay)):
            record.raise_if_cancelled()


def _never_read(exc: httpx.HTTPError, record: InFlight) -> bool:
    """A write of the request failed and no byte of an answer came: the upstream cannot have read it."""
    return (
        isinstance(exc, httpx.TransportError)
        and not isinstance(exc, httpx.TimeoutException)
        and record.unsent
        and not record.received
    )


def _transport_error(call: HTTPCall, exc: httpx.HTTPError, reader: JSONEventReader | None) -> LLMError:
    """A transport failure, naming the half-received event when the body broke off."""
    error = error_from_transport(call.provider, exc, call.secrets, call.url)
    reason = reader.incomplete_reason() if reader is not None and reader.pending.strip() else None
    if reason is not None:
        message = scrub(f"{error.message}; {reason}", call.secrets)
        error = type(error)(message, provider=call.provider, upstream=error.upstream)
    return error


def _wait_error(call: HTTPCall, error: LLMError) -> LLMError:
    """``error`` with a note saying why it was not waited out, when the API asked for too long a wait."""
    after = getattr(error, "retry_after", None)
    if after is not None and after > call.max_retry_wait and error.retryable:
        note = f"; not retried: the API asks to wait {after:g}s, more than max_retry_wait_s ({call.max_retry_wait:g}s)"
        error.message += note
        error.args = (error.message, *error.args[1:])
    return error
