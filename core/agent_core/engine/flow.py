"""A request handed to code that drives it: its events and effects pass through, its result comes back.

:meth:`AgentCore.request_flow <agent_core.AgentCore.request_flow>` gives a caller
the request's generator to run inside one of its own (``yield from``), so that
the caller's I/O and the request's effects are performed by the same
``drive_sync`` / ``drive_async``. ``yield from run.run()`` alone would lose the
``done`` event the result is made of; :func:`keep_done` is that delegation, keeping it.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any, TypeVar

from ..values.events import DoneEvent

__all__ = ["Flow", "keep_done"]

R = TypeVar("R")
Flow = Generator[Any, Any, R]  # yields events and effects, is sent the effects' results, returns an R


def keep_done(steps: Flow[None], result: Callable[[DoneEvent | None], R]) -> Flow[R]:
    """Delegate to ``steps`` as ``yield from`` does, then return ``result(last done event)``.

    What the driver sends or throws at a yield goes back into ``steps`` at the
    yield that asked for it, so an effect's result or error reaches the request
    exactly as when the request is driven on its own. Closing this generator
    closes ``steps``. ``result`` may raise (the request's error).
    """
    done: DoneEvent | None = None
    sent: Any = None
    thrown: BaseException | None = None
    try:
        while True:
            try:
                item = steps.throw(thrown) if thrown is not None else steps.send(sent)
            except StopIteration:
                return result(done)
            if item.__class__ is DoneEvent:
                done = item
            try:
                sent, thrown = (yield item), None
            except Exception as exc:  # noqa: BLE001 - an effect's error, handed back to the request
                sent, thrown = None, exc
    finally:
        steps.close()
