"""Observers: code that is told where a request is in its timeline, and never changes it.

Theory of operation. A feature that watches requests (the bundled ``otel``
tracer is one) returns an observer from its ``observe_request(config, *,
context=)`` hook. The hook runs once per request, after the init chain, in a
copy of the contextvars context the caller had when it made the request
(``request``, ``stream_request``, their async twins, ``request_flow``): a
tracer finds the caller's current span there, even when the events are read
on another thread or task. The engine then calls the observer at these
points, and nowhere else:

* ``provider_call_started(iteration, messages)``: before each provider call, its history ready;
* ``first_chunk(iteration)``: the first chunk of a streamed call arrived;
* ``provider_call_ended(iteration, messages)``: the call's finals, as the session keeps them;
* ``tool_started(iteration, call_id, tool_name, payload)``: a tool call runs now (after ``tool_pre``);
* ``tool_ended(call_id, message)``: its ``tool`` message, as the session keeps it;
* ``request_ended(outcome, usage, error)``: once, last. Whatever started and did not
  end failed with ``error``, or was abandoned (the caller stopped reading the events).

Cost: with no observer each point is one ``is None`` test, and a stream's
chunks pass exactly as they do without this module. With one, a streamed call
pulls its first chunk on its own (as ``announce_answer`` does) and every
later chunk goes through the same loop: nothing is done per chunk.

An observer is told, it does not take part: an exception from one of its
methods is logged on the ``agent_core.observe`` logger, naming the feature,
and that observer hears nothing more of the request, which goes on. (Its
``observe_request`` hook is a hook like any other: a failure there fails the
request, so a tracer that cannot work says so before anything runs.)
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from ..plugins.hooks import LivePlugin, call_hook
from ..values.events import Outcome, Usage
from ..values.messages import Message

__all__ = ["Observers", "RequestObserver", "observers_for"]

_log = logging.getLogger("agent_core.observe")

#: how a request that nobody read to its end is reported to its observers
ABANDONED = Outcome("stopped", "cancelled", "the caller stopped reading the request's events")


class RequestObserver:
    """What ``observe_request`` returns: override the points you need; each default does nothing.

    Methods are called on the thread or task that drives the request, and
    must return quickly (a tracer ends a span; an exporter's own thread
    does the I/O). The table in :mod:`agent_core.engine.observe` says when
    each is called. ``messages`` and ``message`` are the frozen
    :class:`~agent_core.Message` values the session keeps; ``error`` is the
    typed error the request fails with (``ProviderRequestCancelled`` when it
    was cancelled), or None.
    """

    def provider_call_started(self, iteration: int, messages: Sequence[Message]) -> None:
        """A provider call is about to be made (iteration 1 is the first) on the session's ``messages``."""

    def first_chunk(self, iteration: int) -> None:
        """The first chunk of this streamed call arrived; never called for a call_api answer."""

    def provider_call_ended(self, iteration: int, messages: Sequence[Message]) -> None:
        """The call answered: its finals (assistant replies) after every transform."""

    def tool_started(self, iteration: int, call_id: str, tool_name: str, payload: Any) -> None:
        """A tool call runs now; ``payload`` is what the tool gets (after ``tool_pre`` changed it)."""

    def tool_ended(self, call_id: str, message: Message) -> None:
        """The call's result: ``message.tool_result`` has ``success`` (and ``error``)."""

    def request_ended(self, outcome: Outcome, usage: Usage, error: BaseException | None) -> None:
        """The request is over, however it ended; called exactly once."""


class Observers:
    """The observers of one request, called in chain order; a failing one is logged and dropped."""

    __slots__ = ("_each", "ended")

    def __init__(self, each: list[tuple[str, Any]]) -> None:
        self._each = each  # (feature name, observer)
        self.ended = False

    def _tell(self, method: str, *args: Any) -> None:
        for entry in list(self._each):
            name, observer = entry
            try:
                getattr(observer, method)(*args)
            except Exception:  # noqa: BLE001 - an observer never changes the request
                _log.warning("observer of feature %r failed in %s; it is dropped for this request",
                             name, method, exc_info=True)
                self._each.remove(entry)

    def provider_call_started(self, iteration: int, messages: Sequence[Message]) -> None:
        self._tell("provider_call_started", iteration, messages)

    def first_chunk(self, iteration: int) -> None:
        self._tell("first_chunk", iteration)

    def provider_call_ended(self, iteration: int, messages: Sequence[Message]) -> None:
        self._tell("provider_call_ended", iteration, messages)

    def tool_started(self, iteration: int, call_id: str, tool_name: str, payload: Any) -> None:
        self._tell("tool_started", iteration, call_id, tool_name, payload)

    def tool_ended(self, call_id: str, message: Message) -> None:
        self._tell("tool_ended", call_id, message)

    def request_ended(self, outcome: Outcome, usage: Usage, error: BaseException | None) -> None:
        if not self.ended:
            self.ended = True
            self._tell("request_ended", outcome, usage, error)


def observers_for(
    features: Sequence[LivePlugin], config_of: Callable[[LivePlugin], Any], context: Callable[[], Any],
) -> Observers | None:
    """Ask each feature that defines ``observe_request`` for its observer; None when none gives one.

    ``config_of(feature)`` is the config as that feature sees it (others' secrets
    redacted); ``context()`` makes the hook's context, only when a feature asks.

    Raises:
        PluginError, ConfigError: a feature's ``observe_request`` failed (see :func:`call_hook`).
    """
    watching = [f for f in features if "observe_request" in f.defined]
    if not watching:
        return None
    ctx = context()
    each = []
    for feature in watching:
        observer = call_hook(feature, "observe_request", config_of(feature), context=ctx)
        if observer is not None:
            each.append((feature.name, observer))
    return Observers(each) if each else None
