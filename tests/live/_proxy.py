"""A recording pass-through proxy on 127.0.0.1, to see what a client really sent.

The live server does not echo request bodies, so tests that must prove a value
reached the wire (``seed``, ``top_p`` from ``agent-core run -c ...``) send
through this proxy: it records each request's method, path and JSON body, then
forwards it to the upstream server and relays the answer as it arrives (SSE
chunks are passed on one read at a time, so streaming stays streaming). Each
answer ends by closing the connection, which keeps the relay free of chunked
re-encoding.
"""

from __future__ import annotations

import http.client
import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["RecordedRequest", "RecordingProxy"]

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "te", "trailer", "upgrade"}


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    body: Any  # the decoded JSON body, or the raw bytes when it was not JSON


class RecordingProxy:
    """Forwards every request to ``upstream_port`` on 127.0.0.1 and records it.

    Use as a context manager; ``url`` is the proxy's root, ``requests`` what it saw.
    """

    def __init__(self, upstream_port: int) -> None:
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body: Any = json.loads(raw) if raw else None
                except ValueError:
                    body = raw
                with proxy._lock:
                    proxy.requests.append(RecordedRequest(self.command, self.path, body))
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP | {"host"}}
                upstream = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=120)
                try:
                    upstream.request(self.command, self.path, body=raw or None, headers=headers)
                    answer = upstream.getresponse()
                    self.send_response(answer.status)
                    for key, value in answer.getheaders():
                        if key.lower() not in _HOP_BY_HOP:
                            self.send_header(key, value)
                    self.send_header("Connection", "close")
                    self.end_headers()
                    while piece := answer.read1(65536):
                        self.wfile.write(piece)
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client went away (a cancel): nothing left to relay
                finally:
                    upstream.close()

            do_GET = do_POST = _forward

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="recording-proxy", daemon=True)

    def __enter__(self) -> RecordingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
