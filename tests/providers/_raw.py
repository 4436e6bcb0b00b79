"""A raw-socket HTTP server on 127.0.0.1 that writes exactly the bytes a test scripts.

One reply per request, in the order requests arrive; the server counts the
connections it accepts and notes which connection carried each request, so a
test sees whether a connection was reused. A reply is a sequence of steps:
bytes to send, :class:`Pause` or :class:`Hold` to wait, :data:`CLOSE` to end
the connection with a FIN, :data:`RESET` to end it with a RST, and
:data:`DROP_UNREAD` (as a whole reply's first step) to reset the connection as
soon as the request head is in, without reading its body.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import struct
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["CLOSE", "DROP_UNREAD", "RESET", "Hold", "Pause", "RawServer", "serving"]


@dataclass(frozen=True)
class Hold:
    """Wait for ``event`` (at most 5 s) before the next step; the server notes whether it came in time."""

    event: threading.Event


@dataclass(frozen=True)
class Pause:
    """Wait this many seconds before the next step."""

    seconds: float


CLOSE = object()  #: close the connection here (a FIN, nothing said in a header)
RESET = object()  #: reset the connection here (a RST: what a crashed or killed server leaves)
DROP_UNREAD = object()  #: reset the connection once the request head is in, its body never read


class RawServer:
    """Answers each request with the next scripted reply: a sequence of bytes, :class:`Hold` and :data:`CLOSE`."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._tls = tls  # a server context: every connection is TLS
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self._listener.getsockname()[1]}"
        self.accepted = 0
        self.requests: list[tuple[int, bytes]] = []  # (connection number from 1, request line)
        self.wire: list[bytes] = []  # each request exactly as it arrived: head and body
        self.holds: list[bool] = []  # per Hold step: True when its event came before the timeout
        self.unread: list[bytes] = []  # request lines of the requests reset unread (DROP_UNREAD)
        self._replies: deque[tuple[Any, ...]] = deque()
        self._events: list[threading.Event] = []
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def script(self, *replies: bytes | tuple[Any, ...]) -> None:
        with self._lock:
            self._replies.extend(r if isinstance(r, tuple) else (r,) for r in replies)

    def event(self) -> threading.Event:
        """An event for a :class:`Hold`; :meth:`stop` sets it, so no server thread outlives the test."""
        event = threading.Event()
        self._events.append(event)
        return event

    def conns(self) -> list[int]:
        """Which connection carried each request, in order."""
        return [n for n, _ in self.requests]

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # each step leaves at once
            with self._lock:
                self.accepted += 1
                self._socks.append(sock)
                thread = threading.Thread(target=self._serve, args=(sock, self.accepted), daemon=True)
                self._threads.append(thread)
            thread.start()

    def _serve(self, sock: socket.socket, number: int) -> None:
        buf = b""
        if self._tls is not None:
            try:
                sock = self._tls.wrap_socket(sock, server_side=True)
            except OSError:
                return
            with self._lock:
                self._socks.append(sock)  # the plain socket object is detached now: stop() shuts this one
        with contextlib.suppress(OSError), sock:
            while True:
                while b"\r\n\r\n" not in buf:
                    data = sock.recv(65536)
                    if not data:
                        return
                    buf += data
                head, _, buf = buf.partition(b"\r\n\r\n")
                lines = head.split(b"\r\n")
                length = next((int(line.split(b":", 1)[1]) for line in lines[1:]
                               if line.lower().startswith(b"content-length:")), 0)
                with self._lock:
                    unread = bool(self._replies) and self._replies[0][0] is DROP_UNREAD
                    if unread:
                        self._replies.popleft()
                        self.unread.append(lines[0])
                if unread:
                    _reset(sock)
                    return
                while len(buf) < length:
                    data = sock.recv(65536)
                    if not data:
                        return
                    buf += data
                body, buf = buf[:length], buf[length:]
                with self._lock:
                    self.requests.append((number, lines[0]))
                    self.wire.append(head + b"\r\n\r\n" + body)
                    reply = self._replies.popleft() if self._replies else (CLOSE,)
                for step in reply:
                    if step is CLOSE:
                        sock.shutdown(socket.SHUT_RDWR)
                        sock.close()
                        return
                    if step is RESET:
                        _reset(sock)
                        return
                    if isinstance(step, Hold):
                        self.holds.append(step.event.wait(5))
                    elif isinstance(step, Pause):
                        time.sleep(step.seconds)
                    else:
                        sock.sendall(step)

    def stop(self) -> None:
        for event in self._events:
            event.set()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept
        self._listener.close()
        with self._lock:
            socks = list(self._socks)
        for sock in socks:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        for thread in self._threads:
            thread.join(5)


def _reset(sock: socket.socket) -> None:
    """Close ``sock`` with a RST instead of a FIN (a zero linger time)."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def serving() -> Iterator[RawServer]:
    """A started server, stopped when the generator ends (the body of a test module's fixture)."""
    srv = RawServer()
    try:
        yield srv
    finally:
        srv.stop()
