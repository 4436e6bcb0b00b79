"""The guide's ``Lines`` provider inside a tool loop, against a loopback server speaking its API.

The provider is taken from docs/writing-plugins.md as written, so a guide that
forgot to reset what one provider call gathers fails here: a three-call loop
must run each tool call once. A copy that keeps its per-call keys for the whole
request shows what the engine does about a reply that repeats an answered call.
"""

from __future__ import annotations

import json
import sys
import warnings
from typing import Any

import pytest
from agent_core import AgentCore, Message
from agent_core.errors import RepeatedToolCallWarning
from agent_core.plugin_kit import Tool, ToolCall, success
from guide_snippets import guide_module
from providers._server import Reply

Lines = guide_module("lines_provider.py").Lines


def lines(*items: Any) -> Reply:
    return Reply(200, {"content-type": "application/jsonl"}, [b"".join(json.dumps(i).encode() + b"\n" for i in items)])


def call(cid: str, text: str) -> dict[str, Any]:
    return {"call": {"id": cid, "name": "echo_back", "arguments": {"text": text}}}


class EchoBack(Tool):
    name = "echo_back"
    runs: list[str] = []

    def get_tool_schemas(self, state):
        return [{"type": "function", "function": {"name": "echo_back", "parameters": {
            "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}}]

    def run(self, call: ToolCall):
        EchoBack.runs.append(call.arguments["text"])
        return success(call.arguments["text"])


@pytest.fixture(autouse=True)
def _fresh_runs():
    EchoBack.runs = []


def ask(provider: type, server: Any, stream: bool) -> Any:
    core = AgentCore(providers=[provider], tools=[EchoBack])
    session = core.add_message(core.create_session(), Message(role="user", content="go"))
    return list(core.stream_request(session, {"provider": "lines", "lines_url": server.url, "stream": stream}))


@pytest.mark.parametrize("stream", [True, False])
def test_a_three_call_tool_loop_runs_each_tool_once(server, stream):
    if stream:
        server.enqueue(lines(call("c1", "one"), {"done": True, "tokens": 1}),
                       lines(call("c2", "two"), {"done": True, "tokens": 1}),
                       lines({"text": "Did "}, {"text": "both."}, {"done": True, "tokens": 2}))
    else:
        server.enqueue(*(Reply(200, {"content-type": "application/json"}, [json.dumps(b).encode()], chunked=False)
                         for b in ({"text": "", "calls": [call("c1", "one")["call"]], "tokens": 1},
                                   {"text": "", "calls": [call("c2", "two")["call"]], "tokens": 1},
                                   {"text": "Did both.", "tokens": 2})))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RepeatedToolCallWarning)
        events = ask(Lines, server, stream)
    done = events[-1]
    assert done.outcome.status == "finished"
    assert EchoBack.runs == ["one", "two"]
    assert done.session.messages[-1].content == "Did both."
    assert len(server.requests) == 3
    # the third call sends both results, each answering its own call
    sent = server.bodies[2]["messages"]
    assert [m.get("answers") for m in sent if m["role"] == "tool"] == ["c1", "c2"]
    assert sent[0]["content"] == "go" and server.bodies[2]["tools"][0]["name"] == "echo_back"


class Forgetful(Lines):
    """The guide's provider with its per-call keys set once, in init, and never reset."""

    name = "lines"

    def init(self, config):
        return {**super().init(config), "text": "", "calls": [], "tokens": None}

    def initialize_request(self, native_messages, state):
        return native_messages, state


def test_a_reply_repeating_an_answered_call_is_named_and_stops_the_loop(server):
    server.enqueue(lines(call("c1", "one"), {"done": True, "tokens": 1}),
                   lines({"text": "Done."}, {"done": True, "tokens": 1}),
                   *[lines({"text": "again"}) for _ in range(8)])
    with pytest.warns(RepeatedToolCallWarning, match=r"provider 'lines' asked again for tool call\(s\) 'c1'") as got:
        events = ask(Forgetful, server, stream=True)
    [warned] = [w.message for w in got if w.category is RepeatedToolCallWarning]
    assert warned.provider == "lines" and warned.call_ids == ("c1",)
    done = events[-1]
    assert (done.outcome.status, done.outcome.reason) == ("stopped", "repeated_tool_call")
    assert "c1" in done.outcome.detail
    assert EchoBack.runs == ["one"]  # not once per remaining iteration
    assert len(server.requests) == 2
    assert sys.modules.get("lines_provider") is None  # the guide's module was never installed globally
