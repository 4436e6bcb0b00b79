"""langchain-openai's ``ChatOpenAI`` against the OpenAI-compatible facade.

LangChain sorts errors into its own classes from the SDK's (rate limit, context overflow by the
``context_length_exceeded`` code in the error), and can carry the response headers in
``response_metadata``.
"""

from __future__ import annotations

from typing import Any

import pytest

from ._answers import (
    CONTEXT_LENGTH_EXCEEDED,
    RATE_HEADERS,
    RATE_LIMITED,
    Chat,
    ToolCall,
    Usage,
)
from ._gateway import Gateway
from ._kit import HI, MODEL, TIMEOUT, WEATHER_TOOL, need
from ._upstream import Upstream

pytestmark = pytest.mark.clients


@pytest.fixture(scope="module")
def langchain_openai() -> Any:
    return need("langchain_openai")


def chat(langchain_openai: Any, gateway: Gateway, **kwargs: Any) -> Any:
    return langchain_openai.ChatOpenAI(model=MODEL, base_url=gateway.openai_url, api_key="sk-client-unused",
                                       max_retries=0, timeout=TIMEOUT, **kwargs)


def test_invoke_gives_text_usage_and_the_rate_limit_headers(langchain_openai: Any, gateway: Gateway,
                                                            upstream: Upstream) -> None:
    upstream.play(Chat("Hello from upstream.", usage=Usage(14, 37)))
    reply = chat(langchain_openai, gateway, include_response_headers=True).invoke(HI)
    assert reply.content == "Hello from upstream."
    assert reply.response_metadata["finish_reason"] == "stop"
    assert reply.usage_metadata["input_tokens"] == 14 and reply.usage_metadata["output_tokens"] == 37
    headers = reply.response_metadata["headers"]
    assert {name: headers.get(name) for name in RATE_HEADERS} == RATE_HEADERS


def test_a_stream_adds_up_with_usage(langchain_openai: Any, gateway: Gateway, upstream: Upstream) -> None:
    upstream.play(Chat("Streaming along nicely.", usage=Usage(9, 5)))
    chunks = list(chat(langchain_openai, gateway, stream_usage=True).stream(HI))
    full = chunks[0]
    for chunk in chunks[1:]:
        full = full + chunk
    assert full.content == "Streaming along nicely."
    assert (full.usage_metadata["input_tokens"], full.usage_metadata["output_tokens"]) == (9, 5)
    assert upstream.calls()[0].body["stream_options"] == {"include_usage": True}


def test_bound_tools_come_back_as_tool_calls(langchain_openai: Any, gateway: Gateway, upstream: Upstream) -> None:
    upstream.play(Chat(tool_calls=(ToolCall("call_l1", "get_weather", '{"city":"Lima"}'),)))
    reply = chat(langchain_openai, gateway).bind_tools([WEATHER_TOOL]).invoke("Weather in Lima?")
    assert [(c["id"], c["name"], c["args"]) for c in reply.tool_calls] == [("call_l1", "get_weather",
                                                                              {"city": "Lima"})]
    assert reply.response_metadata["finish_reason"] == "tool_calls"


def test_structured_output(langchain_openai: Any, gateway: Gateway, upstream: Upstream) -> None:
    pydantic = need("pydantic")

    class Place(pydantic.BaseModel):
        city: str
        country: str

    upstream.play(Chat('{"city":"Lima","country":"PE"}'))
    assert chat(langchain_openai, gateway).with_structured_output(Place).invoke(HI) == Place(city="Lima",
                                                                                            country="PE")


def test_a_rate_limit_is_langchains_rate_limit_error(langchain_openai: Any, gateway: Gateway,
                                                     upstream: Upstream) -> None:
    exceptions = need("langchain_core.exceptions")
    upstream.play(RATE_LIMITED, RATE_LIMITED, RATE_LIMITED)
    with pytest.raises(exceptions.ModelRateLimitError) as caught:
        chat(langchain_openai, gateway).invoke(HI)
    assert caught.value.code == "rate_limit_exceeded"
    assert len(upstream.calls()) == 1


def test_a_context_overflow_is_a_bad_request_with_its_code(langchain_openai: Any, gateway: Gateway,
                                                           upstream: Upstream) -> None:
    """What the API makes LangChain raise: a bad request carrying OpenAI's code and param.

    (langchain-openai 1.7 looks for ``context_length_exceeded`` in the error's text to raise its
    ``ContextOverflowError``; with openai>=3 that text holds only the message, so against the real
    API too it raises its plain invalid-request error. Either is an ``openai.BadRequestError``.)
    """
    openai = need("openai")
    upstream.play(CONTEXT_LENGTH_EXCEEDED)
    with pytest.raises(openai.BadRequestError) as caught:
        chat(langchain_openai, gateway).invoke(HI)
    assert (caught.value.code, caught.value.param) == ("context_length_exceeded", "messages")
    assert len(upstream.calls()) == 1
