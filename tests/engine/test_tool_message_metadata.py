"""``tool_message_metadata``: what a tool_pre / tool_post action adds to the call's own tool message.

Our one extension of the HookResult vocabulary (docs/engine.md). The ``tool_result``
event is announced after ``tool_post``, so it carries the message exactly as stored.
"""

from __future__ import annotations

from typing import Any

import pytest
from agent_core import AgentCore, Message, Session
from agent_core.errors import PluginError
from agent_core.testing import reply, scripted_provider, tool_call
from agent_core_plugins.calculator import CalculatorTool


def _core(feature: Any) -> AgentCore:
    provider = scripted_provider(
        reply(tool_calls=[tool_call("calculate", {"expression": "1+1"}, id="a"),
                          tool_call("calculate", {"expression": "2+2"}, id="b")]),
        reply("done"),
    )
    return AgentCore(providers=[provider], features=[feature], tools=[CalculatorTool])


def _events(core: AgentCore) -> list[Any]:
    return list(core.stream_request(Session("s", [Message("user", "go")]), {"enabled_plugins": ["calculator"]}))


class Tagger:
    """tool_pre tags every call; tool_post adds what it saw, and reads what tool_pre left."""

    name = "tagger"
    seen: list[Any] = []

    def get_actions(self, state):
        return [{"id": "pre", "trigger": "tool_pre"}, {"id": "post", "trigger": "tool_post"}]

    def execute_action(self, action_id, session, native_messages, params, context, state):
        call = context["tool_call"]
        if action_id == "pre":
            return {"action": "continue", "tool_message_metadata": {"tag": f"pre-{call['id']}"}}
        Tagger.seen.append(context["tool_message"]["metadata"]["tag"])
        return {"tool_message_metadata": {"checked": context["tool_result"]["success"]},
                "session_metadata": {"last": call["id"]}}


def test_pre_and_post_metadata_land_on_the_tool_message_and_its_event() -> None:
    Tagger.seen = []
    events = _events(_core(Tagger))
    done = events[-1]
    tools = {m.metadata["tool_call_id"]: m for m in done.session.messages if m.role == "tool"}
    assert tools["a"].metadata["tag"] == "pre-a" and tools["a"].metadata["checked"] is True
    assert tools["b"].metadata["tag"] == "pre-b"
    assert tools["a"].metadata["tool_name"] == "calculate"  # the engine's keys stay
    assert Tagger.seen == ["pre-a", "pre-b"]  # tool_post reads what tool_pre added
    assert done.session.metadata["last"] == "b"
    # the event comes after tool_post and carries the stored message
    results = [e for e in events if e.type == "tool_result"]
    assert [e.message for e in results] == [tools["a"], tools["b"]]
    assert [m.metadata["tool_call_id"] for m in done.final_messages if m.role == "tool"] == ["a", "b"]
    assert done.final_messages[1] == tools["a"]


@pytest.mark.parametrize(
    ("value", "words"),
    [(["not", "a", "mapping"], "not a mapping"), ({"tool_call_id": "x"}, "may not set tool_call_id")],
)
def test_a_bad_tool_message_metadata_is_a_plugin_error(value: Any, words: str) -> None:
    class Bad:
        name = "bad"

        def get_actions(self, state):
            return [{"id": "post", "trigger": "tool_post"}]

        def execute_action(self, action_id, session, native_messages, params, context, state):
            return {"tool_message_metadata": value}

    core = _core(Bad)
    session = Session("s", [Message("user", "go")])
    with pytest.raises(PluginError) as err:
        core.request(session, {"enabled_plugins": ["calculator"]})
    assert err.value.plugin == "bad" and words in str(err.value)


def test_dropping_the_stream_mid_tool_closes_the_tool_run() -> None:
    """The result is held back until tool_post; closing the stream early still closes the tool."""
    closed: list[bool] = []

    class Ticker:
        name = "ticker"

        def get_tool_schemas(self, state):
            return [{"type": "function", "function": {"name": "tick", "parameters": {"type": "object"}}}]

        def stream_tool(self, tool_name, payload, state):
            try:
                for i in range(100):
                    yield {"part": i}
            finally:
                closed.append(True)

    provider = scripted_provider(reply(tool_calls=[tool_call("tick", {}, id="t")]), reply("done"))
    core = AgentCore(providers=[provider], tools=[Ticker])
    stream = core.stream_request(Session("s", [Message("user", "go")]), {})
    for event in stream:
        if event.type == "tool_progress":
            break
    stream.close()
    assert closed == [True]
