"""What reaches an Anthropic upstream, and comes back, through the server's facades.

The upstream is a scripted loopback server that checks each body as Anthropic's API
does (``providers._anthropic_api``): a tool choice in OpenAI's shape or a thinking
block without its signature is a 400 there, so a shape bug fails the test. Clients are
the official ``anthropic`` and ``openai`` SDKs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from agent_core.server import create_app
from providers._anthropic_api import refuse_like_anthropic
from providers._server import ScriptedServer
from providers._wire import an_message

from ._live import running

HI = [{"role": "user", "content": "hi"}]
TOOLS = [{"name": "add", "description": "a + b", "input_schema": {"type": "object", "properties": {}}},
         {"name": "mul", "input_schema": {"type": "object", "properties": {}}}]
CHAT_TOOLS = [{"type": "function", "function": {"name": t["name"], "parameters": t["input_schema"]}} for t in TOOLS]
MODEL = "anthropic/claude-test"


@pytest.fixture
def facade(server: ScriptedServer, store: Any) -> Iterator[str]:
    refuse_like_anthropic(server)
    operator = {"base_url": f"{server.url}/v1", "api_key": "sk-upstream-0123456789", "max_retries": 0}
    with running(create_app(store=store, config=operator)) as url:
        yield url


@pytest.fixture
def client(facade: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=facade, api_key="unused", max_retries=0)


@pytest.fixture
def chat(facade: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{facade}/v1", api_key="unused", max_retries=0)


@pytest.mark.parametrize(("sent", "upstream"), [
    ({"type": "tool", "name": "mul"}, {"type": "tool", "name": "mul"}),
    ({"type": "any"}, {"type": "any"}),
    ({"type": "auto"}, {"type": "auto"}),
    ({"type": "none"}, {"type": "none"}),
    ({"type": "any", "disable_parallel_tool_use": True}, {"type": "any", "disable_parallel_tool_use": True}),
    ({"type": "tool", "name": "add", "disable_parallel_tool_use": True},
     {"type": "tool", "name": "add", "disable_parallel_tool_use": True}),
])
def test_a_messages_tool_choice_reaches_anthropic_in_its_own_shape(client: anthropic.Anthropic, server: ScriptedServer,
                                                                   sent: Any, upstream: Any) -> None:
    server.enqueue(an_message({"type": "text", "text": "ok"}))
    reply = client.messages.create(model=MODEL, max_tokens=50, messages=HI, tools=TOOLS, tool_choice=sent)
    assert reply.content[0].text == "ok"
    assert server.requests[-1].body["tool_choice"] == upstream


@pytest.mark.parametrize(("sent", "parallel", "upstream"), [
    ("required", None, {"type": "any"}),
    ({"type": "function", "function": {"name": "add"}}, None, {"type": "tool", "name": "add"}),
    ("auto", None, {"type": "auto"}),
    ("none", None, {"type": "none"}),
    ("required", False, {"type": "any", "disable_parallel_tool_use": True}),
    (None, False, {"type": "auto", "disable_parallel_tool_use": True}),
])
def test_a_chat_tool_choice_reaches_anthropic_in_its_shape(chat: openai.OpenAI, server: ScriptedServer,
                                                           sent: Any, parallel: Any, upstream: Any) -> None:
    server.enqueue(an_message({"type": "text", "text": "ok"}))
    extra: dict[str, Any] = {} if sent is None else {"tool_choice": sent}
    if parallel is not None:
        extra["parallel_tool_calls"] = parallel
    reply = chat.chat.completions.create(model=MODEL, messages=HI, tools=CHAT_TOOLS, **extra)  # type: ignore[call-overload]
    assert reply.choices[0].message.content == "ok"
    assert server.requests[-1].body["tool_choice"] == upstream


def test_the_scripted_upstream_refuses_an_openai_shaped_choice(server: ScriptedServer) -> None:
    """The check the tests above rely on: a shape bug would be a 400, not a pass."""
    import httpx

    refuse_like_anthropic(server)
    body = {"model": "m", "max_tokens": 5, "messages": HI, "tools": TOOLS,
            "tool_choice": {"type": "function", "function": {"name": "add"}}}
    r = httpx.post(f"{server.url}/v1/messages", json=body)
    assert r.status_code == 400 and "tool_choice" in r.json()["error"]["message"]
    r = httpx.post(f"{server.url}/v1/messages", json={**body, "tool_choice": {"type": "tool", "name": "required"}})
    assert r.status_code == 400 and "not found" in r.json()["error"]["message"]
