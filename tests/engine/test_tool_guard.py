"""Tools that hang: ``tool_timeout_s``, a cancellation token that reaches the running tool,
and a clear error for an async-only tool in a sync request inside a running event loop.

The bounds asserted here are deadlines the behaviour promises (a hung tool would
otherwise hold the request for 60 s); they are generous on purpose.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
import warnings
from typing import Any

import pytest
from agent_core import AgentCore, Message, ProviderRequestCancelled, Session
from agent_core.errors import AsyncOnlyHookError, ConfigError
from agent_core.runtime.effects import CancellationToken
from agent_core.testing import reply, scripted_provider, tool_call

HANG = 60.0  # how long a hanging tool would block if nothing stopped the wait


def session() -> Session:
    return Session("s", [Message("user", "go")])


def provider() -> type:
    return scripted_provider(reply(tool_calls=[tool_call("work", {}, id="t1")]), "after the tool")


def schemas(self, state):
    return [{"type": "function", "function": {"name": "work", "parameters": {"type": "object"}}}]


class Seen:
    def __init__(self) -> None:
        self.started = threading.Event()
        self.tokens: list[Any] = []
        self.saw_cancel = threading.Event()


def ignoring_tool(seen: Seen) -> type:
    """A sync tool that ignores its token and would block for a minute."""

    def execute_tool(self, tool_name, payload, state, *, cancellation=None):
        seen.tokens.append(cancellation)
        seen.started.set()
        threading.Event().wait(HANG)
        return "too late"

    return type("Ignoring", (), {"name": "ignoring", "get_tool_schemas": schemas, "execute_tool": execute_tool})


def cooperative_tool(seen: Seen) -> type:
    """A sync tool that stops as soon as its token says the request was cancelled."""

    def execute_tool(self, tool_name, payload, state, *, cancellation=None):
        seen.tokens.append(cancellation)
        seen.started.set()
        if cancellation.wait(HANG):
            seen.saw_cancel.set()
            return "stopped"
        return "finished"

    return type("Cooperative", (), {"name": "cooperative", "get_tool_schemas": schemas, "execute_tool": execute_tool})


def async_tool(seen: Seen) -> type:
    async def execute_tool_async(self, tool_name, payload, state, *, cancellation=None):
        seen.tokens.append(cancellation)
        seen.started.set()
        try:
            await asyncio.sleep(HANG)
        except asyncio.CancelledError:
            seen.saw_cancel.set()
            raise
        return "slept"

    return type("Sleeper", (), {"name": "sleeper", "get_tool_schemas": schemas,
                                "execute_tool_async": execute_tool_async})


def cancel_when_started(core: AgentCore, seen: Seen, request_id: str) -> threading.Thread:
    def run() -> None:
        assert seen.started.wait(10)
        core.cancel_request(request_id)

    t = threading.Thread(target=run)
    t.start()
    return t


# -- timeouts ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_tool_past_tool_timeout_s_becomes_an_error_result_and_the_request_goes_on(mode: str):
    seen = Seen()
    core = AgentCore(providers=[provider()], tools=[ignoring_tool(seen)])
    config = {"tool_timeout_s": 0.2}
    began = time.monotonic()
    result = core.request(session(), config) if mode == "sync" else asyncio.run(core.arequest(session(), config))
    assert time.monotonic() - began < HANG / 4
    assert result.outcome.ok and result.final_messages[-1].content == "after the tool"
    tool_msg = result.session.messages[2]
    assert tool_msg.tool_result["success"] is False
    assert "did not finish within 0.2 s (tool_timeout_s)" in tool_msg.tool_result["error"]


def test_an_async_tool_past_its_timeout_is_cancelled():
    seen = Seen()
    core = AgentCore(providers=[provider()], tools=[async_tool(seen)])
    result = asyncio.run(core.arequest(session(), {"tool_timeout_s": 0.2}))
    assert result.session.messages[2].tool_result["success"] is False
    assert seen.saw_cancel.is_set()  # the timeout reached the tool as CancelledError


def test_a_streaming_tool_is_bounded_by_the_same_timeout():
    def stream_tool(self, tool_name, payload, state):
        yield {"part": "first"}
        threading.Event().wait(HANG)
        yield {"part": "never"}

    tool = type("Streamer", (), {"name": "streamer", "get_tool_schemas": schemas, "stream_tool": stream_tool})
    events = list(AgentCore(providers=[provider()], tools=[tool]).stream_request(session(), {"tool_timeout_s": 0.3}))
    assert [e.part for e in events if e.type == "tool_progress"] == ["first"]
    [res] = [e for e in events if e.type == "tool_result"]
    assert res.success is False and "tool_timeout_s" in res.message.tool_result["error"]
    assert events[-1].outcome.ok


@pytest.mark.parametrize("bad", [0, -1, "5", float("nan"), float("inf"), True])
def test_tool_timeout_s_must_be_a_positive_number(bad: Any):
    core = AgentCore(providers=[provider()], tools=[ignoring_tool(Seen())])
    with pytest.raises(ConfigError) as info:
        core.request(session(), {"tool_timeout_s": bad})
    assert info.value.key == "tool_timeout_s"


# -- cancellation reaches the running tool --------------------------------------------------


def test_the_tool_gets_a_cancellation_token_and_a_cancel_reaches_it():
    seen = Seen()
    core = AgentCore(providers=[provider()], tools=[cooperative_tool(seen)])
    canceller = cancel_when_started(core, seen, "r-coop")
    began = time.monotonic()
    with pytest.raises(ProviderRequestCancelled):
        core.request(session(), request_id="r-coop")  # no timeout: a cooperative tool ends by itself
    canceller.join()
    assert time.monotonic() - began < HANG / 4
    assert isinstance(seen.tokens[0], CancellationToken) and seen.saw_cancel.is_set()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_cancelled_request_does_not_wait_for_a_tool_that_ignores_the_token(mode: str):
    seen = Seen()
    core = AgentCore(providers=[provider()], tools=[ignoring_tool(seen)])
    canceller = cancel_when_started(core, seen, f"r-{mode}")
    config = {"tool_timeout_s": HANG}  # the cancel, not the timeout, must end the wait
    began = time.monotonic()
    with pytest.raises(ProviderRequestCancelled):
        if mode == "sync":
            core.request(session(), config, request_id=f"r-{mode}")
        else:
            asyncio.run(core.arequest(session(), config, request_id=f"r-{mode}"))
    canceller.join()
    assert time.monotonic() - began < 5
    assert seen.tokens[0].cancelled


def test_a_cancel_reaches_an_async_tool_as_cancelled_error_and_the_stream_ends_cancelled():
    seen = Seen()
    core = AgentCore(providers=[provider()], tools=[async_tool(seen)])
    canceller = cancel_when_started(core, seen, "r-async-tool")

    async def collect() -> list[Any]:
        return [e async for e in core.astream_request(session(), request_id="r-async-tool")]

    began = time.monotonic()
    events = asyncio.run(collect())
    canceller.join()
    assert time.monotonic() - began < 5
    assert seen.saw_cancel.is_set()
    assert events[-1].type == "done" and events[-1].outcome.reason == "cancelled"
    assert events[-1].session == session()


# -- async-only tool, sync request, running loop ----------------------------------------------


def test_a_sync_request_inside_a_running_loop_with_an_async_only_tool_is_a_clear_error():
    seen = Seen()
    core = AgentCore(providers=[provider()], tools=[async_tool(seen)])

    async def inside_a_loop() -> tuple[list[Any], BaseException | None]:
        events = list(core.stream_request(session()))
        try:
            core.request(session())
        except AsyncOnlyHookError as exc:
            return events, exc
        return events, None

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        events, error = asyncio.run(inside_a_loop())
        gc.collect()
    assert isinstance(error, AsyncOnlyHookError) and "arequest" in str(error)
    assert [e.type for e in events][-2:] == ["error", "done"]
    assert events[-2].error.type == "AsyncOnlyHookError"
    assert "sleeper" in events[-2].error.message
    assert not seen.started.is_set()  # never half-run, never handed to the model as a result
    assert not [w for w in caught if "never awaited" in str(w.message)]


def test_outside_a_loop_a_sync_request_still_runs_an_async_only_tool():
    seen = Seen()

    async def quick(self, tool_name, payload, state):
        return "fine"

    tool = type("Quick", (), {"name": "quick", "get_tool_schemas": schemas, "execute_tool_async": quick})
    result = AgentCore(providers=[provider()], tools=[tool]).request(session())
    assert result.session.messages[2].tool_result == {"success": True, "result": "fine"}
    assert not seen.started.is_set()


def test_the_cancellation_token_api():
    token = CancellationToken()
    calls: list[str] = []
    remove = token.on_cancel(lambda: calls.append("first"))
    token.on_cancel(lambda: calls.append("second"))
    remove()
    assert token.cancelled is False and token.wait(0) is False
    token.raise_if_cancelled()  # nothing yet
    token.cancel()
    token.cancel()  # twice is harmless; callbacks run once
    assert calls == ["second"] and token.cancelled and token.wait(0)
    token.on_cancel(lambda: calls.append("late"))  # registered after the fact: runs at once
    assert calls == ["second", "late"]
    with pytest.raises(ProviderRequestCancelled):
        token.raise_if_cancelled()
