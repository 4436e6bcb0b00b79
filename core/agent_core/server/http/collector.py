"""The cycle collector, set for a server that holds hundreds of requests at once.

Theory of operation
-------------------
CPython frees almost every object by reference counting; its cycle collector
runs besides, after every 700 container objects allocated and not yet freed,
and it stops the whole process while it walks the objects it watches. A
server relaying hundreds of streams keeps each one's request state alive (its
session, its generators, its plugins' state), so the young objects it walks
mostly survive, are promoted, and every few promotions a full collection walks
the whole heap. Measured on ``agent-core serve`` at 500 paced streams (see
``docs/performance.md``), the collector took over a fifth of the process's
CPU, and each full collection stopped every stream at once: the longest gaps
any client saw.

:func:`tune_collector` does two things when the server starts:

* it collects once and **freezes** what is alive (``gc.freeze``): the modules,
  classes and functions loaded at start-up are never walked again;
* it lets the young generation grow to :data:`YOUNG` objects before a
  collection, so a request's short-lived objects are mostly freed by their
  counts before the collector would look at them, and fewer survivors reach
  the older generations.

Reference cycles are still collected, later: at most :data:`YOUNG` objects
wait for it, a few megabytes.
"""

from __future__ import annotations

import gc

__all__ = ["YOUNG", "tune_collector"]

#: container objects allocated (and not freed) before a collection of the young generation
YOUNG = 50_000


def tune_collector(young: int = YOUNG) -> tuple[int, int, int]:
    """Freeze what start-up left alive and raise the young generation's threshold; return the old thresholds.

    ``young`` <= 0 leaves the collector as it is.
    """
    before = gc.get_threshold()
    if young > 0:
        gc.collect()
        gc.freeze()
        gc.set_threshold(young, *before[1:])
    return before
