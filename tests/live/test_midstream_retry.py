"""A live stream cut in the middle, once: the provider asks again and the request finishes.

Between the provider and ``llama-server`` sits a small TCP relay on 127.0.0.1 that
drops its first connection once the answer has started streaming (after a few
server-sent events), the way a proxy or a flaky network does. The request must
still finish with the second attempt's answer, and the stream must say in between
(``retract``) that the first attempt's text is void.
"""

from __future__ import annotations

import socket
import threading
from typing import Any, Self

import pytest

from ._kit import collect, make_core, session_with

pytestmark = pytest.mark.live

#: server-sent events relayed on the first connection before it is dropped: past OpenAI's role chunk
#: and Anthropic's message_start / content_block_start / ping, so some text has streamed
EVENTS_BEFORE_CUT = 6


class CuttingRelay:
    """Relays TCP connections to ``upstream_port``; the first one is shut down mid-answer."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.connections = 0
        self.cut = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._accept, daemon=True, name="cutting-relay")

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._listener.close()

    def url(self, provider: str) -> str:
        root = f"http://127.0.0.1:{self.port}"
        return root + "/v1" if provider == "openai" else root

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            first = self.connections == 1
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            threading.Thread(target=self._pipe, args=(client, upstream, False), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, first), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket, cutting: bool) -> None:
        seen = b""
        try:
            while data := src.recv(65536):
                if cutting:
                    before = len(seen)
                    seen += data
                    at = _nth(seen, b"data: ", EVENTS_BEFORE_CUT)
                    if at is not None:
                        # pass on the events before the N-th, never the answer's end, then drop both sides
                        dst.sendall(seen[before:at])
                        self.cut.set()
                        break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()


def _nth(data: bytes, needle: bytes, n: int) -> int | None:
    """Where the ``n``-th ``needle`` starts in ``data``, or None when there are fewer."""
    at = -1
    for _ in range(n):
        at = data.find(needle, at + 1)
        if at < 0:
            return None
    return at


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_connection_cut_mid_stream_is_retried_and_the_request_finishes(llama, provider: str) -> Any:
    port = int(llama.url.rsplit(":", 1)[1])
    core = make_core()
    session = session_with(core, "Tell me about the sea.")
    with CuttingRelay(port) as relay:
        config = {**llama.config(provider, max_tokens=32), "base_url": relay.url(provider),
                  "max_retries": 2, "max_retry_wait_s": 0}
        events = collect(core, session, config, use_async=False)

    assert relay.cut.is_set(), "the relay never saw enough of the answer to cut it"
    assert relay.connections == 2  # the cut one, and the retry
    kinds = [e.type for e in events]
    assert "error" not in kinds, [e for e in events if e.type == "error"]
    assert kinds.count("retract") == 1 and kinds[-1] == "done"
    cut = kinds.index("retract")
    assert any(e.type == "partial" and e.message.content for e in events[:cut]), "text streamed before the cut"
    after = "".join(e.message.content for e in events[cut:] if e.type == "partial")
    (final,) = [e.message for e in events if e.type == "final"]
    assert final.content == after and after  # the answer is the second attempt's, whole
    assert events[-1].outcome.status == "finished"
