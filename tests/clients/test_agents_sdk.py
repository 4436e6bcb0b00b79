"""The OpenAI Agents SDK (``openai-agents``) in its default Responses mode against ``/v1/responses``.

``test_openai_agents.py`` drives the SDK through ``OpenAIChatCompletionsModel``; left alone the
SDK speaks the Responses API instead (``OpenAIResponsesModel``), as Codex does. Here it does:
a client set with ``set_default_openai_client`` and an agent that names only its model, so
nothing but the base URL says it is not talking to OpenAI. The upstream behind the gateway is
a Chat Completions one, so every answer also crosses from one API's shape to the other's.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from ._answers import RATE_LIMITED, Chat, ToolCall, Usage
from ._gateway import Gateway
from ._kit import MODEL, TIMEOUT, error_fields, need
from ._upstream import Upstream

pytestmark = pytest.mark.clients


@pytest.fixture(scope="module")
def agents() -> Any:
    module = need("agents")
    module.set_tracing_disabled(True)  # no traces sent to OpenAI's servers from a test
    return module


@pytest.fixture
def default_client(agents: Any, default_gateway: Gateway) -> Iterator[Any]:
    """The SDK's process-wide client pointed at the gateway, put back afterwards.

    The gateway is the one started with ``--default-provider openai``: the SDK reads a model
    name ``openai/...`` as its own provider prefix and sends the bare ``gpt-4o-mini``.
    """
    openai = need("openai")
    from agents.models import _openai_shared

    before = _openai_shared.get_default_openai_client()
    sdk = openai.AsyncOpenAI(base_url=default_gateway.openai_url, api_key="sk-client-unused", max_retries=0,
                             timeout=TIMEOUT)
    agents.set_default_openai_client(sdk, use_for_tracing=False)
    yield sdk
    _openai_shared.set_default_openai_client(before)


def agent(agents: Any, **kwargs: Any) -> Any:
    return agents.Agent(name="assistant", instructions="Answer briefly.", model=MODEL.partition("/")[2], **kwargs)


def test_the_default_model_is_the_responses_one(agents: Any, default_client: Any, upstream: Upstream) -> None:
    upstream.play(Chat("Hello from upstream.", usage=Usage(14, 37)))
    result = agents.Runner.run_sync(agent(agents), "Say hello.")
    assert result.final_output == "Hello from upstream."
    assert result.raw_responses[0].response_id.startswith("resp_")  # a Responses answer, not a chat one
    usage = result.context_wrapper.usage
    assert (usage.input_tokens, usage.output_tokens, usage.requests) == (14, 37, 1)
    sent = upstream.calls()[0].body["messages"]
    assert [(m["role"], m["content"]) for m in sent] == [("system", "Answer briefly."), ("user", "Say hello.")]


def test_the_agents_function_tool_runs_between_two_model_calls(agents: Any, default_client: Any,
                                                               upstream: Upstream) -> None:
    upstream.play(Chat(tool_calls=(ToolCall("call_a1", "get_weather", '{"city":"Kyoto"}'),)),
                  Chat("It is 18°C in Kyoto."))
    ran: list[str] = []

    @agents.function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        ran.append(city)
        return f"18°C in {city}"

    result = agents.Runner.run_sync(agent(agents, tools=[get_weather]), "Weather in Kyoto?")
    assert ran == ["Kyoto"]
    assert result.final_output == "It is 18°C in Kyoto."
    first, second = upstream.calls()
    assert [t["function"]["name"] for t in first.body["tools"]] == ["get_weather"]
    assert first.body["tools"][0]["function"]["parameters"]["properties"] == {
        "city": {"title": "City", "type": "string"}}
    sent = second.body["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool"]
    call = sent[2]["tool_calls"][0]
    assert (call["id"], call["function"]["name"], json.loads(call["function"]["arguments"])) == (
        "call_a1", "get_weather", {"city": "Kyoto"})
    assert (sent[3]["tool_call_id"], sent[3]["content"]) == ("call_a1", "18°C in Kyoto")


def test_a_streamed_run_with_a_tool(agents: Any, default_client: Any, upstream: Upstream) -> None:
    upstream.play(Chat(tool_calls=(ToolCall("call_s1", "get_weather", '{"city":"Oslo"}'),)),
                  Chat("Oslo is at 4°C.", usage=Usage(9, 5)))

    @agents.function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"4°C in {city}"

    async def run() -> tuple[list[str], Any]:
        result = agents.Runner.run_streamed(agent(agents, tools=[get_weather]), "Weather in Oslo?")
        deltas = [event.data.delta async for event in result.stream_events()
                  if event.type == "raw_response_event" and event.data.type == "response.output_text.delta"]
        return deltas, result

    deltas, result = asyncio.run(run())
    assert "".join(deltas) == "Oslo is at 4°C." and len(deltas) > 1
    assert result.final_output == "Oslo is at 4°C."
    assert upstream.calls()[1].body["messages"][-1]["content"] == "4°C in Oslo"


def test_a_rate_limit_reaches_the_caller_once(agents: Any, default_client: Any, upstream: Upstream) -> None:
    openai = need("openai")
    upstream.play(RATE_LIMITED, RATE_LIMITED, RATE_LIMITED)
    with pytest.raises(openai.RateLimitError) as caught:
        agents.Runner.run_sync(agent(agents), "Say hello.")
    assert error_fields(caught.value.body) == RATE_LIMITED.error
    assert len(upstream.calls()) == 1
