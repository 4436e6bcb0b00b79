"""instructor (structured extraction over the ``openai`` SDK) against the OpenAI-compatible facade.

instructor cannot share the ``clients`` environment: instructor 1.17 pins ``jiter<0.15``,
openai 3.4 and later need ``jiter>=0.16``, and pydantic-ai-slim 2.68 needs ``openai>=3.31``. Its
tests run in a virtualenv of their own, with openai 3.3 (``tests/clients/README.md``), and skip,
saying so, anywhere else.

instructor forces a function call named after the response model (``tool_choice``), validates
the arguments with pydantic and, when they do not validate, asks again with the error: so the
gateway must pass ``tools`` and ``tool_choice`` on and answer tool calls exactly.
"""

from __future__ import annotations

from typing import Any

import pytest

from ._answers import RATE_LIMITED, Chat, ToolCall
from ._gateway import Gateway
from ._kit import MODEL, TIMEOUT, need
from ._upstream import Upstream

pytestmark = pytest.mark.clients

WHY = ("instructor is not installed: it pins jiter<0.15, which the openai>=3.31 of the test-clients extra cannot "
       "share (it needs jiter>=0.16), so it has a virtualenv of its own; see tests/clients/README.md")


@pytest.fixture(scope="module")
def instructor() -> Any:
    return need("instructor", why=WHY)


def extractor(instructor: Any, gateway: Gateway) -> Any:
    openai = need("openai")
    return instructor.from_openai(openai.OpenAI(base_url=gateway.openai_url, api_key="sk-client-unused",
                                                max_retries=0, timeout=TIMEOUT))


def test_a_response_model_is_filled_from_the_forced_tool_call(instructor: Any, gateway: Gateway,
                                                              upstream: Upstream) -> None:
    pydantic = need("pydantic")

    class User(pydantic.BaseModel):
        name: str
        age: int

    upstream.play(Chat(tool_calls=(ToolCall("call_i1", "User", '{"name":"Ann","age":31}'),)))
    user = extractor(instructor, gateway).chat.completions.create(
        model=MODEL, response_model=User, messages=[{"role": "user", "content": "Ann is 31."}])
    assert user.model_dump() == {"name": "Ann", "age": 31}  # an instance of instructor's subclass of User
    [call] = upstream.calls()
    assert call.body["tool_choice"] == {"type": "function", "function": {"name": "User"}}
    assert [t["function"]["name"] for t in call.body["tools"]] == ["User"]


def test_arguments_that_do_not_validate_are_asked_for_again(instructor: Any, gateway: Gateway,
                                                            upstream: Upstream) -> None:
    pydantic = need("pydantic")

    class User(pydantic.BaseModel):
        name: str
        age: int

    upstream.play(Chat(tool_calls=(ToolCall("call_i2", "User", '{"name":"Ann","age":"thirty-one"}'),)),
                  Chat(tool_calls=(ToolCall("call_i3", "User", '{"name":"Ann","age":31}'),)))
    user = extractor(instructor, gateway).chat.completions.create(
        model=MODEL, response_model=User, max_retries=1, messages=[{"role": "user", "content": "Ann is 31."}])
    assert user.model_dump() == {"name": "Ann", "age": 31}
    first, second = upstream.calls()
    assert len(second.body["messages"]) > len(first.body["messages"])
    assert "age" in str(second.body["messages"][-1]["content"])


def test_a_rate_limit_is_one_upstream_request(instructor: Any, gateway: Gateway, upstream: Upstream) -> None:
    openai = need("openai")
    pydantic = need("pydantic")

    class User(pydantic.BaseModel):
        name: str

    upstream.play(RATE_LIMITED, RATE_LIMITED, RATE_LIMITED)
    with pytest.raises(Exception) as caught:
        extractor(instructor, gateway).chat.completions.create(
            model=MODEL, response_model=User, max_retries=0, messages=[{"role": "user", "content": "Ann."}])
    cause = caught.value if isinstance(caught.value, openai.RateLimitError) else caught.value.__cause__
    assert isinstance(cause, openai.RateLimitError) and cause.code == "rate_limit_exceeded"
    assert len(upstream.calls()) == 1
