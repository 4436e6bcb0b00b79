"""``AgentCore.request_flow``: a request run inside a generator of one's own, driven sync or async.

The session store's turns are written this way (``tests/store/test_turn_parity.py``);
here the flow itself: it yields what ``stream_request`` yields, returns what
``request`` returns, raises what it raises (after ``done``), hands an effect's
result back to the request, and frees its request id however it ends.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Generator, Iterator
from typing import Any

import pytest
from agent_core import AgentCore, DoneEvent, ErrorEvent, Message, RequestResult, Session
from agent_core.errors import InvalidArgumentError, LLMError, RequestInFlightError
from agent_core.plugin_kit import Call, drive_async, drive_sync
from agent_core_providers.echo import EchoProvider

ECHO = {"provider": "echo"}


class Broken(EchoProvider):
    def stream_api(self, native_messages: Any, state: Any, *, request_id: str | None = None) -> Iterator[Any]:
        raise LLMError("down", provider="echo")
        yield  # pragma: no cover

    def call_api(self, native_messages: Any, state: Any, *, request_id: str | None = None) -> Any:
        raise LLMError("down", provider="echo")


def _around(core: AgentCore, stream: bool, seen: list[Any]) -> Generator[Any, Any, None]:
    """A flow of one's own: an effect before the request, the request, an effect after."""
    before = yield Call(lambda: "sync before", lambda: _value("async before"))
    result = yield from core.request_flow(Session("s", [Message("user", "hi")]), ECHO, request_id="r", stream=stream)
    after = yield Call(lambda: "sync after", lambda: _value("async after"))
    seen.extend([before, result, after])


async def _value(v: str) -> str:
    return v


async def _collect(gen: Generator[Any, Any, None]) -> list[Any]:
    return [e async for e in drive_async(gen)]


@pytest.mark.parametrize("stream", [True, False])
def test_the_flow_yields_the_request_s_events_and_returns_its_result(stream: bool) -> None:
    core = AgentCore(providers=[EchoProvider])
    seen: list[Any] = []
    events = list(drive_sync(_around(core, stream, seen)))
    expected = list(core.stream_request(Session("s", [Message("user", "hi")]), {**ECHO, "stream": stream},
                                        request_id="r"))
    assert events == expected
    result = seen[1]
    assert isinstance(result, RequestResult) and result.final_messages[-1].content == "Echo: hi"
    assert seen[0] == "sync before" and seen[2] == "sync after"
    assert result.session == events[-1].session

    async_seen: list[Any] = []
    assert asyncio.run(_collect(_around(core, stream, async_seen))) == events
    assert async_seen == ["async before", result, "async after"]


def test_a_failed_request_raises_after_its_done_event() -> None:
    core = AgentCore(providers=[Broken])
    events: list[Any] = []
    with pytest.raises(LLMError, match="down"):
        for event in drive_sync(_around(core, True, [])):
            events.append(event)  # noqa: PERF402 - the events before the error are the point
    assert isinstance(events[-2], ErrorEvent) and isinstance(events[-1], DoneEvent)
    with pytest.raises(LLMError, match="down"):
        asyncio.run(_collect(_around(core, True, [])))
    core.request_flow(Session("s", [Message("user", "hi")]), ECHO, request_id="r").close()  # "r" is free again


def test_bad_arguments_raise_at_the_call_and_the_id_is_freed_however_the_flow_ends() -> None:
    core = AgentCore(providers=[EchoProvider])
    session = Session("s", [Message("user", "hi")])
    with pytest.raises(InvalidArgumentError):
        core.request_flow(session, ECHO, request_id="")
    flow = core.request_flow(session, ECHO, request_id="r")
    with pytest.raises(RequestInFlightError):
        core.request_flow(session, ECHO, request_id="r")
    del flow  # never started
    gc.collect()
    started = core.request_flow(session, ECHO, request_id="r")
    next(started)
    started.close()  # abandoned half way
    assert core.request(session, ECHO, request_id="r").final_messages[-1].content == "Echo: hi"
