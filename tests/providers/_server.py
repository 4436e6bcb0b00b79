"""A scripted HTTP server on 127.0.0.1 for provider tests (real sockets, real HTTP/1.1).

Each test queues replies; every request pops the next one and is recorded
(method, path, headers, JSON body, client port). A reply is a status,
headers and a body made of parts: bytes to send, :class:`Delay` to pause,
or :data:`CUT` to drop the connection mid-body. Streaming bodies use chunked
transfer encoding and keep-alive, like the real APIs, so a test can also see
whether a connection was reused.

Hostile servers: ``Reply(stall=s)`` waits up to ``s`` seconds before the
status line and notes in :attr:`ScriptedServer.peer_closed` when the client
hung up meanwhile (so does a :class:`Delay` in the body) (a cancel that closes the connection); :data:`DROP` reads
the request and closes the connection without a byte of answer (what a
pooled keep-alive connection looks like when the server closed it late).
"""

from __future__ import annotations

import json
import select
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["CUT", "DROP", "Delay", "Recorded", "Reply", "ScriptedServer", "json_reply", "sse", "sse_reply"]


@dataclass(frozen=True)
class Delay:
    """Pause this many seconds before the next body part."""

    seconds: float


CUT = object()  #: drop the connection here, without finishing the body


def sse(data: Any, event: str | None = None) -> bytes:
    """One server-sent event; ``data`` is JSON-encoded unless it is already str/bytes."""
    if isinstance(data, bytes):
        payload = data
    elif isinstance(data, str):
        payload = data.encode()
    else:
        payload = json.dumps(data, separators=(",", ":")).encode()
    head = f"event: {event}\n".encode() if event else b""
    return head + b"data: " + payload + b"\n\n"


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    parts: list[Any] = field(default_factory=list)
    chunked: bool = True
    stall: float = 0.0  #: seconds to wait before the status line (watching for the client to hang up)
    close_after: bool = False  #: close the connection after the body, without saying so in a header


#: A reply that closes the connection after reading the request, sending nothing.
DROP = Reply(status=0)


def sse_reply(*parts: Any, status: int = 200, headers: dict[str, str] | None = None) -> Reply:
    """A ``text/event-stream`` reply made of :func:`sse` bytes, delays and cuts."""
    return Reply(status, {"content-type": "text/event-stream", **(headers or {})}, list(parts))


def json_reply(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Reply:
    """A JSON reply with a content length."""
    data = json.dumps(body).encode()
    return Reply(status, {"content-type": "application/json", **(headers or {})}, [data], chunked=False)


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    client_port: int
    raw: bytes = b""  # the request body exactly as sent


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        owner = self.server.owner
        recorded = Recorded(
            self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body, self.client_address[1],
            raw,
        )
        owner._record(recorded)
        refused = owner.check(recorded) if owner.check is not None else None
        reply = refused if refused is not None else self.server.owner._next_reply()
        try:
            self._write(reply)
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True

    def _write(self, reply: Reply) -> None:
        if reply is DROP:
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        if reply.stall and _peer_hangs_up(self.connection, reply.stall):
            self.server.owner.peer_closed.append(time.monotonic())
            self.close_connection = True
            return
        self.send_response(reply.status)
        for k, v in reply.headers.items():
            self.send_header(k, v)
        if reply.chunked:
            self.send_header("transfer-encoding", "chunked")
        else:
            size = sum(len(p) for p in reply.parts if isinstance(p, bytes))
            self.send_header("content-length", str(size))
        self.end_headers()
        for part in reply.parts:
            if isinstance(part, Delay):
                self.wfile.flush()
                if _peer_hangs_up(self.connection, part.seconds):  # the client left mid-answer
                    self.server.owner.peer_closed.append(time.monotonic())
                    self.close_connection = True
                    return
            elif part is CUT:
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            elif reply.chunked:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            else:
                self.wfile.write(part)
        if reply.chunked:
            self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        if reply.close_after:
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True


def _peer_hangs_up(conn: socket.socket, seconds: float) -> bool:
    """Wait up to ``seconds``; True as soon as the client closes its side."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        readable, _, _ = select.select([conn], [], [], left)
        if readable:
            try:
                if conn.recv(1, socket.MSG_PEEK) == b"":
                    return True
            except OSError:
                return True
            time.sleep(0.01)  # pipelined bytes, not a close: keep waiting
    return False


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 128  # concurrency tests connect dozens of clients at once
    owner: ScriptedServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that hang up (cancel tests, pooled connections at exit) are expected.
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class ScriptedServer:
    """Serve queued :class:`Reply` objects and record what was asked."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._replies: deque[Reply] = deque()
        self.requests: list[Recorded] = []
        self.peer_closed: list[float] = []  # when a client hung up during a stall or a Delay
        #: the API's own validation: a reply for a request the real API would refuse (then no
        #: scripted reply is used), or None to serve the next scripted one
        self.check: Callable[[Recorded], Reply | None] | None = None
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def enqueue(self, *replies: Reply) -> ScriptedServer:
        with self._lock:
            self._replies.extend(replies)
        return self

    def _next_reply(self) -> Reply:
        with self._lock:
            if self._replies:
                return self._replies.popleft()
        return json_reply({"error": {"message": "no reply scripted for this request"}}, status=500)

    def _record(self, request: Recorded) -> None:
        with self._lock:
            self.requests.append(request)

    @property
    def bodies(self) -> list[Any]:
        return [r.body for r in self.requests]

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
