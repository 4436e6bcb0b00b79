"""pydantic-ai's ``Agent`` over ``OpenAIChatModel`` against the OpenAI-compatible facade.

pydantic-ai runs its agent's tools itself, so a tool call here is a full round trip through the
gateway; and it sorts provider errors finely (rate limit vs exhausted quota vs context window, by
OpenAI's ``code``), which is what a gateway's error bodies are for.
"""

from __future__ import annotations

from typing import Any

import pytest

from ._answers import (
    CONTEXT_LENGTH_EXCEEDED,
    INSUFFICIENT_QUOTA,
    RATE_HEADERS,
    RATE_LIMITED,
    SERVER_ERROR,
    Chat,
    ToolCall,
    Usage,
)
from ._gateway import Gateway
from ._kit import MODEL, TIMEOUT, need
from ._upstream import Upstream

pytestmark = pytest.mark.clients


@pytest.fixture(scope="module")
def pai() -> Any:
    """pydantic_ai, with the pieces the tests use as attributes (imported once the package is known to be there)."""
    module = need("pydantic_ai")
    need("pydantic_ai.models.openai")
    need("pydantic_ai.providers.openai")
    return module


def agent(pai: Any, gateway: Gateway, **kwargs: Any) -> Any:
    openai = need("openai")
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    sdk = openai.AsyncOpenAI(base_url=gateway.openai_url, api_key="sk-client-unused", max_retries=0,
                             timeout=TIMEOUT)
    return pai.Agent(OpenAIChatModel(MODEL, provider=OpenAIProvider(openai_client=sdk)), **kwargs)


def test_a_run_gives_the_text_and_usage(pai: Any, gateway: Gateway, upstream: Upstream) -> None:
    upstream.play(Chat("Hello from upstream.", usage=Usage(14, 37)))
    result = agent(pai, gateway).run_sync("Say hello.")
    assert result.output == "Hello from upstream."
    usage = result.usage
    assert (usage.input_tokens, usage.output_tokens, usage.requests) == (14, 37, 1)


def test_a_streamed_run(pai: Any, gateway: Gateway, upstream: Upstream) -> None:
    upstream.play(Chat("Streaming along nicely.", usage=Usage(9, 5)))
    result = agent(pai, gateway).run_stream_sync("Say hello.")
    pieces = list(result.stream_text(delta=True))
    assert "".join(pieces) == "Streaming along nicely."
    assert (result.usage.input_tokens, result.usage.output_tokens) == (9, 5)
    assert upstream.calls()[0].body["stream"] is True


def test_the_agents_tool_runs_between_two_model_calls(pai: Any, gateway: Gateway, upstream: Upstream) -> None:
    upstream.play(Chat(tool_calls=(ToolCall("call_p1", "get_weather", '{"city":"Rome"}'),)),
                  Chat("It is 21°C in Rome."))
    weather = agent(pai, gateway)

    @weather.tool_plain
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"21°C in {city}"

    assert weather.run_sync("Weather in Rome?").output == "It is 21°C in Rome."
    first, second = upstream.calls()
    assert [t["function"]["name"] for t in first.body["tools"]] == ["get_weather"]
    sent = second.body["messages"]
    assert [m["role"] for m in sent][-2:] == ["assistant", "tool"]
    assert sent[-2]["tool_calls"][0]["id"] == "call_p1"
    assert (sent[-1]["tool_call_id"], sent[-1]["content"]) == ("call_p1", "21°C in Rome")


def test_structured_output(pai: Any, gateway: Gateway, upstream: Upstream) -> None:
    pydantic = need("pydantic")

    class Place(pydantic.BaseModel):
        city: str
        country: str

    upstream.play(Chat(tool_calls=(ToolCall("call_p2", "final_result", '{"city":"Rome","country":"IT"}'),)))
    assert agent(pai, gateway, output_type=Place).run_sync("Where is the Colosseum?").output == Place(
        city="Rome", country="IT")


def test_a_rate_limit_is_a_rate_limit_error_with_the_wait_and_headers(pai: Any, gateway: Gateway,
                                                                      upstream: Upstream) -> None:
    exceptions = need("pydantic_ai.exceptions")
    upstream.play(RATE_LIMITED, RATE_LIMITED, RATE_LIMITED)
    with pytest.raises(exceptions.ModelRateLimitError) as caught:
        agent(pai, gateway).run_sync("Say hello.")
    error = caught.value
    assert (error.status_code, error.provider_error_code, error.retry_after) == (429, "rate_limit_exceeded", 20)
    assert {name: error.headers.get(name) for name in RATE_HEADERS} == {name: RATE_LIMITED.headers[name]
                                                                        for name in RATE_HEADERS}
    assert len(upstream.calls()) == 1


def test_an_exhausted_quota_is_not_a_rate_limit(pai: Any, gateway: Gateway, upstream: Upstream) -> None:
    """pydantic-ai tells the two 429s apart by OpenAI's code: waiting cures one, not the other."""
    exceptions = need("pydantic_ai.exceptions")
    upstream.play(*[INSUFFICIENT_QUOTA] * 3)
    with pytest.raises(exceptions.ModelQuotaExceededError) as caught:
        agent(pai, gateway).run_sync("Say hello.")
    assert caught.value.provider_error_code == "insufficient_quota"
    assert len(upstream.calls()) == 1


def test_a_context_overflow_is_a_context_window_error(pai: Any, gateway: Gateway, upstream: Upstream) -> None:
    exceptions = need("pydantic_ai.exceptions")
    upstream.play(CONTEXT_LENGTH_EXCEEDED)
    with pytest.raises(exceptions.ModelContextWindowExceededError) as caught:
        agent(pai, gateway).run_sync("Say hello.")
    assert caught.value.status_code == 400
    assert len(upstream.calls()) == 1


def test_an_upstream_500_is_a_server_error(pai: Any, gateway: Gateway, upstream: Upstream) -> None:
    exceptions = need("pydantic_ai.exceptions")
    upstream.play(SERVER_ERROR, SERVER_ERROR, SERVER_ERROR)
    with pytest.raises(exceptions.ModelServerError) as caught:
        agent(pai, gateway).run_sync("Say hello.")
    assert caught.value.status_code == 500
