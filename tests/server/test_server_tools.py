"""The operator's tool plugins on the facades: run by the server's loop, never handed to a client.

The operator enables the bundled ``calculator`` tool. A client that declares no tools of
its own gets the final answer, computed with it; one that declares tools gets only its
own offered; with ``facade_server_tools`` off the calculator is never offered there.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from agent_core.server import ServeSettings, create_app
from providers._anthropic_api import refuse_like_anthropic
from providers._server import ScriptedServer, json_reply

from ._live import running

ASK = [{"role": "user", "content": "What is 6 * 7?"}]


def chat_answer(content: str | None, calls: list[Any] | None = None) -> Any:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    return json_reply({"id": "c", "object": "chat.completion", "created": 1, "model": "gpt-4o",
                       "choices": [{"index": 0, "message": message,
                                    "finish_reason": "tool_calls" if calls else "stop"}],
                       "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})


CALCULATE = chat_answer(None, [{"id": "call_1", "type": "function",
                                "function": {"name": "calculate", "arguments": json.dumps({"expression": "6 * 7"})}}])


def serving(server: ScriptedServer, store: Any, **settings: Any) -> Any:
    operator = {"base_url": f"{server.url}/v1", "api_key": "sk-upstream-0123456789", "max_retries": 0,
                "enabled_plugins": ["calculator"]}
    return running(create_app(store=store, config=operator, settings=ServeSettings(**settings)))


@pytest.fixture
def facade(server: ScriptedServer, store: Any) -> Iterator[str]:
    with serving(server, store) as url:
        yield url


def offered(body: Any) -> list[str]:
    return [t.get("name") or t["function"]["name"] for t in body.get("tools") or ()]


def test_a_chat_client_without_tools_gets_the_answer_the_servers_tool_made(facade: str, server: ScriptedServer) -> None:
    server.enqueue(CALCULATE, chat_answer("6 * 7 is 42."))
    chat = openai.OpenAI(base_url=f"{facade}/v1", api_key="unused", max_retries=0)
    reply = chat.chat.completions.create(model="openai/gpt-4o", messages=ASK)
    assert reply.choices[0].message.content == "6 * 7 is 42." and reply.choices[0].message.tool_calls is None
    assert reply.choices[0].finish_reason == "stop"
    first, second = (r.body for r in server.requests)
    assert offered(first) == ["calculate"]
    assert second["messages"][-1] == {"role": "tool", "tool_call_id": "call_1", "content": "Result: 42"}


def test_a_streamed_chat_never_shows_the_servers_call(facade: str, server: ScriptedServer) -> None:
    server.enqueue(CALCULATE, chat_answer("It is 42."))
    chat = openai.OpenAI(base_url=f"{facade}/v1", api_key="unused", max_retries=0)
    chunks = list(chat.chat.completions.create(model="openai/gpt-4o", messages=ASK, stream=True))
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    assert "".join(d.content or "" for d in deltas) == "It is 42."
    assert all(d.tool_calls is None for d in deltas)
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"


def test_a_messages_client_gets_the_final_answer_from_an_anthropic_model(facade: str, server: ScriptedServer) -> None:
    refuse_like_anthropic(server)

    def message(*content: Any, stop: str) -> Any:
        return json_reply({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
                           "content": list(content), "stop_reason": stop, "stop_sequence": None,
                           "usage": {"input_tokens": 12, "output_tokens": 15}})

    server.enqueue(message({"type": "tool_use", "id": "toolu_1", "name": "calculate",
                            "input": {"expression": "6 * 7"}}, stop="tool_use"),
                   message({"type": "text", "text": "42."}, stop="end_turn"))
    client = anthropic.Anthropic(base_url=facade, api_key="unused", max_retries=0)
    with client.messages.stream(model="anthropic/claude-test", max_tokens=100, messages=ASK) as stream:
        final = stream.get_final_message()
    assert [b.type for b in final.content] == ["text"] and final.content[0].text == "42."
    assert final.stop_reason == "end_turn"
    result = server.requests[-1].body["messages"][-1]["content"][0]
    assert (result["type"], result["tool_use_id"], result["content"]) == ("tool_result", "toolu_1", "Result: 42")


def test_a_client_that_declares_tools_is_offered_only_its_own(facade: str, server: ScriptedServer) -> None:
    server.enqueue(chat_answer("ok"))
    chat = openai.OpenAI(base_url=f"{facade}/v1", api_key="unused", max_retries=0)
    mine = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}}}
    chat.chat.completions.create(model="openai/gpt-4o", messages=ASK, tools=[mine])  # type: ignore[list-item]
    assert offered(server.requests[-1].body) == ["lookup"]


def test_the_operator_can_keep_its_tools_off_the_facades(server: ScriptedServer, store: Any) -> None:
    server.enqueue(chat_answer("About 42."))
    with serving(server, store, facade_server_tools=False) as url:
        chat = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        reply = chat.chat.completions.create(model="openai/gpt-4o", messages=ASK)
    assert reply.choices[0].message.content == "About 42."
    assert "tools" not in server.requests[-1].body and len(server.requests) == 1
