"""Tool calls a provider asks for again within one request.

A real API gives each tool call an id of its own. A reply that repeats an id
this request has already answered is a provider carrying one call's gatherings
into the next (text and calls kept in a state that lasts the whole request,
never reset in ``initialize_request``). Left alone, such a provider makes the
engine run the same tool on every turn until ``max_iterations``; here it is
named in a :class:`~agent_core.errors.RepeatedToolCallWarning`, and a reply
that asks for nothing new ends the request with ``stopped``/``repeated_tool_call``.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from ..errors import RepeatedToolCallWarning
from ..values.events import Outcome

__all__ = ["AnsweredCalls"]


def _call_id(call: Any) -> str | None:
    cid = call.get("id") if isinstance(call, Mapping) else None
    return cid if isinstance(cid, str) and cid else None


class AnsweredCalls:
    """The tool calls one request has run so far, by id (private bookkeeping of a run)."""

    __slots__ = ("calls",)

    def __init__(self) -> None:
        self.calls: dict[str, Any] = {}

    def check(self, provider: str, calls: list[Any]) -> Outcome | None:
        """Warn about calls whose id was answered already; the outcome that stops the request, or None.

        The request stops when every call of the reply repeats an answered one
        exactly (same id, same call): running them again would answer the same
        question with the same result, turn after turn. Calls that go on to run
        are remembered.
        """
        repeated = [cid for cid in map(_call_id, calls) if cid is not None and cid in self.calls]
        if repeated:
            warnings.warn(RepeatedToolCallWarning(
                f"provider {provider!r} asked again for tool call(s) {', '.join(map(repr, repeated))}, which "
                "this request already answered; a provider that keeps a call's text or tool calls in its state "
                "resets them in initialize_request, which runs before every provider call of a request",
                provider=provider, call_ids=tuple(repeated),
            ), stacklevel=2)
            if len(repeated) == len(calls) and all(self.calls[_call_id(c)] == c for c in calls):
                return Outcome(
                    "stopped", "repeated_tool_call",
                    f"provider {provider!r} repeated tool call(s) {', '.join(repeated)} this request already ran",
                )
        for call in calls:
            cid = _call_id(call)
            if cid is not None:
                self.calls[cid] = call
        return None
