"""A lease holder to be killed mid-turn (run as ``python _lost_holder.py URL TTL SESSION:MODE ...``).

Per session, ``stream``: a streamed turn under the session's lease whose model never
answers, so the process dies inside the request; ``saved``: a streamed turn saved in
full whose lease is never released, so the process dies between the save and the
release. Prints ``ready`` once every turn is where it should be, then sleeps until killed.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

from agent_core import AgentCore
from agent_core.store import open_store, stream_turn
from agent_core_providers.echo import EchoProvider

ECHO = {"provider": "echo"}
asked = threading.Semaphore(0)


class NeverAnswers(EchoProvider):
    def stream_api(self, native_messages: Any, state: Any, *, request_id: str | None = None) -> Iterator[Any]:
        asked.release()
        time.sleep(600)
        yield from ()


def main(url: str, ttl: float, specs: list[str]) -> None:
    store = open_store(url)
    store.leases.lease_ttl_s = ttl
    hanging = 0
    for spec in specs:
        sid, mode = spec.split(":")
        lease = store.leases.try_lease(sid, request_id=f"req-{sid}")
        assert lease is not None, sid
        if mode == "saved":
            events = list(stream_turn(AgentCore(providers=[EchoProvider]), store, sid, f"question {sid}", ECHO,
                                      lease=lease))
            assert events[-1].type == "saved", events[-1]
        else:
            core = AgentCore(providers=[NeverAnswers])
            turn = stream_turn(core, store, sid, f"question {sid}", ECHO, lease=lease, request_id=f"req-{sid}")
            threading.Thread(target=list, args=(turn,), daemon=True).start()
            hanging += 1
    for _ in range(hanging):
        assert asked.acquire(timeout=30)
    print("ready", flush=True)
    time.sleep(600)


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]), sys.argv[3:])
