"""An async streamed call is one pump: a network read reaches the provider's step with one driver above it.

The provider's ``astream_api`` hands the engine a ``FlowStream``, and the engine's driver
reads the body itself (the stream is a source of batches) and runs the provider's step and its
own hot loop in one loop. Before, each
read climbed through the provider's hook and the driver of its flow (two async generators)
on its way up. A profile hook notes the frames under every call of the SSE reader's
``feed`` (which the provider's step calls once a network read) on a real stream from a
loopback server; the answer is checked whole, as the sync request gives it.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from agent_core import AgentCore, Message, Session
from agent_core.plugin_kit import FlowStream
from agent_core_providers.openai import OpenAIProvider

from ._server import Delay
from ._wire import oa_text

#: this module tests agent-core's own transport (tests/providers/conftest.py)
OUR_TRANSPORT_ONLY = True

KEY = "sk-test-0123456789abcdef"
WORDS = ("one ", "two ", "three ", "four")


def _config(server: Any) -> dict[str, Any]:
    return {"provider": "openai", "base_url": f"{server.url}/v1", "api_key": KEY, "model": "m", "max_retries": 0}


def _frames_under_feed(run: Any) -> list[list[str]]:
    """Run ``run()`` with a profile hook; the frames (file:function) under each call of the SSE reader's feed."""
    stacks: list[list[str]] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        code = frame.f_code
        if (event == "call" and code.co_name == "feed" and code.co_filename.endswith("_sse.py")
                and frame.f_back.f_code.co_name != "feed"):  # a reader's feed calling its base's: once
            names, f = [], frame.f_back
            while f is not None:
                names.append(f"{Path(f.f_code.co_filename).name}:{f.f_code.co_name}")
                f = f.f_back
            stacks.append(names)

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return stacks


def test_the_async_stream_is_a_flow_stream(server: Any) -> None:
    provider = OpenAIProvider()
    stream = provider.astream_api([], {"config": {}}, request_id="r")
    assert isinstance(stream, FlowStream)  # built lazily: nothing was sent, no key was asked for
    assert server.requests == []


def test_a_network_read_reaches_the_providers_step_with_one_driver_above_it(server: Any) -> None:
    server.enqueue(oa_text(*WORDS), oa_text(*WORDS))
    core = AgentCore(providers=[OpenAIProvider])
    session = Session("s", [Message("user", "hi")])

    async def collect() -> list[Any]:
        return [e async for e in core.astream_request(session, _config(server), request_id="a")]

    got: list[Any] = []
    stacks = _frames_under_feed(lambda: got.extend(asyncio.run(collect())))
    expected = list(core.stream_request(session, _config(server), request_id="a"))
    assert [type(e).__name__ for e in got] == [type(e).__name__ for e in expected]
    assert got[-1].session.messages[-1].content == "".join(WORDS)

    assert stacks, "the SSE reader was never fed"
    for names in stacks:
        assert names[0] == "_streaming.py:step", names[:3]
        drivers = [n for n in names if n.endswith(":drive_async")]
        assert drivers == ["drivers.py:drive_async"], names
        assert not any(n.endswith(":astream_api") for n in names), names
        # the engine's own driver calls the provider's step on the body's read: nothing between them
        assert names[1] == "drivers.py:drive_async", names[:4]


def test_a_body_read_after_the_first_byte_passes_through_no_frame_of_the_pools_watcher(server: Any) -> None:
    """The pool's watched stream marks the call's first byte; after it, its read hands back the connection's own."""
    paced = oa_text(*WORDS)
    # a pause before each part, so each arrives on its own read however busy the machine is
    paced.parts = [p for part in paced.parts for p in (Delay(0.01), part)]
    server.enqueue(paced)
    core = AgentCore(providers=[OpenAIProvider])
    session = Session("s", [Message("user", "hi")])
    stacks: list[list[str]] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        code = frame.f_code
        if event == "call" and code.co_name == "read" and code.co_filename.endswith("aio_stream.py"):
            names, f = [], frame.f_back
            while f is not None:
                names.append(f"{Path(f.f_code.co_filename).name}:{f.f_code.co_name}")
                f = f.f_back
            stacks.append(names)

    async def collect() -> list[Any]:
        return [e async for e in core.astream_request(session, _config(server), request_id="w")]

    sys.setprofile(profile)
    try:
        got = asyncio.run(collect())
    finally:
        sys.setprofile(None)
    assert got[-1].session.messages[-1].content == "".join(WORDS)
    body = [names for names in stacks if "lean_conn.py:__aiter__" in names]  # the body's reads, not the head's
    assert len(body) >= len(WORDS), stacks  # each entered, then resumed with the data
    assert [names for names in body if "watched.py:read" in names or "watched.py:_first_read" in names] == []
