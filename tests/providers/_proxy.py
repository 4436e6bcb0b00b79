"""A forward HTTP proxy on 127.0.0.1, small enough to read: what a corporate egress proxy does.

A client asks it either for an ``http://`` URL in absolute form (``POST
http://host:port/path HTTP/1.1``), which it forwards in origin form, or for a
tunnel (``CONNECT host:port``, for ``https://``), which it opens and answers
``200``; from then on it relays bytes both ways until either side closes. It
notes the first line of every connection in :attr:`ForwardProxy.asked` (the
tunnel's contents stay encrypted to it), and any ``Proxy-Authorization`` it
was sent in :attr:`ForwardProxy.credentials`.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

__all__ = ["ForwardProxy", "forward_proxy"]


class ForwardProxy:
    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self.asked: list[str] = []
        self.credentials: list[str] = []
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self._socks.append(client)
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        with contextlib.suppress(OSError), client:
            buf = b""
            while b"\r\n\r\n" not in buf:
                data = client.recv(65536)
                if not data:
                    return
                buf += data
            head, _, rest = buf.partition(b"\r\n\r\n")
            line, *fields = head.split(b"\r\n")
            method, target, version = line.split(b" ", 2)
            with self._lock:
                self.asked.append(line.decode())
                self.credentials += [f.split(b":", 1)[1].strip().decode() for f in fields
                                     if f.lower().startswith(b"proxy-authorization:")]
            fields = [f for f in fields if not f.lower().startswith(b"proxy-")]
            if method == b"CONNECT":
                host, port = target.rsplit(b":", 1)
                upstream = socket.create_connection((host.decode(), int(port)))
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                first = rest
            else:
                authority, _, path = target.split(b"://", 1)[1].partition(b"/")
                host, port = authority.rsplit(b":", 1)
                upstream = socket.create_connection((host.decode(), int(port)))
                first = b"\r\n".join([b"%s /%s %s" % (method, path, version), *fields]) + b"\r\n\r\n" + rest
            with self._lock:
                self._socks.append(upstream)
            with upstream:
                if first:
                    upstream.sendall(first)
                back = threading.Thread(target=_relay, args=(upstream, client), daemon=True)
                back.start()
                _relay(client, upstream)
                back.join(5)

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        with self._lock:
            socks = list(self._socks)
        for sock in socks:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


def _relay(source: socket.socket, sink: socket.socket) -> None:
    """Copy ``source`` to ``sink`` until ``source`` ends, then end ``sink``'s writing side."""
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            sink.sendall(data)
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)


def forward_proxy() -> Iterator[ForwardProxy]:
    """A started proxy, stopped when the generator ends (the body of a fixture)."""
    proxy = ForwardProxy()
    try:
        yield proxy
    finally:
        proxy.stop()
