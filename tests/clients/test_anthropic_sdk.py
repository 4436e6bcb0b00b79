"""The official ``anthropic`` SDK against the Messages facade (``POST /v1/messages``).

Two upstreams behind one facade: an Anthropic model (``anthropic/...``, the scripted Messages
API) and an OpenAI one (``openai/...``, the scripted Chat Completions API). Either way the client
must get Anthropic's shapes: content blocks, stop reasons, usage, and errors as
``{"type": "error", "error": {"type", "message"}}`` with the status and the upstream's own words.
"""

from __future__ import annotations

from typing import Any

import pytest

from ._answers import (
    ANTHROPIC_OVERLOADED,
    ANTHROPIC_PROMPT_TOO_LONG,
    ANTHROPIC_RATE_LIMITED,
    CONTEXT_LENGTH_EXCEEDED,
    RATE_LIMITED,
    Chat,
    ToolCall,
    Usage,
)
from ._gateway import Gateway
from ._kit import MODEL, anthropic_client, need
from ._messages_answers import Message, ToolUse
from ._upstream import Upstream

pytestmark = pytest.mark.clients

CLAUDE = "anthropic/claude-sonnet-4-5"
HELLO = [{"role": "user", "content": "Hello, how are you?"}]
WEATHER = {"name": "get_weather", "description": "The weather in a city.",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}


@pytest.fixture(scope="module")
def anthropic() -> Any:
    return need("anthropic")


def client(anthropic: Any, gateway: Gateway) -> Any:
    return anthropic_client(gateway)


def test_an_anthropic_model_answers_with_text_and_usage(anthropic: Any, gateway: Gateway,
                                                        upstream: Upstream) -> None:
    upstream.play(Message(["Hello! I'm doing well, thanks for asking."], input_tokens=12, output_tokens=29))
    reply = client(anthropic, gateway).messages.create(model=CLAUDE, max_tokens=100, messages=HELLO)
    assert (reply.type, reply.role, reply.stop_reason) == ("message", "assistant", "end_turn")
    assert [(b.type, b.text) for b in reply.content] == [("text", "Hello! I'm doing well, thanks for asking.")]
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (12, 29)
    [call] = upstream.calls("anthropic")
    assert (call.body["model"], call.body["max_tokens"]) == ("claude-sonnet-4-5", 100)


def test_an_anthropic_model_streams(anthropic: Any, gateway: Gateway, upstream: Upstream) -> None:
    upstream.play(Message(["Streaming along nicely."], input_tokens=12, output_tokens=6))
    with client(anthropic, gateway).messages.stream(model=CLAUDE, max_tokens=100, messages=HELLO) as stream:
        pieces = list(stream.text_stream)
        final = stream.get_final_message()
    assert "".join(pieces) == "Streaming along nicely." and len(pieces) > 1
    assert final.stop_reason == "end_turn"
    assert (final.usage.input_tokens, final.usage.output_tokens) == (12, 6)


def test_an_anthropic_tool_use_streams_to_the_client(anthropic: Any, gateway: Gateway, upstream: Upstream) -> None:
    upstream.play(Message(["Let me check.", ToolUse("toolu_01A", "get_weather", {"city": "Oslo"})]))
    with client(anthropic, gateway).messages.stream(model=CLAUDE, max_tokens=100, messages=HELLO,
                                                    tools=[WEATHER]) as stream:
        final = stream.get_final_message()
    assert final.stop_reason == "tool_use"
    assert [b.type for b in final.content] == ["text", "tool_use"]
    assert (final.content[1].id, final.content[1].name, final.content[1].input) == ("toolu_01A", "get_weather",
                                                                                    {"city": "Oslo"})


def test_an_openai_model_answers_an_anthropic_client(anthropic: Any, gateway: Gateway, upstream: Upstream) -> None:
    upstream.play(Chat("Hello from an OpenAI model.", usage=Usage(14, 37)))
    reply = client(anthropic, gateway).messages.create(model=MODEL, max_tokens=100, messages=HELLO)
    assert [(b.type, b.text) for b in reply.content] == [("text", "Hello from an OpenAI model.")]
    assert reply.stop_reason == "end_turn"
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (14, 37)
    assert upstream.calls()[0].body["model"] == "gpt-4o-mini"


def test_an_openai_tool_call_is_a_tool_use_block(anthropic: Any, gateway: Gateway, upstream: Upstream) -> None:
    upstream.play(Chat(tool_calls=(ToolCall("call_x1", "get_weather", '{"city":"Oslo"}'),)))
    reply = client(anthropic, gateway).messages.create(model=MODEL, max_tokens=100, messages=HELLO,
                                                       tools=[WEATHER])
    assert reply.stop_reason == "tool_use"
    assert [(b.type, b.id, b.name, b.input) for b in reply.content] == [
        ("tool_use", "call_x1", "get_weather", {"city": "Oslo"})]


def test_an_anthropic_rate_limit_keeps_its_type_message_and_wait(anthropic: Any, gateway: Gateway,
                                                                 upstream: Upstream) -> None:
    upstream.play(ANTHROPIC_RATE_LIMITED, ANTHROPIC_RATE_LIMITED, ANTHROPIC_RATE_LIMITED)
    with pytest.raises(anthropic.RateLimitError) as caught:
        client(anthropic, gateway).messages.create(model=CLAUDE, max_tokens=100, messages=HELLO)
    body = caught.value.body
    assert body["type"] == "error" and body["error"] == ANTHROPIC_RATE_LIMITED.error
    assert caught.value.response.headers.get("retry-after") == "20"
    assert len(upstream.calls("anthropic")) == 1


def test_an_openai_rate_limit_is_anthropics_rate_limit_error(anthropic: Any, gateway: Gateway,
                                                             upstream: Upstream) -> None:
    upstream.play(RATE_LIMITED, RATE_LIMITED, RATE_LIMITED)
    with pytest.raises(anthropic.RateLimitError) as caught:
        client(anthropic, gateway).messages.create(model=MODEL, max_tokens=100, messages=HELLO)
    error = caught.value.body["error"]
    assert (error["type"], error["message"]) == ("rate_limit_error", RATE_LIMITED.error["message"])
    assert caught.value.response.headers.get("retry-after") == "20"
    assert len(upstream.calls()) == 1


@pytest.mark.parametrize("model, answer", [(MODEL, CONTEXT_LENGTH_EXCEEDED), (CLAUDE, ANTHROPIC_PROMPT_TOO_LONG)],
                         ids=["openai", "anthropic"])
def test_a_context_overflow_is_an_invalid_request_in_the_upstreams_words(anthropic: Any, gateway: Gateway,
                                                                         upstream: Upstream, model: str,
                                                                         answer: Any) -> None:
    upstream.play(answer)
    with pytest.raises(anthropic.BadRequestError) as caught:
        client(anthropic, gateway).messages.create(model=model, max_tokens=100, messages=HELLO)
    error = caught.value.body["error"]
    assert (error["type"], error["message"]) == ("invalid_request_error", answer.error["message"])


def test_an_overloaded_anthropic_model_is_a_529(anthropic: Any, gateway: Gateway, upstream: Upstream) -> None:
    upstream.play(ANTHROPIC_OVERLOADED, ANTHROPIC_OVERLOADED, ANTHROPIC_OVERLOADED)
    with pytest.raises(anthropic.APIStatusError) as caught:
        client(anthropic, gateway).messages.create(model=CLAUDE, max_tokens=100, messages=HELLO)
    assert caught.value.status_code == 529
    assert caught.value.body["error"] == ANTHROPIC_OVERLOADED.error


def test_models_are_listed_and_retrieved(anthropic: Any, gateway: Gateway) -> None:
    sdk = client(anthropic, gateway)
    ids = [m.id for m in sdk.models.list()]
    assert {"anthropic/claude-sonnet-4-5-20250929", "openai/gpt-4o-mini"} <= set(ids)
    assert sdk.models.retrieve("anthropic/claude-sonnet-4-5-20250929").id == "anthropic/claude-sonnet-4-5-20250929"
