"""A tool call whose arguments were cut off never runs, and a cut answer ends the request.

The shared rule (brief, contract 1): when the model hit its token limit inside a tool
call (``finish_reason: "length"``, ``stop_reason: "max_tokens"``, or a call marked
``incomplete``), the request ends without another provider call, the session keeps the
partial answer, and the outcome is ``stopped``/``truncated`` naming the call. Arguments
that are invalid without a cut still become an error result the model reads.
"""

from __future__ import annotations

import asyncio
from typing import Any

from agent_core import AgentCore, Message, Session
from agent_core.testing import reply, scripted_provider, tool_call

CUT_ARGS = '{"a": 1, "b'


def session() -> Session:
    return Session("s", [Message("user", "add 1 and 2")])


def calculator(log: list[Any]) -> type:
    class Calc:
        name = "calc"

        def get_tool_schemas(self, state):
            params = {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}
            return [{"type": "function", "function": {"name": "add", "parameters": params}}]

        def execute_tool(self, tool_name, payload, state):
            log.append(dict(payload))
            return {"success": True, "result": payload["a"] + payload["b"]}

    return Calc


def counting(provider: type, calls: list[int]) -> type:
    """``provider`` that counts how many times the model API was asked."""

    class Counting(provider):  # type: ignore[misc, valid-type]
        def stream_api(self, native_messages, state, *, request_id=None):
            calls.append(1)
            yield from super().stream_api(native_messages, state, request_id=request_id)

        def call_api(self, native_messages, state, *, request_id=None):
            calls.append(1)
            return super().call_api(native_messages, state, request_id=request_id)

    return Counting


def cut_turn(**metadata: Any) -> Any:
    return reply("Let me add", tool_calls=[tool_call("add", CUT_ARGS, id="call_7")], metadata=metadata)


def test_a_call_cut_by_finish_reason_length_ends_the_request_with_the_partial_answer():
    log: list[Any] = []
    api: list[int] = []
    provider = counting(scripted_provider(cut_turn(finish_reason="length"), "never reached"), api)
    core = AgentCore(providers=[provider], tools=[calculator(log)])
    before = session()

    result = core.request(before, {"stream": True})

    assert (result.outcome.status, result.outcome.reason) == ("stopped", "truncated")
    assert "add" in result.outcome.detail and "call_7" in result.outcome.detail
    assert "cut off" in result.outcome.detail and "finish_reason 'length'" in result.outcome.detail
    assert log == []  # the tool never ran
    assert api == [1] and result.usage.provider_calls == 1  # no second provider call
    last = result.session.messages[-1]
    assert last.role == "assistant" and last.content == "Let me add"
    assert last.metadata["tool_calls"][0]["function"]["arguments"] == CUT_ARGS  # raw text kept
    assert result.final_messages == [last]
    assert before == session()  # the caller's session is a value: untouched


def test_anthropic_stop_reason_max_tokens_is_the_same_cut():
    log: list[Any] = []
    core = AgentCore(providers=[scripted_provider(cut_turn(stop_reason="max_tokens"))], tools=[calculator(log)])
    result = core.request(session())
    assert result.outcome.reason == "truncated"
    assert "stop_reason 'max_tokens'" in result.outcome.detail
    assert log == []


def test_a_call_marked_incomplete_never_runs_even_when_its_text_parses():
    log: list[Any] = []
    call = {**tool_call("add", {"a": 1, "b": 2}, id="call_x"), "incomplete": True}
    core = AgentCore(providers=[scripted_provider(reply(tool_calls=[call]), "done")], tools=[calculator(log)])
    result = core.request(session())
    assert result.outcome.reason == "truncated" and "call_x" in result.outcome.detail
    assert log == []


def test_a_stream_shows_the_final_then_done_with_no_error_and_no_tool_events():
    core = AgentCore(providers=[scripted_provider(cut_turn(finish_reason="length"))], tools=[calculator([])])
    events = list(core.stream_request(session()))
    types = [e.type for e in events]
    assert types[0] == "start" and types[-1] == "done"
    assert "error" not in types and "tool_call" not in types and "tool_result" not in types
    assert [e.message.content for e in events if e.type == "final"] == ["Let me add"]
    done = events[-1]
    assert done.outcome.reason == "truncated"
    assert done.session.messages[-1].metadata["tool_calls"][0]["id"] == "call_7"


def test_async_request_ends_the_same_way():
    log: list[Any] = []
    core = AgentCore(providers=[scripted_provider(cut_turn(finish_reason="length"))], tools=[calculator(log)])
    result = asyncio.run(core.arequest(session()))
    assert result.outcome.reason == "truncated" and log == []


def test_hitting_the_limit_after_complete_arguments_still_runs_the_tool():
    log: list[Any] = []
    turns = (reply(tool_calls=[tool_call("add", {"a": 1, "b": 2})], metadata={"finish_reason": "length"}), "3")
    core = AgentCore(providers=[scripted_provider(*turns)], tools=[calculator(log)])
    result = core.request(session())
    assert result.outcome.status == "finished"
    assert log == [{"a": 1, "b": 2}]


def test_invalid_arguments_without_a_cut_become_an_error_result_the_model_reads():
    log: list[Any] = []
    turns = (reply(tool_calls=[tool_call("add", "{not json", id="c1")]), "sorry")
    core = AgentCore(providers=[scripted_provider(*turns)], tools=[calculator(log)])
    result = core.request(session())
    assert result.outcome.status == "finished"
    assert log == []
    tool_msg = result.session.messages[2]
    assert tool_msg.role == "tool" and tool_msg.tool_result["success"] is False
    assert "not valid JSON" in tool_msg.tool_result["error"]
    assert result.session.messages[-1].content == "sorry"


def test_one_cut_call_among_complete_ones_runs_none_of_them():
    log: list[Any] = []
    calls = [tool_call("add", {"a": 1, "b": 2}, id="ok"), tool_call("add", CUT_ARGS, id="cut")]
    turns = (reply(tool_calls=calls, metadata={"finish_reason": "length"}),)
    result = AgentCore(providers=[scripted_provider(*turns)], tools=[calculator(log)]).request(session())
    assert result.outcome.reason == "truncated"
    assert "(cut)" in result.outcome.detail and "(ok)" not in result.outcome.detail
    assert log == []


def test_execute_tool_calls_refuses_an_incomplete_call_with_an_error_result():
    log: list[Any] = []
    core = AgentCore(providers=[scripted_provider("x")], tools=[calculator(log)])
    call = {**tool_call("add", {"a": 1, "b": 2}, id="c9"), "incomplete": True}
    [msg] = core.execute_tool_calls(session(), [call])
    assert log == []
    assert msg.tool_result["success"] is False and "cut off" in msg.tool_result["error"]


# -- the real OpenAI provider over a loopback server ----------------------------------


def test_openai_provider_cut_by_length_over_the_wire_makes_one_request():
    from agent_core_plugins.openai_tools import OpenAIToolsExtension
    from agent_core_providers.clients import close_clients
    from agent_core_providers.openai import OpenAIProvider
    from providers._server import ScriptedServer, sse_reply  # tests/providers, on the path as a package
    from providers._wire import OA_DONE, oa_chunk

    def tc(**fields: Any) -> dict:
        return {"tool_calls": [{"index": 0, **fields}]}

    log: list[Any] = []
    srv = ScriptedServer()
    try:
        srv.enqueue(
            sse_reply(
                oa_chunk({"role": "assistant", "content": "Adding"}),
                oa_chunk(tc(id="call_1", type="function", function={"name": "add", "arguments": '{"a": 1, "b'})),
                oa_chunk({}, "length"),
                OA_DONE,
            ),
            sse_reply(oa_chunk({"content": "must not be asked"}, "stop"), OA_DONE),
        )
        core = AgentCore(providers=[OpenAIProvider], extensions=[OpenAIToolsExtension], tools=[calculator(log)])
        config = {"base_url": srv.url, "api_key": "sk-test-key-123", "model": "m", "stream": True}
        result = core.request(session(), config)
    finally:
        close_clients()
        srv.close()
    assert len(srv.requests) == 1  # the cut call was not sent back
    assert result.outcome.reason == "truncated" and "call_1" in result.outcome.detail
    assert log == []
    last = result.session.messages[-1]
    assert last.content == "Adding" and last.metadata.get("finish_reason") == "length"


def test_the_next_request_after_a_cut_never_runs_the_cut_call():
    log: list[Any] = []
    marked = {**tool_call("add", CUT_ARGS, id="cut_marked"), "incomplete": True}
    unmarked = tool_call("add", CUT_ARGS, id="cut_plain")
    for call in (marked, unmarked):
        turns = (reply("Let me add", tool_calls=[call], metadata={"finish_reason": "length"}), "fine, 3")
        core = AgentCore(providers=[scripted_provider(*turns)], tools=[calculator(log)])
        first = core.request(session())
        assert first.outcome.reason == "truncated"
        second = core.request(first.session.with_message(Message("user", "try again")))
        assert second.outcome.ok and second.session.messages[-1].content == "fine, 3"
        results = [m for m in second.session.messages if m.role == "tool"]
        assert all(m.tool_result["success"] is False for m in results)
    assert log == []  # neither cut call ever ran
