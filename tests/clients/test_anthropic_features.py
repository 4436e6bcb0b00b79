"""The ``anthropic`` SDK's features through the Messages facade to an Anthropic model, and the
clients built on them: langchain-anthropic's structured output, LiteLLM's thinking blocks.

The scripted upstream checks each Messages body as the API does (``_upstream``): a thinking
block sent back must carry the signature the upstream issued for that very text, a
``cache_control`` must have the API's shape, a tool choice must be in Anthropic's shape.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from ._gateway import Gateway
from ._kit import TIMEOUT, anthropic_client, need
from ._messages_answers import Message, Thinking, ToolUse
from ._upstream import Upstream, counted_tokens

pytestmark = pytest.mark.clients

CLAUDE = "anthropic/claude-sonnet-4-5"
CACHED = {"type": "ephemeral"}
SYSTEM = [{"type": "text", "text": "You are a careful assistant."},
          {"type": "text", "text": "Reference: " + "a long manual. " * 40, "cache_control": CACHED}]
WEATHER = {"name": "get_weather", "description": "The weather in a city.",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
THOUGHT = Thinking("The user wants Oslo's weather; I should call the tool.", "EqQBCkYIBxgCKkBsig-1")


def test_thinking_with_its_signature_round_trips_a_tool_loop(gateway: Gateway,
                                                             upstream: Upstream) -> None:
    upstream.play(Message([THOUGHT, ToolUse("toolu_01", "get_weather", {"city": "Oslo"})]),
                  Message(["It is 12 degrees in Oslo."]))
    sdk = anthropic_client(gateway)
    ask = [{"role": "user", "content": "Weather in Oslo?"}]
    thinking = {"type": "enabled", "budget_tokens": 1024}
    with sdk.messages.stream(model=CLAUDE, max_tokens=2048, thinking=thinking, tools=[WEATHER],
                             messages=ask) as stream:
        first = stream.get_final_message()
    assert [b.type for b in first.content] == ["thinking", "tool_use"]
    assert (first.content[0].thinking, first.content[0].signature) == (THOUGHT.thinking, THOUGHT.signature)
    turn = [*ask, {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "12 C"}]}]
    second = sdk.messages.create(model=CLAUDE, max_tokens=2048, thinking=thinking, tools=[WEATHER], messages=turn)
    assert second.content[0].text == "It is 12 degrees in Oslo."
    sent = upstream.calls("anthropic")[-1].body["messages"][1]["content"]
    assert sent[0] == {"type": "thinking", "thinking": THOUGHT.thinking, "signature": THOUGHT.signature}


def test_prompt_caching_passes_cache_control_and_counts_the_cache(gateway: Gateway,
                                                                  upstream: Upstream) -> None:
    upstream.play(Message(["Noted."], cache_write=1800), Message(["Noted again."], cache_read=1800))
    sdk = anthropic_client(gateway)
    tools = [{**WEATHER, "cache_control": CACHED}]
    ask = [{"role": "user", "content": [{"type": "text", "text": "Summarise.", "cache_control": CACHED}]}]
    first = sdk.messages.create(model=CLAUDE, max_tokens=100, system=SYSTEM, tools=tools, messages=ask)
    assert (first.usage.cache_creation_input_tokens, first.usage.cache_read_input_tokens) == (1800, 0)
    with sdk.messages.stream(model=CLAUDE, max_tokens=100, system=SYSTEM, tools=tools, messages=ask) as stream:
        second = stream.get_final_message()
    assert second.usage.cache_read_input_tokens == 1800
    for call in upstream.calls("anthropic"):
        assert (call.body["system"], call.body["tools"], call.body["messages"]) == (SYSTEM, tools, ask)


def test_an_image_and_a_stop_sequence(gateway: Gateway, upstream: Upstream) -> None:
    upstream.play(Message(["A single pixel"], stop_reason="stop_sequence", stop_sequence="."))
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    content = [image, {"type": "text", "text": "Describe it in one sentence."}]
    reply = anthropic_client(gateway).messages.create(model=CLAUDE, max_tokens=100, stop_sequences=["."],
                                                       messages=[{"role": "user", "content": content}])
    assert (reply.stop_reason, reply.stop_sequence) == ("stop_sequence", ".")
    assert upstream.calls("anthropic")[0].body["messages"] == [{"role": "user", "content": content}]


def test_count_tokens_is_the_upstreams_count(gateway: Gateway, upstream: Upstream) -> None:
    messages = [{"role": "user", "content": [{"type": "text", "text": "How long is this?", "cache_control": CACHED}]}]
    counted = anthropic_client(gateway).messages.count_tokens(model=CLAUDE, system=SYSTEM, messages=messages,
                                                               tools=[WEATHER])
    [sent] = [r for r in upstream.received if r.path.endswith("/count_tokens")]
    assert sent.body == {"model": "claude-sonnet-4-5", "system": SYSTEM, "messages": messages, "tools": [WEATHER]}
    assert counted.input_tokens == counted_tokens({"system": SYSTEM, "messages": messages, "tools": [WEATHER]})


def test_langchain_anthropic_structured_output(gateway: Gateway, upstream: Upstream) -> None:
    langchain_anthropic = need("langchain_anthropic")
    pydantic = need("pydantic")

    class Person(pydantic.BaseModel):  # type: ignore[name-defined,misc]
        """A person the text names."""

        name: str
        age: int

    upstream.play(Message([ToolUse("toolu_02", "Person", {"name": "Ada", "age": 36})]))
    model = langchain_anthropic.ChatAnthropic(model=CLAUDE, base_url=gateway.url, api_key="sk-ant-client-unused",
                                              max_retries=0, timeout=TIMEOUT, max_tokens=200)
    found = model.with_structured_output(Person).invoke("Ada is 36.")
    assert found == Person(name="Ada", age=36)
    sent = upstream.calls("anthropic")[0].body
    assert sent["tool_choice"] == {"type": "tool", "name": "Person"}
    assert [t["name"] for t in sent["tools"]] == ["Person"]


def test_litellm_thinking_blocks_go_back_signed(gateway: Gateway, upstream: Upstream) -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    litellm = need("litellm")
    upstream.play(Message([THOUGHT, ToolUse("toolu_03", "get_weather", {"city": "Oslo"})]),
                  Message(["12 degrees."]))
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": WEATHER["input_schema"]}}
    ask = [{"role": "user", "content": "Weather in Oslo?"}]
    options = {"model": f"anthropic/{CLAUDE}", "api_base": gateway.url, "api_key": "sk-ant-client-unused",
               "max_retries": 0, "num_retries": 0, "timeout": TIMEOUT, "tools": [tool],
               "thinking": {"type": "enabled", "budget_tokens": 1024}, "max_tokens": 2048}
    first = litellm.completion(messages=ask, **options)
    message = first.choices[0].message
    assert message.thinking_blocks[0]["signature"] == THOUGHT.signature
    assert message.reasoning_content == THOUGHT.thinking
    call = message.tool_calls[0]
    turn = [*ask, message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": "12 C"}]
    second = litellm.completion(messages=turn, **options)
    assert second.choices[0].message.content == "12 degrees."
    sent = upstream.calls("anthropic")[-1].body["messages"][1]["content"]
    assert sent[0] == {"type": "thinking", "thinking": THOUGHT.thinking, "signature": THOUGHT.signature}
