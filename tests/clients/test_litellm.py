"""LiteLLM's ``completion`` against the OpenAI-compatible facade.

LiteLLM reads its own provider prefix first: ``openai/<rest>`` means "an OpenAI-compatible server
at ``api_base``, model ``<rest>``". So naming our ``openai/gpt-4o-mini`` takes
``openai/openai/gpt-4o-mini`` (``test_default_provider.py`` shows the single prefix a gateway
with a default provider allows). LiteLLM classifies errors from their status and body text, so the
upstream's own message and status have to reach it unchanged.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from ._answers import (
    CONTEXT_LENGTH_EXCEEDED,
    RATE_HEADERS,
    RATE_LIMITED,
    SERVER_ERROR,
    Chat,
    ToolCall,
    Usage,
)
from ._gateway import Gateway
from ._kit import HI, MODEL, TIMEOUT, WEATHER_TOOL, need
from ._upstream import Upstream

pytestmark = pytest.mark.clients

LITELLM_MODEL = f"openai/{MODEL}"


@pytest.fixture(scope="module")
def litellm() -> Any:
    # Without it LiteLLM fetches its model price list from the network on import.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    return need("litellm")


def complete(litellm: Any, gateway: Gateway, **kwargs: Any) -> Any:
    kwargs.setdefault("model", LITELLM_MODEL)
    kwargs.setdefault("messages", HI)
    return litellm.completion(api_base=gateway.openai_url, api_key="sk-client-unused", max_retries=0, num_retries=0,
                              timeout=TIMEOUT, **kwargs)


def test_a_completion_with_usage_and_rate_limit_headers(litellm: Any, gateway: Gateway, upstream: Upstream) -> None:
    upstream.play(Chat("Hello from upstream.", usage=Usage(14, 37)))
    reply = complete(litellm, gateway)
    assert reply.choices[0].message.content == "Hello from upstream."
    assert reply.choices[0].finish_reason == "stop"
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.total_tokens) == (14, 37, 51)
    headers = reply._hidden_params["additional_headers"]
    assert headers.get("x-ratelimit-remaining-requests") == RATE_HEADERS["x-ratelimit-remaining-requests"]
    assert upstream.calls()[0].body["model"] == "gpt-4o-mini"


def test_a_stream_with_usage(litellm: Any, gateway: Gateway, upstream: Upstream) -> None:
    upstream.play(Chat("Streaming along nicely.", usage=Usage(9, 5)))
    chunks = list(complete(litellm, gateway, stream=True, stream_options={"include_usage": True}))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Streaming along nicely."
    built = litellm.stream_chunk_builder(chunks)
    assert (built.usage.prompt_tokens, built.usage.completion_tokens) == (9, 5)
    assert built.choices[0].finish_reason == "stop"


def test_tool_calls_with_content_none(litellm: Any, gateway: Gateway, upstream: Upstream) -> None:
    upstream.play(Chat(tool_calls=(ToolCall("call_q1", "get_weather", '{"city":"Oslo"}'),)))
    reply = complete(litellm, gateway, messages=[{"role": "user", "content": "Weather in Oslo?"}],
                     tools=[WEATHER_TOOL])
    message = reply.choices[0].message
    assert reply.choices[0].finish_reason == "tool_calls"
    assert message.content is None
    assert [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls] == [
        ("call_q1", "get_weather", '{"city":"Oslo"}')]


def test_a_rate_limit_is_a_rate_limit_error_at_once(litellm: Any, gateway: Gateway, upstream: Upstream) -> None:
    upstream.play(RATE_LIMITED, RATE_LIMITED, RATE_LIMITED)
    with pytest.raises(litellm.RateLimitError) as caught:
        complete(litellm, gateway)
    assert caught.value.status_code == 429
    assert RATE_LIMITED.error["message"] in str(caught.value)
    assert len(upstream.calls()) == 1


def test_a_context_overflow_is_a_context_window_error(litellm: Any, gateway: Gateway, upstream: Upstream) -> None:
    upstream.play(CONTEXT_LENGTH_EXCEEDED)
    with pytest.raises(litellm.ContextWindowExceededError) as caught:
        complete(litellm, gateway)
    assert caught.value.status_code == 400
    assert len(upstream.calls()) == 1


def test_an_upstream_500_is_an_internal_server_error(litellm: Any, gateway: Gateway, upstream: Upstream) -> None:
    upstream.play(SERVER_ERROR, SERVER_ERROR, SERVER_ERROR)
    with pytest.raises(litellm.InternalServerError) as caught:
        complete(litellm, gateway)
    assert caught.value.status_code == 500
