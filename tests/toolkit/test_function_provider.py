"""``function_provider``: turns computed from the messages sent, sync or async, streamed or not."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from agent_core import AgentCore
from agent_core.testing import check_plugin, function_provider, reply, tool_call


class Adder:
    name = "adder"

    def get_tool_schemas(self, state: Any) -> list[dict]:
        return [{"type": "function", "function": {"name": "add", "parameters": {
            "type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}}}]

    def execute_tool(self, tool_name: Any, payload: Any, state: Any) -> Any:
        return {"success": True, "result": payload["a"] + payload["b"]}


CALLS: list[list[dict]] = []


def model(messages: list[dict]) -> Any:
    """Asks for the tool once, then reads its result back: an answer computed from what it was sent."""
    CALLS.append(messages)
    if messages[-1]["role"] == "tool":
        return f"The sum is {messages[-1]['content'].removeprefix('Result: ')}."
    a, b = (int(x) for x in messages[-1]["content"].split("+"))
    return reply(tool_calls=[tool_call("add", {"a": a, "b": b})])


async def amodel(messages: list[dict]) -> Any:
    await asyncio.sleep(0)
    return model(messages)


@pytest.mark.parametrize("fn", [model, amodel], ids=["sync", "async"])
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "call"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_function_answers_from_the_conversation(fn: Any, stream: bool, mode: str) -> None:
    CALLS.clear()
    core = AgentCore(providers=[function_provider(fn)], tools=[Adder])
    session = core.add_message(core.create_session(), "user", "19+23")
    config = {"provider": "function", "stream": stream}
    result = core.request(session, config) if mode == "sync" else asyncio.run(core.arequest(session, config))
    assert result.session.messages[-1].content == "The sum is 42."
    assert len(CALLS) == 2  # once per model turn, streamed or not
    assert [m["role"] for m in CALLS[1]] == ["user", "assistant", "tool"]


def test_a_function_provider_passes_the_contract_check() -> None:
    check_plugin(function_provider(lambda messages: "ok"))


def test_a_function_that_returns_something_else_is_named() -> None:
    core = AgentCore(providers=[function_provider(lambda messages: 42, name="answers")])
    with pytest.raises(Exception, match="must return a text or a reply"):
        core.request(core.add_message(core.create_session(), "user", "hi"), {"provider": "answers"})
