"""A separate handler process for the store tests (run as ``python _worker.py COMMAND ...``).

``turns URL SESSION PREFIX N``: run N turns with ``run_turn`` (echo provider),
sending ``PREFIX-t0`` ... ``PREFIX-t{N-1}``; prints how many attempts they took.

``hang URL SESSION MARKER``: load the session, add a turn and save it, but stop
inside the save's transaction, after the first message row is written: create
the file MARKER, then sleep until killed.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from agent_core import AgentCore, Message
from agent_core.store import open_store, run_turn
from agent_core_providers.echo import EchoProvider


def turns(url: str, session_id: str, prefix: str, n: int) -> None:
    core = AgentCore(providers=[EchoProvider])
    attempts = 0
    with open_store(url) as store:
        for j in range(n):
            attempts += run_turn(core, store, session_id, f"{prefix}-t{j}", {"provider": "echo"}, retries=10_000).attempts
    print(attempts)


def hang(url: str, session_id: str, marker: str) -> None:
    store = open_store(url)
    stored = store.get(session_id)

    def trace(sql: str, rows: int, size: int) -> None:
        if "agent_core_messages" in sql:
            Path(marker).write_text("in the transaction")
            time.sleep(600)

    store._backend.trace = trace
    session = stored.session.with_messages([Message("user", "never saved"), Message("assistant", "no")])
    store.put(session, expected_revision=stored.revision)


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    if command == "turns":
        turns(args[0], args[1], args[2], int(args[3]))
    elif command == "hang":
        hang(*args)
    else:
        raise SystemExit(f"unknown command {command!r}")
