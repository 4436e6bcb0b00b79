"""The official ``openai`` SDK against the OpenAI-compatible facade.

The SDK is what most other clients wrap, so this file checks the facade's answers most closely:
the raw bodies and headers as well as what the SDK makes of them.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from ._answers import (
    CONTEXT_LENGTH_EXCEEDED,
    INSUFFICIENT_QUOTA,
    PARALLEL_TOOL_CALLS,
    RATE_HEADERS,
    RATE_LIMITED,
    SERVER_ERROR,
    Chat,
    ToolCall,
    Usage,
)
from ._gateway import Gateway
from ._kit import HI, MODEL, TIMEOUT, WEATHER_TOOL, error_fields, need
from ._messages_answers import Message
from ._upstream import Upstream

pytestmark = pytest.mark.clients

WEATHER_CALL = ToolCall("call_Y6qJ7ofLgOrBnMD5WbVAeiRV", "get_weather", '{"city":"Edinburgh"}')


@pytest.fixture(scope="module")
def openai() -> Any:
    return need("openai")


def client(openai: Any, gateway: Gateway, max_retries: int = 0) -> Any:
    return openai.OpenAI(base_url=gateway.openai_url, api_key="sk-client-unused", max_retries=max_retries,
                         timeout=TIMEOUT)


def test_a_completion_carries_the_upstreams_text_usage_and_rate_limit_headers(openai: Any, gateway: Gateway,
                                                                              upstream: Upstream) -> None:
    upstream.play(Chat("Hello! How can I help?", usage=Usage(14, 37)))
    raw = client(openai, gateway).chat.completions.with_raw_response.create(model=MODEL, messages=HI)
    reply = raw.parse()
    assert reply.object == "chat.completion" and len(reply.choices) == 1
    choice = reply.choices[0]
    assert (choice.message.role, choice.message.content, choice.finish_reason) == (
        "assistant", "Hello! How can I help?", "stop")
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.total_tokens) == (14, 37, 51)
    # The API always sends `refusal` (null when the model did not refuse).
    message = raw.http_response.json()["choices"][0]["message"]
    assert "refusal" in message and message["refusal"] is None
    # OpenAI's rate-limit headers reach the client, so it can pace itself as it would against the API.
    assert {name: raw.headers.get(name) for name in RATE_HEADERS} == RATE_HEADERS
    [call] = upstream.calls()
    assert call.body["model"] == "gpt-4o-mini"
    assert [m["content"] for m in call.body["messages"] if m["role"] == "user"] == ["Say hello."]


def test_a_stream_ends_with_the_usage_chunk_it_asked_for(openai: Any, gateway: Gateway, upstream: Upstream) -> None:
    upstream.play(Chat("Hello there, friend.", usage=Usage(9, 5)))
    chunks = list(client(openai, gateway).chat.completions.create(
        model=MODEL, messages=HI, stream=True, stream_options={"include_usage": True}))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Hello there, friend."
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["stop"]
    last = chunks[-1]
    assert last.choices == [] and (last.usage.prompt_tokens, last.usage.completion_tokens) == (9, 5)
    assert all(c.usage is None for c in chunks[:-1])
    assert all(c.object == "chat.completion.chunk" for c in chunks)


def test_tool_calls_come_back_with_content_null(openai: Any, gateway: Gateway, upstream: Upstream) -> None:
    upstream.play(Chat(tool_calls=(WEATHER_CALL,)))
    raw = client(openai, gateway).chat.completions.with_raw_response.create(
        model=MODEL, messages=[{"role": "user", "content": "Weather in Edinburgh?"}], tools=[WEATHER_TOOL])
    message = raw.http_response.json()["choices"][0]["message"]
    assert message["content"] is None, "the API sends content null beside tool_calls, not an empty string"
    assert "refusal" in message and message["refusal"] is None
    choice = raw.parse().choices[0]
    assert choice.finish_reason == "tool_calls"
    assert [(c.id, c.type, c.function.name, c.function.arguments) for c in choice.message.tool_calls] == [
        ("call_Y6qJ7ofLgOrBnMD5WbVAeiRV", "function", "get_weather", '{"city":"Edinburgh"}')]
    [call] = upstream.calls()
    assert [t["function"]["name"] for t in call.body["tools"]] == ["get_weather"]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_recorded_parallel_tool_calls_reach_the_client_whole(openai: Any, gateway: Gateway, upstream: Upstream,
                                                            stream: bool) -> None:
    """Bodies gpt-4o sent, byte for byte: two calls, their arguments split mid-token when streamed."""
    upstream.play(PARALLEL_TOOL_CALLS)
    sdk = client(openai, gateway)
    question = [{"role": "user", "content": "What's the weather like in Edinburgh? What's the price of AAPL?"}]
    tools = [{"type": "function", "function": {"name": "GetWeatherArgs", "parameters": {"type": "object"}}},
             {"type": "function", "function": {"name": "get_stock_price", "parameters": {"type": "object"}}}]
    if stream:
        with sdk.chat.completions.stream(model=MODEL, messages=question, tools=tools) as events:
            final = events.get_final_completion()
    else:
        final = sdk.chat.completions.create(model=MODEL, messages=question, tools=tools)
    choice = final.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    assert [(c.function.name, json.loads(c.function.arguments)) for c in choice.message.tool_calls] == [
        ("GetWeatherArgs", {"city": "Edinburgh", "country": "GB", "units": "c"}),
        ("get_stock_price", {"ticker": "AAPL", "exchange": "NASDAQ"})]
    assert all(c.id.startswith("call_") for c in choice.message.tool_calls)


def test_a_tool_round_trip_sends_the_calls_and_results_upstream(openai: Any, gateway: Gateway,
                                                                upstream: Upstream) -> None:
    upstream.play(Chat(tool_calls=(WEATHER_CALL,)), Chat("It is 12°C and raining in Edinburgh."))
    sdk = client(openai, gateway)
    history: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Edinburgh?"}]
    first = sdk.chat.completions.create(model=MODEL, messages=history, tools=[WEATHER_TOOL]).choices[0].message
    history.append(first.model_dump(exclude_none=True))
    history.append({"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": "12°C, rain"})
    second = sdk.chat.completions.create(model=MODEL, messages=history, tools=[WEATHER_TOOL])
    assert second.choices[0].message.content == "It is 12°C and raining in Edinburgh."
    sent = upstream.calls()[1].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool"]
    assert sent[1]["tool_calls"] == [{"id": "call_Y6qJ7ofLgOrBnMD5WbVAeiRV", "type": "function",
                                      "function": {"name": "get_weather", "arguments": '{"city":"Edinburgh"}'}}]
    assert (sent[2]["tool_call_id"], sent[2]["content"]) == ("call_Y6qJ7ofLgOrBnMD5WbVAeiRV", "12°C, rain")


def test_structured_output_with_a_json_schema(openai: Any, gateway: Gateway, upstream: Upstream) -> None:
    pydantic = need("pydantic")

    class Place(pydantic.BaseModel):
        city: str
        country: str

    upstream.play(Chat('{"city":"Edinburgh","country":"GB"}'))
    reply = client(openai, gateway).chat.completions.parse(model=MODEL, messages=HI, response_format=Place)
    assert reply.choices[0].message.parsed == Place(city="Edinburgh", country="GB")
    sent = upstream.calls()[0].body["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["name"] == "Place"


def test_n_choices_come_back_as_n_choices(openai: Any, gateway: Gateway, upstream: Upstream) -> None:
    # Queued twice: the gateway may ask upstream for both choices at once or one at a time.
    answer = Chat("Paris.", alternatives=("Paris, France.",))
    upstream.play(answer, answer)
    reply = client(openai, gateway).chat.completions.create(model=MODEL, messages=HI, n=2)
    assert [c.index for c in reply.choices] == [0, 1]
    assert all(c.message.content and c.finish_reason == "stop" for c in reply.choices)


def test_a_rate_limit_is_passed_on_at_once_with_the_upstreams_error_and_headers(openai: Any, gateway: Gateway,
                                                                               upstream: Upstream) -> None:
    """The upstream wants 20 s: the client, not the gateway, decides whether to wait."""
    upstream.play(RATE_LIMITED, RATE_LIMITED, RATE_LIMITED)
    with pytest.raises(openai.RateLimitError) as caught:
        client(openai, gateway).chat.completions.create(model=MODEL, messages=HI)
    error = caught.value
    assert error.status_code == 429
    assert error_fields(error.body) == RATE_LIMITED.error
    assert (error.code, error.type, error.param) == ("rate_limit_exceeded", "tokens", None)
    headers = error.response.headers
    assert headers.get("retry-after") == "20"
    assert {name: headers.get(name) for name in RATE_HEADERS} == {name: RATE_LIMITED.headers[name]
                                                                   for name in RATE_HEADERS}
    assert len(upstream.calls()) == 1, "one client attempt, one upstream request"


def test_an_exhausted_quota_costs_one_upstream_request_per_client_attempt(openai: Any, gateway: Gateway,
                                                                          upstream: Upstream) -> None:
    """The SDK retries a 429 itself (here once); a gateway that retried too would multiply the attempts."""
    upstream.play(*[INSUFFICIENT_QUOTA] * 9)
    with pytest.raises(openai.RateLimitError) as caught:
        client(openai, gateway, max_retries=1).chat.completions.create(model=MODEL, messages=HI)
    assert (caught.value.code, caught.value.type) == ("insufficient_quota", "insufficient_quota")
    assert error_fields(caught.value.body) == INSUFFICIENT_QUOTA.error
    assert len(upstream.calls()) == 2


def test_a_context_overflow_is_a_bad_request_naming_code_and_param(openai: Any, gateway: Gateway,
                                                                   upstream: Upstream) -> None:
    upstream.play(CONTEXT_LENGTH_EXCEEDED)
    with pytest.raises(openai.BadRequestError) as caught:
        client(openai, gateway).chat.completions.create(model=MODEL, messages=HI)
    error = caught.value
    assert (error.status_code, error.code, error.param, error.type) == (
        400, "context_length_exceeded", "messages", "invalid_request_error")
    assert error_fields(error.body) == CONTEXT_LENGTH_EXCEEDED.error
    assert len(upstream.calls()) == 1


def test_an_upstream_500_is_a_500_with_the_upstreams_error(openai: Any, gateway: Gateway,
                                                           upstream: Upstream) -> None:
    """The SDK retries a 500 by itself (twice by default), as it does a 429: the gateway must not as well."""
    upstream.play(SERVER_ERROR, SERVER_ERROR, SERVER_ERROR)
    with pytest.raises(openai.InternalServerError) as caught:
        client(openai, gateway).chat.completions.create(model=MODEL, messages=HI)
    assert caught.value.status_code == 500
    assert error_fields(caught.value.body) == SERVER_ERROR.error
    assert len(upstream.calls()) == 1, "one client attempt, one upstream request"


def test_models_are_listed_and_retrieved_by_their_provider_prefixed_ids(openai: Any, gateway: Gateway) -> None:
    sdk = client(openai, gateway)
    listed = list(sdk.models.list())
    ids = [m.id for m in listed]
    assert {"openai/gpt-4o-mini", "openai/gpt-4o", "anthropic/claude-sonnet-4-5-20250929"} <= set(ids)
    assert all(m.object == "model" for m in listed)
    # The SDK sends the id's slash percent-encoded: /v1/models/openai%2Fgpt-4o-mini
    model = sdk.models.retrieve("openai/gpt-4o-mini")
    assert (model.id, model.object) == ("openai/gpt-4o-mini", "model")
    with pytest.raises(openai.NotFoundError) as caught:
        sdk.models.retrieve("openai/no-such-model")
    assert caught.value.code == "model_not_found"


def test_usage_details_the_fingerprint_and_the_tier_come_back(openai: Any, gateway: Gateway,
                                                              upstream: Upstream) -> None:
    usage = Usage(2006, 300, cached_tokens=1920, reasoning_tokens=256)
    upstream.play(Chat("Cached.", usage=usage, service_tier="default"),
                  Chat("Cached.", usage=usage, service_tier="default"))
    sdk = client(openai, gateway)
    reply = sdk.chat.completions.create(model=MODEL, messages=HI)
    assert reply.usage.model_dump(exclude_none=True) == usage.openai()
    assert (reply.system_fingerprint, reply.service_tier) == ("fp_b40fb1c6fb", "default")
    chunks = list(sdk.chat.completions.create(model=MODEL, messages=HI, stream=True,
                                              stream_options={"include_usage": True}))
    assert chunks[-1].usage.model_dump(exclude_none=True) == usage.openai()
    assert ("fp_b40fb1c6fb", "default") in {(c.system_fingerprint, c.service_tier) for c in chunks}


def test_an_image_reaches_an_anthropic_model_as_a_base64_block(openai: Any, gateway: Gateway,
                                                               upstream: Upstream) -> None:
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    upstream.play(Message(["A pixel."], cache_read=640))
    reply = client(openai, gateway).chat.completions.create(model="anthropic/claude-sonnet-4-5", messages=[
        {"role": "user", "content": [{"type": "text", "text": "What is it?"},
                                     {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}}]}])
    assert reply.choices[0].message.content == "A pixel."
    assert reply.usage.prompt_tokens_details.cached_tokens == 640
    [sent] = upstream.calls("anthropic")
    assert sent.body["messages"][0]["content"][1] == {
        "type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}
