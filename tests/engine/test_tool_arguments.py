"""A tool call's arguments are checked against the tool's declared schema before it runs."""

from __future__ import annotations

import pytest
from agent_core import AgentCore, Message
from agent_core.plugin_kit import Tool, ToolCall, success
from agent_core.testing import reply, scripted_provider, tool_call
from agent_core.tools.arguments import argument_fault, parameters_of

SCHEMA = {"type": "object", "properties": {"text": {"type": "string", "maxLength": 20},
                                           "times": {"type": "integer", "minimum": 1}},
          "required": ["text"], "additionalProperties": False}


class Repeat(Tool):
    name = "repeat"
    ran: list = []

    def get_tool_schemas(self, state):
        return [{"type": "function", "function": {"name": "repeat", "parameters": SCHEMA}}]

    def run(self, call: ToolCall):
        Repeat.ran.append(dict(call.arguments))
        return success(call.arguments["text"] * call.arguments.get("times", 1))


def results(arguments, config=None):
    Repeat.ran = []
    model = scripted_provider(reply(tool_calls=[tool_call("repeat", arguments)]), reply("ok"))
    core = AgentCore(providers=[model], tools=[Repeat])
    session = core.add_message(core.create_session(), Message(role="user", content="go"))
    events = list(core.stream_request(session, config or {}))
    return [e.message.content for e in events if e.type == "tool_result"]


@pytest.mark.parametrize(("arguments", "said"), [
    ({}, "arguments lack the required 'text'"),
    ({"text": 3}, "'text' must be string, got number"),
    ({"text": "hi", "times": 0}, "'times' must be at least 1, got 0"),
    ({"text": "hi", "loud": True}, "arguments hold 'loud', which the schema does not offer (it offers text, times)"),
])
def test_arguments_that_break_the_schema_are_an_error_the_model_reads_and_the_tool_never_runs(arguments, said):
    [result] = results(arguments)
    assert result.startswith("Error: the arguments do not fit the schema of the tool 'repeat': ")
    assert said in result
    assert Repeat.ran == []


def test_arguments_that_fit_run_the_tool():
    assert results({"text": "ab", "times": 2}) == ["Result: abab"]
    assert Repeat.ran == [{"text": "ab", "times": 2}]


def test_the_check_can_be_turned_off_for_a_request():
    assert results({"text": "hi", "loud": True}, {"validate_tool_arguments": False}) == ["Result: hi"]


def test_the_schema_is_found_in_every_tool_format():
    assert parameters_of({"type": "function", "function": {"name": "t", "parameters": SCHEMA}}) is SCHEMA
    assert parameters_of({"name": "t", "input_schema": SCHEMA}) is SCHEMA
    assert parameters_of({"type": "function", "name": "t", "parameters": SCHEMA}) is SCHEMA
    assert parameters_of(SCHEMA) is SCHEMA
    assert argument_fault({"type": "object", "properties": {"tags": {"type": "array", "items": {"enum": ["a"]}}}},
                          {"tags": ["a", "b"]}) == "'tags'[1] must be one of ['a'], got 'b'"
