"""An in-flight request as ``cancel_request`` reaches it, and the per-request engine keys it reads."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from typing import Any

from ..errors import ConfigError, InvalidArgumentError, RequestInFlightError
from .effects import CancellationToken

__all__ = ["Flight", "RunCancelled", "in_flight", "tool_timeout_of"]


class RunCancelled(Exception):
    """Internal: the request was cancelled; the run unwinds to a ``cancelled`` outcome."""


class Flight:
    """An in-flight request, as ``cancel_request`` sees it."""

    __slots__ = ("request_id", "on_cancel", "token", "config", "_lock")

    def __init__(self, request_id: str, config: Mapping[str, Any] | None = None) -> None:
        self.request_id = request_id
        # the caller's config, secrets included: what a side request borrows; plugins never get it
        self.config: Mapping[str, Any] = config or {}
        self.on_cancel: Callable[[], None] | None = None  # stops the provider's call (its cancel_request hook)
        self.token = CancellationToken()  # what running tools get as ``cancellation``
        self._lock = threading.Lock()

    @property
    def cancelled(self) -> bool:
        return self.token.cancelled

    def cancel(self) -> None:
        self.token.cancel()
        with self._lock:
            on_cancel = self.on_cancel
        if on_cancel is not None:
            on_cancel()

    def attach(self, on_cancel: Callable[[], None]) -> None:
        """What cancelling should also do once the provider is known (tell it to drop its call)."""
        with self._lock:
            self.on_cancel = on_cancel


def tool_timeout_of(config: Mapping[str, Any]) -> float | None:
    """``tool_timeout_s``: seconds a tool call may run (None: no limit)."""
    value = config.get("tool_timeout_s")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or value == float("inf"):
        raise ConfigError(
            f"config key 'tool_timeout_s' must be a positive number of seconds (or null), got {value!r}",
            key="tool_timeout_s",
        )
    return float(value)


@contextlib.contextmanager
def in_flight(flights: MutableMapping[str, Flight], lock: Any, request_id: str,
              config: Mapping[str, Any] | None) -> Iterator[Flight]:
    """A :class:`Flight` for ``request_id`` in ``flights`` for the block (work outside a request: an action).

    Raises:
        InvalidArgumentError: ``request_id`` is not a non-empty string.
        RequestInFlightError: a request or action with that id is in flight already.
    """
    if not isinstance(request_id, str) or not request_id:
        raise InvalidArgumentError(f"request_id must be a non-empty string, got {request_id!r}", argument="request_id")
    flight = Flight(request_id, dict(config or {}))
    with lock:
        if request_id in flights:
            raise RequestInFlightError(request_id)
        flights[request_id] = flight
    try:
        yield flight
    finally:
        with lock:
            if flights.get(request_id) is flight:
                del flights[request_id]
