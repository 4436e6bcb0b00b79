"""The ``otel`` feature with the real OpenTelemetry SDK and its in-memory span exporter.

Each test gets its own ``TracerProvider`` through ``OtelFeature.using(provider)`` (the
global provider can be set only once per process, so no test touches it). The span
tree is checked exactly: names, kinds, parents, attributes and statuses, for a streamed
turn with two calculator calls, for a failed provider call, for every way of running a
request (sync, async, streamed or not), for contents recorded only on request, and for
the caller's span as parent, read on another thread or task.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel tests need opentelemetry-sdk (the test extra)")

from agent_core import AgentCore, ConfigError, Message, RateLimitError
from agent_core.testing import function_provider, reply, scripted_provider, tool_call
from agent_core_features.otel import OtelFeature
from agent_core_plugins.calculator import CalculatorTool
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

ON = {"enabled_plugins": ["otel", "calculator"], "model": "scripted-1"}
TWO_TOOLS = (
    reply(tool_calls=[tool_call("calculate", {"expression": "1200 - 845"}, id="call_1"),
                      tool_call("calculate", {"expression": "9**9**9**9"}, id="call_2")],
          usage={"input_tokens": 120, "output_tokens": 30}, metadata={"finish_reason": "tool_calls"}),
    reply("You have 355 left.", usage={"input_tokens": 300, "output_tokens": 8},
          metadata={"finish_reason": "stop"}),
)


class Spans:
    """An SDK tracer provider writing to memory, and the spans it finished."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def finished(self) -> list[Any]:
        return sorted(self.exporter.get_finished_spans(), key=lambda s: s.start_time)

    def tree(self) -> list[tuple[str, str | None, str]]:
        """``(name, parent name, kind)`` of every span, in start order."""
        spans = self.finished()
        by_id = {s.context.span_id: s.name for s in spans}
        return [(s.name, by_id.get(s.parent.span_id) if s.parent else None, s.kind.name) for s in spans]

    def named(self, name: str) -> list[Any]:
        return [s for s in self.finished() if s.name == name]


@pytest.fixture
def spans() -> Spans:
    return Spans()


def _core(spans: Spans, provider: Any) -> AgentCore:
    """The provider (declaring ``model`` and sampling keys, as real ones do), the otel feature bound to ``spans``, the calculator."""
    class WithModel(provider):  # type: ignore[misc, valid-type]
        def get_config_schema(self) -> dict[str, Any]:
            return {"model": {"type": "string", "default": "scripted-1"}, "temperature": {"type": "number"},
                    "top_p": {"type": "number"}, "max_tokens": {"type": "integer"}}

    return AgentCore(providers=[WithModel], features=[OtelFeature.using(spans.provider)], tools=[CalculatorTool])


def _session(core: AgentCore) -> Any:
    return core.add_message(core.create_session("conv-7"), Message(role="user", content="How much is left?"))


TREE = [
    ("invoke_agent", None, "INTERNAL"),
    ("chat scripted-1", "invoke_agent", "CLIENT"),
    ("execute_tool calculate", "invoke_agent", "INTERNAL"),
    ("execute_tool calculate", "invoke_agent", "INTERNAL"),
    ("chat scripted-1", "invoke_agent", "CLIENT"),
]


def test_a_streamed_turn_with_two_tool_calls_gives_the_exact_span_tree(spans):
    core = _core(spans, scripted_provider(*TWO_TOOLS))
    events = list(core.stream_request(_session(core), {**ON, "temperature": 0.2, "top_p": 0.9, "max_tokens": 64},
                                      request_id="req-1"))
    assert events[-1].outcome.status == "finished"
    assert spans.tree() == TREE
    request, chat1, tool1, tool2, chat2 = spans.finished()
    assert len({s.context.trace_id for s in spans.finished()}) == 1
    assert dict(request.attributes) == {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": "scripted", "agent_core.request_id": "req-1",
        "gen_ai.request.model": "scripted-1", "gen_ai.conversation.id": "conv-7",
        "gen_ai.usage.input_tokens": 420, "gen_ai.usage.output_tokens": 38, "agent_core.provider_calls": 2,
        "agent_core.outcome.status": "finished",
    }
    ttfc = [c.attributes["gen_ai.response.time_to_first_chunk"] for c in (chat1, chat2)]
    assert all(isinstance(t, float) and 0 <= t < 5 for t in ttfc)
    common = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "scripted", "gen_ai.system": "scripted",
              "gen_ai.request.model": "scripted-1", "gen_ai.request.stream": True,
              "gen_ai.request.temperature": 0.2, "gen_ai.request.top_p": 0.9, "gen_ai.request.max_tokens": 64}
    shown = {k: v for k, v in chat1.attributes.items() if k != "gen_ai.response.time_to_first_chunk"}
    assert shown == {**common, "agent_core.iteration": 1, "gen_ai.response.finish_reasons": ("tool_calls",),
                     "gen_ai.usage.input_tokens": 120, "gen_ai.usage.output_tokens": 30}
    shown = {k: v for k, v in chat2.attributes.items() if k != "gen_ai.response.time_to_first_chunk"}
    assert shown == {**common, "agent_core.iteration": 2, "gen_ai.response.finish_reasons": ("stop",),
                     "gen_ai.usage.input_tokens": 300, "gen_ai.usage.output_tokens": 8}
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "calculate", "gen_ai.tool.type": "function",
            "agent_core.iteration": 1}
    assert dict(tool1.attributes) == {**tool, "gen_ai.tool.call.id": "call_1", "agent_core.tool.success": True}
    # the calculator refuses 9**9**9**9: an error result the model reads, an error span
    assert dict(tool2.attributes) == {**tool, "gen_ai.tool.call.id": "call_2", "agent_core.tool.success": False,
                                      "error.type": "tool_error"}
    assert tool2.status.status_code is StatusCode.ERROR and tool2.status.description is None  # no content asked for
    assert [s.status.status_code for s in (request, chat1, tool1, chat2)] == [StatusCode.UNSET] * 4
    # each span lies inside the request span, in the order things happened
    assert request.start_time <= chat1.start_time < chat1.end_time <= tool1.start_time < tool1.end_time \
        <= tool2.start_time < tool2.end_time <= chat2.start_time < chat2.end_time <= request.end_time


def test_a_failed_provider_call_is_recorded_with_its_typed_class(spans):
    def model(messages):
        if len(messages) == 1:
            return reply(tool_calls=[tool_call("calculate", {"expression": "2+2"}, id="call_1")])
        raise RateLimitError("the upstream asked us to slow down", retry_after=3.0)

    core = _core(spans, function_provider(model, name="flaky"))
    events = list(core.stream_request(_session(core), {**ON, "model": "m"}))
    assert events[-1].outcome.reason == "provider_error"
    assert spans.tree() == [
        ("invoke_agent", None, "INTERNAL"),
        ("chat m", "invoke_agent", "CLIENT"),
        ("execute_tool calculate", "invoke_agent", "INTERNAL"),
        ("chat m", "invoke_agent", "CLIENT"),
    ]
    request, chat1, _, chat2 = spans.finished()
    assert chat1.status.status_code is StatusCode.UNSET
    for span in (chat2, request):
        assert span.attributes["error.type"] == "RateLimitError"
        assert span.status.status_code is StatusCode.ERROR
        assert "slow down" in span.status.description
        (exception,) = [e for e in span.events if e.name == "exception"]
        assert exception.attributes["exception.type"].endswith("RateLimitError")
    assert "gen_ai.usage.input_tokens" not in chat2.attributes  # it never answered
    assert request.attributes["agent_core.outcome.reason"] == "provider_error"


def _shape(spans: Spans) -> list[tuple[str, str | None, dict[str, Any]]]:
    """The tree with the attributes that do not depend on how the request ran."""
    varying = {"gen_ai.request.stream", "gen_ai.response.time_to_first_chunk", "agent_core.request_id"}
    by_id = {s.context.span_id: s.name for s in spans.finished()}
    return [(s.name, by_id.get(s.parent.span_id) if s.parent else None,
             {k: v for k, v in s.attributes.items() if k not in varying}) for s in spans.finished()]


def test_sync_async_streamed_or_not_give_the_same_spans():
    shapes, streams = [], []
    for how in ("request", "stream_request", "arequest", "astream_request"):
        spans = Spans()
        core = _core(spans, scripted_provider(*TWO_TOOLS))
        session = _session(core)
        if how == "request":
            core.request(session, ON)
        elif how == "stream_request":
            list(core.stream_request(session, ON))
        elif how == "arequest":
            asyncio.run(core.arequest(session, ON))
        else:
            async def read(core: AgentCore = core, session: Any = session) -> None:
                async for _ in core.astream_request(session, ON):
                    pass
            asyncio.run(read())
        shapes.append(_shape(spans))
        chats = spans.named("chat scripted-1")
        streams.append([(c.attributes["gen_ai.request.stream"],
                         "gen_ai.response.time_to_first_chunk" in c.attributes) for c in chats])
    assert shapes[0] == shapes[1] == shapes[2] == shapes[3]
    assert [s[0] for s in shapes[0]] == [name for name, _, _ in TREE]
    assert streams == [[(False, False)] * 2, [(True, True)] * 2, [(False, False)] * 2, [(True, True)] * 2]


def test_contents_are_recorded_only_when_the_operator_opts_in(spans):
    core = _core(spans, scripted_provider(*TWO_TOOLS))
    core.request(_session(core), ON)
    content_keys = {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments",
                    "gen_ai.tool.call.result"}
    assert not any(content_keys & set(s.attributes) for s in spans.finished())

    spans = Spans()
    core = _core(spans, scripted_provider(*TWO_TOOLS))
    core.request(_session(core), {**ON, "otel_capture_content": True})
    _, chat1, tool1, tool2, chat2 = spans.finished()
    assert json.loads(chat1.attributes["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "How much is left?"}]}]
    assert json.loads(chat1.attributes["gen_ai.output.messages"]) == [
        {"role": "assistant", "finish_reason": "tool_calls", "parts": [
            {"type": "tool_call", "id": "call_1", "name": "calculate", "arguments": '{"expression": "1200 - 845"}'},
            {"type": "tool_call", "id": "call_2", "name": "calculate", "arguments": '{"expression": "9**9**9**9"}'},
        ]}]
    assert json.loads(tool1.attributes["gen_ai.tool.call.arguments"]) == {"expression": "1200 - 845"}
    assert json.loads(tool1.attributes["gen_ai.tool.call.result"]) == "355"  # what the calculator answers
    assert "gen_ai.tool.call.result" not in tool2.attributes and tool2.status.description  # the refusal, shown
    sent = json.loads(chat2.attributes["gen_ai.input.messages"])
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "tool"]
    assert sent[2]["parts"][0]["type"] == "tool_call_response" and sent[2]["parts"][0]["id"] == "call_1"
    assert json.loads(chat2.attributes["gen_ai.output.messages"]) == [
        {"role": "assistant", "finish_reason": "stop", "parts": [{"type": "text", "content": "You have 355 left."}]}]


def test_no_secret_reaches_a_span_even_with_contents_on(spans):
    secret = "sk-live-0123456789abcdefghij"
    core = _core(spans, scripted_provider(*TWO_TOOLS))
    with pytest.warns(UserWarning):  # api_key is declared by no plugin here
        core.request(_session(core), {**ON, "otel_capture_content": True, "api_key": secret,
                                      "otel_agent_name": "helper"})
    request = spans.finished()[0]
    assert request.name == "invoke_agent helper" and request.attributes["gen_ai.agent.name"] == "helper"
    for span in spans.finished():
        assert secret not in repr(dict(span.attributes)) + repr(span.status.description)


def test_the_callers_span_is_the_parent_even_when_the_stream_is_read_on_another_thread(spans):
    core = _core(spans, scripted_provider("fine"))
    tracer = spans.provider.get_tracer("the-app")
    with tracer.start_as_current_span("handle job") as parent:
        events = core.stream_request(_session(core), ON)
    with tracer.start_as_current_span("unrelated"):  # current on this thread when it is read: not the parent
        out: list[Any] = []
        reader = threading.Thread(target=lambda: out.extend(events))
        reader.start()
        reader.join(10)
    assert out[-1].outcome.status == "finished"
    (request,) = spans.named("invoke_agent")
    assert request.parent.span_id == parent.get_span_context().span_id
    assert request.context.trace_id == parent.get_span_context().trace_id


def test_the_callers_span_is_the_parent_in_an_async_task(spans):
    core = _core(spans, scripted_provider("fine"))
    tracer = spans.provider.get_tracer("the-app")

    async def handler() -> int:
        with tracer.start_as_current_span("async handler") as parent:
            result = await core.arequest(_session(core), ON)
            assert result.outcome.status == "finished"
            return int(parent.get_span_context().span_id)

    parent_id = asyncio.run(handler())
    (request,) = spans.named("invoke_agent")
    assert request.parent.span_id == parent_id
    assert {s.parent.span_id for s in spans.named("chat scripted-1")} == {request.context.span_id}


def test_an_abandoned_stream_ends_its_spans_as_cancelled(spans):
    core = _core(spans, scripted_provider("one two three four"))
    events = core.stream_request(_session(core), ON)
    assert [next(events).type for _ in range(3)] == ["start", "partial", "partial"]
    events.close()  # the reader went away mid-answer
    assert spans.tree() == [("invoke_agent", None, "INTERNAL"), ("chat scripted-1", "invoke_agent", "CLIENT")]
    for span in spans.finished():
        assert span.attributes["error.type"] == "cancelled" and span.status.status_code is StatusCode.ERROR
    assert spans.named("invoke_agent")[0].attributes["agent_core.outcome.reason"] == "cancelled"


def test_a_cancelled_request_is_recorded_as_such(spans):
    core = _core(spans, scripted_provider("one two three four"))
    events = core.stream_request(_session(core), ON, request_id="job-9")
    for event in events:
        if event.type == "partial":
            core.cancel_request("job-9")
    (request,) = spans.named("invoke_agent")
    assert request.attributes["error.type"] == "ProviderRequestCancelled"
    assert request.attributes["agent_core.outcome.reason"] == "cancelled"
    assert spans.named("chat scripted-1")[0].attributes["error.type"] == "ProviderRequestCancelled"


def test_a_request_without_a_span_around_it_starts_a_trace(spans):
    core = _core(spans, scripted_provider("fine"))
    core.request(_session(core), ON)
    (request,) = spans.named("invoke_agent")
    assert request.parent is None


def test_off_it_makes_no_span(spans):
    core = _core(spans, scripted_provider(*TWO_TOOLS))
    core.request(_session(core), {"enabled_plugins": ["calculator"]})
    assert list(spans.finished()) == []


_WITHOUT_OTEL = """
import sys
sys.modules["opentelemetry"] = None  # as if the otel extra were not installed
from agent_core import AgentCore, ConfigError, Message
core = AgentCore.discover()
session = core.add_message(core.create_session(), Message(role="user", content="hi"))
print(core.request(session, {"provider": "echo"}).final_messages[-1].content)
try:
    core.request(session, {"provider": "echo", "enabled_plugins": ["otel"]})
except ConfigError as exc:
    print("ConfigError:", exc)
"""


def test_without_the_api_nothing_changes_until_someone_enables_it():
    out = subprocess.run([sys.executable, "-c", _WITHOUT_OTEL], capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    first, second = out.stdout.strip().splitlines()
    assert first == "Echo: hi"
    assert second.startswith("ConfigError: the otel feature needs the OpenTelemetry API: pip install")
    assert "otel" in second.split("pip install", 1)[1]


def test_off_the_api_is_never_imported():
    code = ("from agent_core import AgentCore, Message\n"
            "core = AgentCore.discover()\n"
            "s = core.add_message(core.create_session(), Message(role='user', content='hi'))\n"
            "list(core.stream_request(s, {'provider': 'echo'}))\n"
            "import sys; print('opentelemetry' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert out.stdout.strip() == "False", out.stderr


_GLOBAL = """
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from agent_core import AgentCore, Message
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
core = AgentCore.discover()
session = core.add_message(core.create_session(), Message(role="user", content="hi"))
core.request(session, {"provider": "echo", "enabled_plugins": ["otel"]})
print(sorted(s.name for s in exporter.get_finished_spans()))
"""


def test_the_installed_feature_uses_the_global_tracer_provider():
    """Found by entry point (no ``using``), spans go to the provider the application set globally."""
    out = subprocess.run([sys.executable, "-c", _GLOBAL], capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['chat echo-1', 'invoke_agent']"


def test_a_span_kind_per_operation(spans):
    core = _core(spans, scripted_provider(*TWO_TOOLS))
    core.request(_session(core), ON)
    kinds = {s.name.split(" ")[0]: s.kind for s in spans.finished()}
    assert kinds == {"invoke_agent": SpanKind.INTERNAL, "chat": SpanKind.CLIENT, "execute_tool": SpanKind.INTERNAL}


def test_enabled_config_errors_are_typed():
    with pytest.raises(ConfigError):
        core = AgentCore(providers=[scripted_provider("x")], features=[OtelFeature])
        core.request(_session(core), {"enabled_plugins": ["otel"], "otel_capture_content": "yes"})
