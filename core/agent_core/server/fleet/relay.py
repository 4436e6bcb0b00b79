"""Cancel a request in whichever server process runs it, through PostgreSQL LISTEN/NOTIFY.

Theory of operation. Processes that share a PostgreSQL store share its
notification channels. Each process keeps one listening connection, named
``agent-core-cancel-relay`` so the processes can count each other in
``pg_stat_activity``. A process asked to cancel a request it does not run
sends ``<nonce> <request id>`` on ``agent_core_cancel``; every other process
answers ``<nonce> 1`` (cancelled here) or ``<nonce> 0`` (not here) on
``agent_core_cancel_ack``. The asker stops waiting at the first ``1``, or
once every peer said ``0``, or after ``wait`` seconds: so a ``DELETE`` for an
id nobody runs answers as soon as the peers have replied, not after the full
wait. All of it is async: a waiting ``DELETE`` holds no thread.

The listening connection comes back by itself when the database drops it
(a restart, ``pg_terminate_backend``): the listener reconnects with a growing
pause, and asks sent while it was away are simply not heard (their ``DELETE``
answers 404 after the wait).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable
from typing import Any

from .relay_base import Relay

__all__ = ["PgCancelRelay"]

_ASK = "agent_core_cancel"
_ACK = "agent_core_cancel_ack"
_APP_NAME = "agent-core-cancel-relay"
_log = logging.getLogger("agent_core.server.relay")


class _Ask:
    def __init__(self, peers: int | None) -> None:
        self.peers = peers  # how many answers to expect (None: unknown, wait for a yes or the timeout)
        self.noes = 0
        self.done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

    def answer(self, yes: bool) -> None:
        if self.done.done():
            return
        if yes:
            self.done.set_result(True)
            return
        self.noes += 1
        if self.peers is not None and self.noes >= self.peers:
            self.done.set_result(False)


class PgCancelRelay(Relay):
    """One listening connection per process (reconnecting), one sending connection; ``forward`` asks the others."""

    def __init__(self, url: str, cancel_here: Callable[[str], bool]) -> None:
        self.url = url
        self.cancel_here = cancel_here
        self._asks: dict[str, _Ask] = {}
        self._listener: asyncio.Task[None] | None = None
        self._listening = asyncio.Event()
        self._sender: Any = None
        self._send_lock: asyncio.Lock | None = None
        self._closed = False
        self._connected = False  # the listening connection is up (it counts itself among the listeners)
        self.reconnects = 0  # how often the listening connection came back (for tests and logs)

    @property
    def pending(self) -> int:
        return len(self._asks)

    async def _connect(self, **kwargs: Any) -> Any:
        import psycopg

        return await psycopg.AsyncConnection.connect(self.url, autocommit=True, **kwargs)

    async def start(self, timeout: float = 10) -> None:
        """Connect and listen; raises when the database cannot be reached at all."""
        self._send_lock = asyncio.Lock()
        conn = await asyncio.wait_for(self._connect(application_name=_APP_NAME), timeout)
        self._listener = asyncio.create_task(self._listen(conn), name="agent-core-cancel-relay")
        await asyncio.wait_for(self._listening.wait(), timeout)

    async def close(self) -> None:
        self._closed = True
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._listener
        if self._sender is not None:
            with contextlib.suppress(Exception):
                await self._sender.close()
            self._sender = None

    async def _listen(self, conn: Any) -> None:
        import psycopg

        pause = 0.1
        while not self._closed:
            try:
                if conn is None:
                    conn = await self._connect(application_name=_APP_NAME)
                    self.reconnects += 1
                await conn.execute(f"LISTEN {_ASK}")
                await conn.execute(f"LISTEN {_ACK}")
                self._connected = True
                self._listening.set()
                pause = 0.1
                async for note in conn.notifies():
                    await self._heard(note.channel, note.payload)
            except psycopg.Error as exc:
                _log.warning("cancel relay: the listening connection failed (%s); reconnecting", type(exc).__name__)
            finally:
                self._connected = False
                if conn is not None:
                    with contextlib.suppress(Exception):
                        await conn.close()
                conn = None
            if not self._closed:
                await asyncio.sleep(pause)
                pause = min(pause * 2, 2.0)

    async def _heard(self, channel: str, payload: str) -> None:
        nonce, _, rest = payload.partition(" ")
        if channel == _ACK:
            ask = self._asks.get(nonce)
            if ask is not None:
                ask.answer(rest == "1")
        elif channel == _ASK and nonce not in self._asks:  # our own ask comes back to us too: not ours to answer
            yes = bool(rest) and self.cancel_here(rest)
            with contextlib.suppress(Exception):
                await self._notify(_ACK, f"{nonce} {1 if yes else 0}")

    async def _notify(self, channel: str, payload: str) -> None:
        import psycopg

        assert self._send_lock is not None
        async with self._send_lock:
            for attempt in (1, 2):  # a dropped sending connection is opened again once
                try:
                    if self._sender is None:
                        self._sender = await self._connect()
                    await self._sender.execute("SELECT pg_notify(%s, %s)", (channel, payload))
                    return
                except psycopg.OperationalError:
                    with contextlib.suppress(Exception):
                        await self._sender.close()
                    self._sender = None
                    if attempt == 2:
                        raise

    async def _peers(self) -> int | None:
        """How many other processes listen on this database (None when it cannot be told)."""
        try:
            assert self._send_lock is not None
            async with self._send_lock:
                if self._sender is None:
                    self._sender = await self._connect()
                cur = await self._sender.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s AND datname = current_database()",
                    (_APP_NAME,))
                row = await cur.fetchone()
            return max(0, int(row[0]) - (1 if self._connected else 0)) if row else None
        except Exception:  # noqa: BLE001 - unknown: wait for a yes or the timeout instead
            return None

    async def forward(self, request_id: str, wait: float | None = None) -> bool:
        """Ask the other processes to cancel ``request_id``; True when one of them did.

        Raises:
            OverflowError: ``max_pending`` asks are waiting already.
        """
        self._admit(len(self._asks))
        peers = await self._peers()
        if peers == 0:
            return False
        nonce = uuid.uuid4().hex[:16]
        ask = _Ask(peers)
        self._asks[nonce] = ask
        try:
            await self._notify(_ASK, f"{nonce} {request_id}")
            return await asyncio.wait_for(asyncio.shield(ask.done), self.wait if wait is None else wait)
        except (TimeoutError, Exception):  # noqa: BLE001 - nobody said yes in time, or the database is away
            return False
        finally:
            self._asks.pop(nonce, None)
