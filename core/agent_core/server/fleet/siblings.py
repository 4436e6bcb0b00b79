"""The worker processes of one ``agent-core serve --workers N``: ask all the others for an answer at once.

Theory of operation. The parent makes a directory for its workers alone
(``tempfile.mkdtemp``: a random name, mode 0700) and hands its path to each of them. A
worker claims the lowest free slot, ``0`` to ``N-1``, by holding an ``flock`` on
``<slot>.lock`` for as long as it lives, and listens on ``<slot>-<pid>-<random>.sock``
(mode 0600, :func:`~agent_core.server.fleet.peers.listen_unix`). The kernel lets go of the
lock when the worker dies, so the worker started in its place takes the same slot: a slot
names "the i-th worker" whatever its pid, and what is labelled with it keeps one name
across restarts.

The cancel relay's directory (:mod:`.peers`) is not used for this: it belongs to a store,
so it would mix in every other server on the same SQLite file, and a PostgreSQL store has
none. This directory holds one server's workers and nothing else.

An ask is one line, a key every worker derived from a secret the parent gave it (the
admin token: the token itself never crosses a socket); an answer is a 4-byte length and
that many bytes. A connection that sends anything but the key is closed unanswered, and
what the key asks for is fixed when the worker starts: nothing a client sends travels.
An ask waits ``wait`` seconds at most; a worker that has not answered by then (busy,
stopping, not started yet) is named in :attr:`Gathered.missing`.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hmac
import os
import uuid
from collections.abc import Callable
from pathlib import Path

import msgspec

from .peers import check_private, connect_unix, listen_unix

__all__ = ["Gathered", "Siblings"]


class Gathered(msgspec.Struct, frozen=True):
    """What one ask brought back: each answering worker's bytes by slot, and the slots that did not answer."""

    answers: dict[int, bytes]
    missing: tuple[int, ...]


class Siblings:
    """This worker's place among the server's workers: its slot, its socket, and asks to the others.

    Args:
        directory: the directory the parent made for its workers (this user's, mode 0700).
        count: how many workers the server runs.
        key: what an ask sends and what this worker answers to (no newline in it).
        answer: what this worker answers with, made when it is asked.
    """

    #: how long an ask waits for the others; one that has not answered by then is left out
    wait = 1.0
    #: the largest answer taken from another worker
    max_answer = 64 << 20

    def __init__(self, directory: Path, count: int, key: bytes, answer: Callable[[], bytes]) -> None:
        self.directory, self.count, self.key, self.answer = directory, count, key, answer
        self.slot: int | None = None
        self.path: Path | None = None
        self._lock: int | None = None
        self._server: asyncio.AbstractServer | None = None

    async def start(self) -> None:
        """Claim a slot and listen.

        Raises:
            PermissionError: the directory is not this user's alone.
            OSError: every slot is held, or the socket cannot be made.
        """
        check_private(self.directory)
        self.slot, self._lock = _claim_slot(self.directory, self.count)
        for stale in self.directory.glob(f"{self.slot}-*.sock"):  # the slot's last holder died: its socket is dead
            with contextlib.suppress(OSError):
                stale.unlink()
        self.path = self.directory / f"{self.slot}-{os.getpid()}-{uuid.uuid4().hex[:8]}.sock"
        self._server = await listen_unix(self.path, self._answer)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        if self.path is not None:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
        if self._lock is not None:
            os.close(self._lock)  # the slot is free for the worker started in this one's place
            self._lock = None

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), self.wait)
            if hmac.compare_digest(line, self.key + b"\n"):
                body = self.answer()
                writer.write(len(body).to_bytes(4, "big") + body)
                await writer.drain()
        except (OSError, TimeoutError, ValueError):  # ValueError: a line longer than the reader takes
            pass
        finally:
            writer.close()

    async def _ask(self, peer: Path) -> bytes | None:
        opened = await connect_unix(peer)
        if opened is None:
            return None
        reader, writer = opened
        try:
            writer.write(self.key + b"\n")
            await writer.drain()
            size = int.from_bytes(await reader.readexactly(4), "big")
            return await reader.readexactly(size) if size <= self.max_answer else None
        except (OSError, asyncio.IncompleteReadError):
            return None
        finally:
            writer.close()

    async def gather(self) -> Gathered:
        """Ask every other worker at once; what came back within ``wait`` seconds, and who stayed silent."""
        try:
            peers = {path: slot for path in self.directory.glob("*.sock")
                     if path != self.path and (slot := _slot_of(path)) is not None}
        except OSError:
            peers = {}
        asks = {asyncio.ensure_future(self._ask(path)): slot for path, slot in peers.items()}
        answers: dict[int, bytes] = {}
        if asks:
            done, pending = await asyncio.wait(list(asks), timeout=self.wait)
            for task in pending:
                task.cancel()
            for task in done:
                if (body := task.result()) is not None:
                    answers[asks[task]] = body
        missing = tuple(slot for slot in range(self.count) if slot != self.slot and slot not in answers)
        return Gathered(answers, missing)


def _claim_slot(directory: Path, count: int) -> tuple[int, int]:
    """The lowest slot whose lock is free, and the lock's descriptor (held until :meth:`Siblings.close` or death)."""
    for slot in range(2 * count):  # past count: a dead worker's lock the kernel has not let go of yet
        fd = os.open(directory / f"{slot}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return slot, fd
    raise OSError(f"every worker slot in {directory} is held ({2 * count})")


def _slot_of(path: Path) -> int | None:
    head = path.name.partition("-")[0]
    return int(head) if head.isascii() and head.isdigit() else None
