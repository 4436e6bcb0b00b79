"""Store faults that need a file system of their own (run inside ``unshare -rm`` on a tiny tmpfs).

``full DIR``: save ever longer turns to ``DIR/s.db`` until the disk is full.
``readonly DIR``: save one turn, close, remount ``DIR`` read-only (as an operator or a failing
disk would), open the store again and try another.

Each prints one JSON line: the error's class, reason and retry_after, the last revision
saved, and what a fresh load of the session finds afterwards (or the error it raises).
"""

from __future__ import annotations

import json
import subprocess
import sys

from agent_core import Message, Session
from agent_core.errors import StoreError
from agent_core.store import open_store


def _turn(session: Session, i: int, size: int) -> Session:
    return session.with_message(Message("user", f"q{i} " + "x" * size)).with_message(Message("assistant", f"a{i}"))


def _after(url: str) -> dict[str, object]:
    try:
        with open_store(url) as store:
            stored = store.get("s")
            return {"revision": stored.revision, "messages": len(stored.session.messages)}
    except StoreError as exc:
        return {"error": type(exc).__name__, "reason": getattr(exc, "reason", None)}


def main(kind: str, where: str) -> None:
    url = f"sqlite:///{where}/s.db"
    store = open_store(url)
    session = Session("s")
    revision = store.create(session)
    error: BaseException | None = None
    for i in range(10_000):
        nxt = _turn(session, i, 20_000)
        try:
            if kind == "readonly" and i == 1:
                store.close()
                subprocess.run(["mount", "-o", "remount,ro", where], check=True)
                store = open_store(url)
            revision = store.put(nxt, expected_revision=revision)
        except Exception as exc:  # noqa: BLE001 - what escapes the store is the finding
            error = exc
            break
        session = nxt
    store.close()
    print(json.dumps({
        "error": type(error).__name__ if error else None,
        "module": type(error).__module__ if error else None,
        "reason": getattr(error, "reason", None), "retry_after": getattr(error, "retry_after", None),
        "message": str(error) if error else None,
        "saved_revision": revision, "saved_messages": len(session.messages),
        "after": _after(url),
    }))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
