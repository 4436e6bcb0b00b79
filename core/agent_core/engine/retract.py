"""A provider call whose stream starts over: what the engine forgets, and what it tells its caller.

Theory of operation
-------------------
A provider that repeats a request after its stream broke mid-answer (the
bundled HTTP providers do, within their retry budget) yields a
:class:`~agent_core.values.events.StreamRetry` between the broken attempt's
chunks and the new attempt's. The chunks before it are void, but every plugin
on the hot path has already folded them into its state: the provider's
buffer, a tools extension's half-assembled call, a masking extension's
held-back half of a key. Those all live in the one shared state mapping the
hot loop threads from chunk to chunk, and the call's native history is one
value too, so going back is one assignment: the loop takes up again the
history and state the call began with (:meth:`HotLoop.retract
<agent_core.engine.hot_loop.HotLoop.retract>`) and forgets the finals it had
seen. No plugin needs a hook of its own to be told; each sees the new attempt
as it would a first one, and ``finalize`` runs once, after the attempt that
succeeded.

The caller is told with a :class:`~agent_core.values.events.RetractEvent`,
which voids every partial of the iteration before it. The broken attempt's
usage, when the provider could report it, goes into the event and into the
request's token counts, since the API may bill it.
"""

from __future__ import annotations

from typing import Any

from .tally import UsageTally
from ..values.events import RetractEvent, RetryingEvent, StreamRetry, Usage, error_info

__all__ = ["retract_event", "retrying_event"]


def retract_event(retry: StreamRetry, request_id: str, iteration: int, billed: UsageTally | None) -> RetractEvent:
    """The event for ``retry``; its usage is added to ``billed`` (the request's tally)."""
    usage = _usage_of(retry.usage)
    if usage is not None and billed is not None:
        billed.add(usage)
    error = error_info(retry.error) if isinstance(retry.error, BaseException) else None
    return RetractEvent(request_id, iteration, int(retry.attempt), error, usage)


def retrying_event(retry: StreamRetry, request_id: str, iteration: int) -> RetryingEvent:
    """The notice that ``retry``'s attempt is coming, and after how long."""
    error = error_info(retry.error) if isinstance(retry.error, BaseException) else None
    delay = float(retry.delay_s) if isinstance(retry.delay_s, (int, float)) and retry.delay_s >= 0 else None
    attempts = retry.attempts if isinstance(retry.attempts, int) and retry.attempts > 0 else None
    return RetryingEvent(request_id, iteration, int(retry.attempt), attempts, delay, error)


def _usage_of(usage: Any) -> Usage | None:
    """A provider's report of a broken attempt's usage as a :class:`Usage` (None when it gave no counts)."""
    if not hasattr(usage, "get"):
        return None
    counts = [usage.get(key) for key in ("input_tokens", "output_tokens")]
    counts = [c if isinstance(c, int) and not isinstance(c, bool) and c >= 0 else 0 for c in counts]
    return Usage(counts[0], counts[1], 0) if any(counts) else None
