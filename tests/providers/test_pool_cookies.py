"""A pooled client keeps no cookies: one caller's ``Set-Cookie`` never rides on another caller's request.

The pooled clients are shared by every request to the same base URL, so in ``agent-core serve``
by every tenant. An upstream (or a gateway in front of it) that answers one tenant with a
session cookie must not see that cookie on the next tenant's request. Tested against a real
server on 127.0.0.1 that sets a cookie on every answer and records the requests' heads.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator

import pytest

from agent_core_providers._pool import async_client_for, sync_client_for

ANSWER = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
          b"Set-Cookie: session=tenant-a-secret; Path=/\r\nSet-Cookie: __cf_bm=abc; Path=/; HttpOnly\r\n\r\n{}")


@pytest.fixture
def upstream() -> Iterator[tuple[str, list[bytes]]]:
    """A keep-alive HTTP/1.1 server answering every request with cookies; the heads it was sent."""
    heads: list[bytes] = []
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve(conn: socket.socket) -> None:
        buffer = b""
        with conn:
            while True:
                while b"\r\n\r\n" not in buffer:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buffer += data
                head, buffer = buffer.split(b"\r\n\r\n", 1)
                heads.append(head)
                conn.sendall(ANSWER)

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    yield f"http://127.0.0.1:{port}", heads
    listener.close()


def _cookie_headers(heads: list[bytes]) -> list[bytes]:
    return [line for head in heads for line in head.split(b"\r\n") if line.lower().startswith(b"cookie:")]


def test_the_sync_pooled_client_sends_no_cookie_it_was_given(upstream: tuple[str, list[bytes]]) -> None:
    base, heads = upstream
    client = sync_client_for(base + "/sync", 10.0)
    for key in ("tenant-a-key", "tenant-b-key"):
        response = client.post(base + "/v1/chat/completions", headers={"Authorization": f"Bearer {key}"}, content=b"{}")
        assert response.status_code == 200
        assert "session" in response.headers.get("set-cookie", "")  # the answer did carry it
    assert len(heads) == 2
    assert _cookie_headers(heads) == []
    assert len(client.cookies) == 0


def test_the_async_pooled_client_sends_no_cookie_it_was_given(upstream: tuple[str, list[bytes]]) -> None:
    base, heads = upstream

    async def main() -> None:
        client = async_client_for(base + "/async", 10.0)
        for key in ("tenant-a-key", "tenant-b-key"):
            response = await client.post(base + "/v1/chat/completions", headers={"Authorization": f"Bearer {key}"},
                                         content=b"{}")
            assert response.status_code == 200
        assert len(client.cookies) == 0

    asyncio.run(main())
    assert len(heads) == 2
    assert _cookie_headers(heads) == []
