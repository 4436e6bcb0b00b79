"""Cancel a request in whichever server process runs it, through PostgreSQL LISTEN/NOTIFY.

Processes that share a PostgreSQL store share its notification channels. A process that is
asked to cancel a request it does not run sends the id on ``agent_core_cancel``; every process
listens there, and the one running the request cancels it and answers on
``agent_core_cancel_ack``. The asker waits briefly for that answer, so ``DELETE`` can still say
204 (cancelled somewhere) or 404 (running nowhere). No state is shared but the channel.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

__all__ = ["PgCancelRelay"]

_ASK = "agent_core_cancel"
_ACK = "agent_core_cancel_ack"


class PgCancelRelay:
    """One listening connection per process, in a daemon thread; ``forward`` asks the others."""

    def __init__(self, url: str, cancel_here: Callable[[str], bool]) -> None:
        self.url = url
        self.cancel_here = cancel_here
        self._waiting: dict[str, threading.Event] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._listen, name="agent-core-cancel-relay", daemon=True)

    def start(self, timeout: float = 10) -> None:
        self._thread.start()
        self._ready.wait(timeout)
        if self._error is not None:
            raise self._error

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _connect(self) -> Any:
        import psycopg

        return psycopg.connect(self.url, autocommit=True)

    def _listen(self) -> None:
        try:
            conn = self._connect()
            conn.execute(f"LISTEN {_ASK}")
            conn.execute(f"LISTEN {_ACK}")
        except BaseException as exc:  # noqa: BLE001 - told to start()
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        with conn:
            while not self._stop.is_set():
                asked = []
                for note in conn.notifies(timeout=0.5, stop_after=1):
                    if note.channel == _ASK:
                        asked.append(note.payload)
                    elif note.channel == _ACK:
                        with self._lock:
                            event = self._waiting.get(note.payload)
                        if event is not None:
                            event.set()
                for request_id in asked:  # outside the notifies() loop: the connection is free again
                    if self.cancel_here(request_id):
                        self._notify(_ACK, request_id, conn)

    @staticmethod
    def _notify(channel: str, payload: str, conn: Any) -> None:
        conn.execute("SELECT pg_notify(%s, %s)", (channel, payload))

    def forward(self, request_id: str, wait: float = 2.0) -> bool:
        """Ask the other processes to cancel ``request_id``; True when one of them did (blocking)."""
        event = threading.Event()
        with self._lock:
            self._waiting[request_id] = event
        try:
            with self._connect() as conn:
                self._notify(_ASK, request_id, conn)
            return event.wait(wait)
        finally:
            with self._lock:
                self._waiting.pop(request_id, None)
