"""The server's sweep for turns lost with their process: saved as stopped even on a session nobody touches again.

A turn whose process died (SIGKILL, the OOM killer, a lost replica) is saved as stopped by
the next turn that takes its session's lease (:mod:`agent_core.store.lost_turns`). This
sweep takes the rest: each server process runs it as it starts (a restarted worker finds
what the dead one left) and then every ``lease_ttl_s`` (a SQLite lease lapses only that
long after its holder died; a PostgreSQL one at once, which another replica's sweep sees).
Each run is one small read of the leases table, and a take for each lost turn found.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ..http.access_log import log_event

__all__ = ["sweep_lost_turns"]

_MIN_PERIOD_S = 1.0


async def sweep_lost_turns(store: Any) -> None:
    """Save lost turns as stopped now and every ``store.leases.lease_ttl_s``, until cancelled; failures are logged."""
    period = max(float(getattr(getattr(store, "leases", None), "lease_ttl_s", 10.0)), _MIN_PERIOD_S)
    while True:
        try:
            saved = await store.asave_lost_turns()
        except Exception as exc:  # noqa: BLE001 - a database away now: the next run tries again
            log_event(logging.WARNING, "lost_turns", f"looking for turns lost with their process failed: {exc}")
        else:
            if saved:
                log_event(logging.WARNING, "lost_turns", f"saved {saved} turn{'s' * (saved != 1)} lost with the "
                          "process that ran them as stopped", saved=saved)
        await asyncio.sleep(period)
