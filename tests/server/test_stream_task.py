"""A streamed response's body runs in a task of its own, so a relayed chunk resumes no middleware frame.

In the request's task every network read of a stream resumed about twenty frames (the access
log, the gate, the trace context, starlette's application, middlewares, router and route)
before reaching the body's loop, twice a chunk. An extension notes the Python stack at each
chunk; once the stream is flowing, none of those frames may be under it. The answer itself is
checked too: the body still reaches the client whole, on each facade.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import httpx
import pytest

pytest.importorskip("starlette", reason="agent-core serve needs the server extra")

from agent_core import AgentCore
from agent_core.server import create_app

from ._live import running

STACKS: list[list[str]] = []
WORDS = "one two three four five six seven eight nine ten"
MIDDLEWARE = ("starlette", "access_log.py", "guard.py", "trace_context.py")


class StackNoter:
    """Notes the files of the stack under each chunk it is handed."""

    name = "stack_noter"

    def process_chunk(self, native_chunk, partial_messages, final_messages, native_messages, state):
        if native_chunk is not None:
            files, frame = [], sys._getframe(1)
            while frame is not None:
                files.append(frame.f_code.co_filename)
                frame = frame.f_back
            STACKS.append(files)
        return partial_messages, final_messages, native_messages, state


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with running(create_app(core=AgentCore.discover(extensions=[StackNoter]), store=object())) as base:
        yield base


BODIES = {
    "/v1/chat/completions": {"model": "echo", "stream": True, "messages": [{"role": "user", "content": WORDS}]},
    "/v1/messages": {"model": "echo", "stream": True, "max_tokens": 100,
                     "messages": [{"role": "user", "content": WORDS}]},
    "/v1/responses": {"model": "echo", "stream": True, "input": WORDS},
}


@pytest.mark.parametrize("path", list(BODIES))
def test_a_flowing_stream_resumes_no_middleware_frame(url: str, path: str) -> None:
    STACKS.clear()
    with httpx.stream("POST", f"{url}{path}", json=BODIES[path], timeout=30) as response:
        assert response.status_code == 200
        body = response.read().decode()
    assert all(word in body for word in WORDS.split()), body  # every chunk reached the client
    assert len(STACKS) >= 3, "the echo provider streamed too few chunks to tell"
    late = STACKS[-1]
    under = [f for f in late if any(m in f for m in MIDDLEWARE)]
    assert under == [], f"a late chunk still resumes {under}"
