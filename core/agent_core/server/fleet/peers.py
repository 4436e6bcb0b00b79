"""Reach the server process that runs a request: cancels and approval answers sent to any of them.

Theory of operation. A ``DELETE /v1/requests/{id}`` or a ``POST .../approvals/{call}``
names a request that runs in one process only, but a load balancer, or the kernel
spreading connections over ``--workers``, may hand it to another. The process that
receives it tries its own tables first; when the request is not there it asks its
peers, the processes that share its store, through a relay:

- **PostgreSQL** (many machines): :class:`~agent_core.server.fleet.relay.PgCancelRelay`,
  LISTEN/NOTIFY on the store's database.
- **SQLite** (one machine): :class:`LocalRelay`, one Unix socket per process in a
  directory beside the database file (``sessions.db.peers/``); an ask connects to
  each other socket in it. Nothing runs while nobody asks: no polling, no table.

Both carry one text message and answer yes (done here) or no. A message is either a
bare engine request id (cancel it: what ``DELETE`` sends, and all the PostgreSQL relay
carried before approvals) or an approval, ``\\x1fapprove\\x1f<decision>\\x1f<id>\\x1f<call id>``.
Engine ids never hold ``\\x1f`` (client ids and tenant names are checked against
narrow grammars at the door), so the two cannot be confused. :class:`PeerDesk` is the
receiving end, which acts on a message in the process's own tables.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import stat
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .relay_base import Relay

__all__ = ["LocalRelay", "PeerDesk", "approval_message", "check_private", "connect_unix", "forward_approval",
           "listen_unix", "open_relay", "relay_url"]

_SEP = "\x1f"
_APPROVE = f"{_SEP}approve{_SEP}"
_MAX_MESSAGE = 1024  # an id (<= 64 + 1 + 128) and a call id (<= 200), with room to spare
_MAX_PATH = 100  # a Unix socket's path must fit in sun_path (108 bytes on Linux)
_log = logging.getLogger("agent_core.server.peers")


def relay_url(store_url: str | None) -> str:
    """The URL a process's relay is opened from: the store's own (``None``: the default SQLite file's)."""
    if store_url is not None:
        return store_url
    from ...store import default_home

    return f"sqlite:///{default_home() / 'sessions.db'}"


def approval_message(rid: str, call_id: str, decision: str) -> str | None:
    """The relay message answering ``call_id`` of ``rid``; None when the call id cannot travel (a control character)."""
    if any(ord(ch) < 32 for ch in call_id):
        return None
    return f"{_APPROVE}{decision}{_SEP}{rid}{_SEP}{call_id}"


class PeerDesk:
    """The receiving end: act on a peer's message in this process's tables; True when it was done here."""

    def __init__(self, core: Any, approvals: Any, max_choices: int) -> None:
        self.core, self.approvals, self.max_choices = core, approvals, max_choices

    def __call__(self, message: str) -> bool:
        if message.startswith(_APPROVE):
            decision, _, rest = message[len(_APPROVE):].partition(_SEP)
            rid, _, call_id = rest.partition(_SEP)
            return decision in ("allow", "deny") and bool(self.approvals.answer(rid, call_id, decision))
        if _SEP in message or not message:
            return False
        self.approvals.withdraw(message)  # an open question would hold the cancel up
        if not self.core.cancel_request(message):
            return False
        for choice in range(1, self.max_choices):  # the other choices of an n > 1 request
            self.core.cancel_request(f"{message}.{choice}")
        return True


def open_relay(url: str, here: Callable[[str], bool]) -> Any:
    """The relay between the processes on the store at ``url`` (PostgreSQL or SQLite), answering with ``here``."""
    if url.startswith(("postgresql://", "postgres://")):
        from .relay import PgCancelRelay

        return PgCancelRelay(url, here)
    path = url[len("sqlite:///"):].partition("?")[0] if url.startswith("sqlite:///") else url
    return LocalRelay(_socket_dir(Path(path).expanduser().resolve()), here)


def _socket_dir(db: Path) -> Path:
    """Beside the database when a socket's path fits there, else under the temp dir, named by the database's path."""
    beside = Path(f"{db}.peers")
    if len(str(beside)) + 40 <= _MAX_PATH:
        return beside
    digest = hashlib.sha256(str(db).encode()).hexdigest()[:16]
    return _temp_parent() / digest


def _temp_parent() -> Path:
    return Path(tempfile.gettempdir()) / f"agent-core-{os.getuid()}"


async def forward_approval(relay: Any, rid: str, call_id: str, decision: str) -> bool:
    """Send an approval answer to the process that asked it; False when none did, or there is no relay."""
    message = approval_message(rid, call_id, decision)
    if relay is None or message is None:
        return False
    try:
        return bool(await relay.forward(message))
    except OverflowError:
        return False


def check_private(directory: Path, *, others_may_list: bool = False) -> None:
    """Refuse a directory of sockets that another user made or may write in (or, unless ``others_may_list``, read).

    A socket another user put there would be asked what only this server's processes should
    hear, and its answers believed; ``mkdir(exist_ok=True)`` alone accepts a directory someone
    made first in a shared place (``/tmp``, or beside a database file there).

    Raises:
        PermissionError: naming the directory.
    """
    info = os.lstat(directory)
    barred = 0o022 if others_may_list else 0o077
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & barred:
        raise PermissionError(f"{directory} must be a directory of this user's that no other user may "
                              f"{'write in' if others_may_list else 'enter'}: the server processes reach each "
                              "other through the sockets in it")


async def listen_unix(path: Path, answer: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Any]
                      ) -> asyncio.AbstractServer:
    """A Unix socket at ``path`` that only this server's own user may connect to, each connection handed to ``answer``."""
    server = await asyncio.start_unix_server(answer, path=str(path))
    os.chmod(path, 0o600)  # the directory is 0700 too: no other user reaches a process through it
    return server


async def connect_unix(peer: Path) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
    """A connection to the process listening at ``peer``; None when none does (its socket left behind is removed).

    Only for sockets whose name no other process will take again (a pid and a random part): a
    refused one belongs to a process that died without closing it.
    """
    try:
        return await asyncio.open_unix_connection(str(peer))
    except (ConnectionRefusedError, FileNotFoundError):
        with contextlib.suppress(OSError):
            peer.unlink()
    except OSError:
        pass
    return None


class LocalRelay(Relay):
    """The processes on one SQLite file, each listening on a Unix socket of its own in a shared directory."""

    def __init__(self, directory: Path, here: Callable[[str], bool]) -> None:
        self.directory = directory
        self.here = here
        self.path = directory / f"{os.getpid()}-{uuid.uuid4().hex[:8]}.sock"
        self._server: asyncio.AbstractServer | None = None
        self.pending = 0

    async def start(self) -> None:
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        check_private(self.directory)
        if self.directory.parent == _temp_parent():  # made by mkdir(parents=True) above, or by someone before
            check_private(self.directory.parent, others_may_list=True)
        self._server = await listen_unix(self.path, self._answer)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), self.wait)
            message = line[:-1].decode("utf-8", "replace") if line.endswith(b"\n") else ""
            yes = len(message) <= _MAX_MESSAGE and bool(message) and self.here(message)
            writer.write(b"1\n" if yes else b"0\n")
            await writer.drain()
        except (OSError, TimeoutError):
            pass
        finally:
            writer.close()

    async def _ask(self, peer: Path, message: bytes) -> bool:
        opened = await connect_unix(peer)
        if opened is None:
            return False
        reader, writer = opened
        try:
            writer.write(message)
            await writer.drain()
            return (await reader.readline()) == b"1\n"
        except OSError:
            return False
        finally:
            writer.close()

    async def forward(self, message: str, wait: float | None = None) -> bool:
        """Ask every other process on this file to act on ``message``; True when one did.

        Raises:
            OverflowError: ``max_pending`` asks are waiting already.
        """
        self._admit(self.pending)
        try:
            peers = [p for p in self.directory.glob("*.sock") if p != self.path]
        except OSError:
            return False
        if not peers:
            return False
        data = message.encode() + b"\n"
        self.pending += 1
        tasks = [asyncio.ensure_future(self._ask(peer, data)) for peer in peers]
        try:
            for done in asyncio.as_completed(tasks, timeout=self.wait if wait is None else wait):
                if await done:
                    return True
            return False
        except TimeoutError:
            return False
        finally:
            self.pending -= 1
            for task in tasks:
                task.cancel()
