"""The observer seam (agent_core.engine.observe): what a feature's observer is told, and when.

A recording observer shows the exact order of the points for a streamed turn with two
tool calls, and for a whole answer (no first chunk); a failing observer is dropped and
the request goes on; an abandoned stream still ends its observer; the hook sees the
context the caller made the request in, even when the stream is read on another thread.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading

import pytest
from agent_core import AgentCore, BaseFeature, Message, RateLimitError, RequestObserver
from agent_core.testing import function_provider, reply, scripted_provider, tool_call
from agent_core_plugins.calculator import CalculatorTool

WHO = contextvars.ContextVar("who", default="nobody")

TWO_TOOLS = (
    reply(tool_calls=[tool_call("calculate", {"expression": "1+2"}, id="c1"),
                      tool_call("calculate", {"expression": "2*3"}, id="c2")]),
    reply("3 and 6."),
)


class Recorder(RequestObserver):
    def __init__(self, log: list) -> None:
        self.log = log

    def provider_call_started(self, iteration, messages):
        self.log.append(("call", iteration, [m.role for m in messages]))

    def first_chunk(self, iteration):
        self.log.append(("first", iteration))

    def provider_call_ended(self, iteration, messages):
        self.log.append(("answered", iteration, [m.content for m in messages]))

    def tool_started(self, iteration, call_id, tool_name, payload):
        self.log.append(("tool", call_id, tool_name, dict(payload)))

    def tool_ended(self, call_id, message):
        self.log.append(("result", call_id, message.tool_result["success"]))

    def request_ended(self, outcome, usage, error):
        self.log.append(("end", outcome.status, outcome.reason, type(error).__name__ if error else None))


def watching(log: list, seen: list | None = None) -> type:
    class Watch(BaseFeature):
        name = "watch"

        def observe_request(self, config, *, context=None):
            if seen is not None:
                seen.append((WHO.get(), dict(context)))
            return Recorder(log)

    return Watch


def _core(provider, log, seen=None):
    return AgentCore(providers=[provider], features=[watching(log, seen)], tools=[CalculatorTool])


CALC = {"enabled_plugins": ["calculator"]}


def _session(core):
    return core.add_message(core.create_session("s1"), Message(role="user", content="hi"))


STREAMED = [
    ("call", 1, ["user"]), ("first", 1), ("answered", 1, [""]),
    ("tool", "c1", "calculate", {"expression": "1+2"}), ("result", "c1", True),
    ("tool", "c2", "calculate", {"expression": "2*3"}), ("result", "c2", True),
    ("call", 2, ["user", "assistant", "tool", "tool"]), ("first", 2), ("answered", 2, ["3 and 6."]),
    ("end", "finished", None, None),
]


def test_a_streamed_turn_with_two_tool_calls_in_order():
    log: list = []
    core = _core(scripted_provider(*TWO_TOOLS), log)
    events = list(core.stream_request(_session(core), CALC))
    assert events[-1].outcome.status == "finished"
    assert log == STREAMED


def test_the_async_twin_tells_the_same():
    log: list = []
    core = _core(scripted_provider(*TWO_TOOLS), log)

    async def run():
        return [e async for e in core.astream_request(_session(core), CALC)]

    asyncio.run(run())
    assert log == STREAMED


def test_a_whole_answer_has_no_first_chunk():
    log: list = []
    core = _core(scripted_provider(*TWO_TOOLS), log)
    core.request(_session(core), CALC)
    assert ("first", 1) not in log and log[0] == ("call", 1, ["user"]) and log[-1] == ("end", "finished", None, None)


def test_a_failed_call_ends_with_the_typed_error():
    def fail(messages):
        raise RateLimitError("slow down", retry_after=2.0)

    log: list = []
    core = _core(function_provider(fail), log)
    events = list(core.stream_request(_session(core)))
    assert events[-1].outcome.reason == "provider_error"
    assert log == [("call", 1, ["user"]), ("end", "stopped", "provider_error", "RateLimitError")]


def test_a_failing_observer_is_dropped_and_the_request_goes_on(caplog):
    class Broken(RequestObserver):
        def first_chunk(self, iteration):
            raise RuntimeError("exporter down")

        def request_ended(self, outcome, usage, error):
            raise AssertionError("a dropped observer hears nothing more")

    class Watch(BaseFeature):
        name = "broken_watch"

        def observe_request(self, config, *, context=None):
            return Broken()

    core = AgentCore(providers=[scripted_provider("fine")], features=[Watch])
    with caplog.at_level(logging.WARNING, logger="agent_core.observe"):
        result = core.request(_session(core), {"stream": True})
    assert result.final_messages[-1].content == "fine"
    assert "broken_watch" in caplog.text and "first_chunk" in caplog.text


def test_an_abandoned_stream_still_ends_its_observer():
    log: list = []
    core = _core(scripted_provider("one two three"), log)
    events = core.stream_request(_session(core))
    assert [next(events).type, next(events).type] == ["start", "partial"]
    events.close()
    assert log[-1] == ("end", "stopped", "cancelled", None)


def test_the_hook_runs_in_the_callers_context_even_when_read_on_another_thread():
    log: list = []
    seen: list = []
    core = _core(scripted_provider("hello"), log, seen)
    token = WHO.set("caller")
    try:
        events = core.stream_request(_session(core), request_id="r-1")
    finally:
        WHO.reset(token)
    out: list = []
    reader = threading.Thread(target=lambda: out.extend(events))
    reader.start()
    reader.join(10)
    assert out[-1].outcome.status == "finished"
    (who, context), = seen
    assert who == "caller"
    assert {k: context[k] for k in ("request_id", "provider", "session_id", "stream")} == {
        "request_id": "r-1", "provider": "scripted", "session_id": "s1", "stream": True}
    assert isinstance(context["started_ns"], int)


def test_without_an_observer_nothing_is_asked():
    core = AgentCore(providers=[scripted_provider("hello")])
    run_events = list(core.stream_request(_session(core)))
    assert run_events[-1].outcome.status == "finished"


@pytest.mark.parametrize("returned", [None])
def test_a_feature_may_decline_to_observe(returned):
    class Maybe(BaseFeature):
        name = "maybe"

        def observe_request(self, config, *, context=None):
            return returned

    core = AgentCore(providers=[scripted_provider("hello")], features=[Maybe])
    assert list(core.stream_request(_session(core)))[-1].outcome.status == "finished"
