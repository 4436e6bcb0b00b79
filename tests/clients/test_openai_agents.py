"""The OpenAI Agents SDK (``openai-agents``) over ``OpenAIChatCompletionsModel`` against the facade.

The SDK's runner executes its agent's function tools itself, so a tool call is a round trip
through the gateway; errors reach the caller as the ``openai`` SDK's exceptions.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from ._answers import CONTEXT_LENGTH_EXCEEDED, RATE_LIMITED, Chat, ToolCall, Usage
from ._gateway import Gateway
from ._kit import MODEL, TIMEOUT, error_fields, need
from ._upstream import Upstream

pytestmark = pytest.mark.clients


@pytest.fixture(scope="module")
def agents() -> Any:
    module = need("agents")
    module.set_tracing_disabled(True)  # no traces sent to OpenAI's servers from a test
    return module


def agent(agents: Any, gateway: Gateway, **kwargs: Any) -> Any:
    openai = need("openai")
    sdk = openai.AsyncOpenAI(base_url=gateway.openai_url, api_key="sk-client-unused", max_retries=0,
                             timeout=TIMEOUT)
    model = agents.OpenAIChatCompletionsModel(model=MODEL, openai_client=sdk)
    return agents.Agent(name="assistant", instructions="Answer briefly.", model=model, **kwargs)


def test_a_run_gives_the_text_and_usage(agents: Any, gateway: Gateway, upstream: Upstream) -> None:
    upstream.play(Chat("Hello from upstream.", usage=Usage(14, 37)))
    result = agents.Runner.run_sync(agent(agents, gateway), "Say hello.")
    assert result.final_output == "Hello from upstream."
    usage = result.context_wrapper.usage
    assert (usage.input_tokens, usage.output_tokens, usage.requests) == (14, 37, 1)
    sent = upstream.calls()[0].body["messages"]
    assert [(m["role"], m["content"]) for m in sent] == [("system", "Answer briefly."), ("user", "Say hello.")]


def test_a_streamed_run(agents: Any, gateway: Gateway, upstream: Upstream) -> None:
    upstream.play(Chat("Streaming along nicely.", usage=Usage(9, 5)))

    async def run() -> tuple[list[str], Any]:
        # The SDK asks for usage in a stream only when told to (against the API too).
        settings = agents.ModelSettings(include_usage=True)
        result = agents.Runner.run_streamed(agent(agents, gateway, model_settings=settings), "Say hello.")
        deltas = [event.data.delta async for event in result.stream_events()
                  if event.type == "raw_response_event" and event.data.type == "response.output_text.delta"]
        return deltas, result

    deltas, result = asyncio.run(run())
    assert "".join(deltas) == "Streaming along nicely." and len(deltas) > 1
    assert result.final_output == "Streaming along nicely."
    assert (result.context_wrapper.usage.input_tokens, result.context_wrapper.usage.output_tokens) == (9, 5)
    assert upstream.calls()[0].body["stream_options"] == {"include_usage": True}


def test_the_agents_function_tool_runs_between_two_model_calls(agents: Any, gateway: Gateway,
                                                               upstream: Upstream) -> None:
    upstream.play(Chat(tool_calls=(ToolCall("call_a1", "get_weather", '{"city":"Kyoto"}'),)),
                  Chat("It is 18°C in Kyoto."))

    @agents.function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"18°C in {city}"

    result = agents.Runner.run_sync(agent(agents, gateway, tools=[get_weather]), "Weather in Kyoto?")
    assert result.final_output == "It is 18°C in Kyoto."
    first, second = upstream.calls()
    assert [t["function"]["name"] for t in first.body["tools"]] == ["get_weather"]
    sent = second.body["messages"]
    assert [m["role"] for m in sent][-2:] == ["assistant", "tool"]
    assert (sent[-1]["tool_call_id"], sent[-1]["content"]) == ("call_a1", "18°C in Kyoto")


def test_a_rate_limit_reaches_the_caller_once(agents: Any, gateway: Gateway, upstream: Upstream) -> None:
    openai = need("openai")
    upstream.play(RATE_LIMITED, RATE_LIMITED, RATE_LIMITED)
    with pytest.raises(openai.RateLimitError) as caught:
        agents.Runner.run_sync(agent(agents, gateway), "Say hello.")
    assert error_fields(caught.value.body) == RATE_LIMITED.error
    assert len(upstream.calls()) == 1


def test_a_context_overflow_is_a_bad_request_with_its_code(agents: Any, gateway: Gateway,
                                                           upstream: Upstream) -> None:
    openai = need("openai")
    upstream.play(CONTEXT_LENGTH_EXCEEDED)
    with pytest.raises(openai.BadRequestError) as caught:
        agents.Runner.run_sync(agent(agents, gateway), "Say hello.")
    assert (caught.value.code, caught.value.param) == ("context_length_exceeded", "messages")
