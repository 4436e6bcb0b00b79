"""render: the stable text agent_snapshot stores, and its one normalisation rule."""

from __future__ import annotations

import json

from agent_core import AgentCore, Message, Session
from agent_core.testing import render, reply, scripted_provider, tool_call


def test_ids_become_numbered_placeholders_that_keep_matching():
    call = tool_call("add", {"a": 1}, id="call_XYZ")
    msgs = [Message(role="assistant", content="", metadata={"tool_calls": [call]}),
            Message(role="tool", content="1", metadata={"tool_call_id": "call_XYZ", "tool_name": "add"})]
    out = json.loads(render(Session(session_id="sess-123", messages=msgs)))
    assert out["session_id"] == "<id:2>"
    assert out["messages"][0]["metadata"]["tool_calls"][0]["id"] == "<id:1>"
    assert out["messages"][1]["metadata"]["tool_call_id"] == "<id:1>"  # the same id, the same placeholder
    assert "call_XYZ" not in render(msgs) and "sess-123" not in render(Session(session_id="sess-123"))


def test_times_are_replaced_and_nothing_else_is():
    text = render({"created": 1727346169, "timestamp": "2026-01-01", "content": "created 1727346169", "n": 1})
    assert json.loads(text) == {"content": "created 1727346169", "created": "<time>", "n": 1, "timestamp": "<time>"}


def test_keys_are_sorted_and_short_values_stay_on_one_line():
    text = render({"b": [{"role": "user", "content": "x"}], "a": "y" * 120})
    assert text.splitlines() == ['{', '  "a": "' + "y" * 120 + '",', '  "b": [{"content": "x", "role": "user"}]', '}']


def test_two_runs_of_one_request_render_the_same():
    core = AgentCore(providers=[scripted_provider(reply(tool_calls=[tool_call("f", {})]), "done")])
    session = core.add_message(core.create_session(), Message(role="user", content="go"))
    first = render(list(core.stream_request(session, {"max_iterations": 1})))
    second = render(list(core.stream_request(session, {"max_iterations": 1})))
    assert first == second
    assert '"type": "start"' in first and '"type": "done"' in first


def test_a_request_result_renders_field_by_field():
    core = AgentCore(providers=[scripted_provider("hello")])
    session = core.add_message(core.create_session("s1"), Message(role="user", content="hi"))
    out = json.loads(render(core.request(session, {})))
    assert out["kind"] == "RequestResult"
    assert out["final_messages"] == [{"content": "hello", "kind": "Message", "role": "assistant"}]
    assert [m["content"] for m in out["session"]["messages"]] == ["hi", "hello"]  # a persistent vector, as a list
    assert out["outcome"]["status"] == "finished" and out["request_id"] == "<id:1>"
