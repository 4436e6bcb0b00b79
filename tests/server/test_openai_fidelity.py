"""The OpenAI facade answers as the API would, through the official ``openai`` client.

Each test is one of the deviations real clients found: a tool-call message's
``content`` and ``refusal``, ``n`` choices, one model by id, bare model names, fields
that must reach the upstream or be refused by name, the legacy ``functions``, the
upstream's own error values and rate-limit headers, and a 429 that is not retried here.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from agent_core.server import ServeSettings, create_app
from providers._server import Delay, ScriptedServer, json_reply, sse, sse_reply
from providers._wire import OA_DONE, oa_chunk

from ._live import running

KEY = "sk-upstream-secret-456"
HI = [{"role": "user", "content": "hi"}]
TOOL = {"type": "function", "function": {"name": "add", "parameters": {"type": "object", "properties": {}}}}


def _completion(text: str | None = None, calls: tuple[str, ...] = (), logprobs: Any = None) -> Any:
    """A non-streamed Chat Completions answer, as the API writes it."""
    message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
    if calls:
        message["tool_calls"] = [{"id": f"call_{i}", "type": "function",
                                  "function": {"name": name, "arguments": "{}"}} for i, name in enumerate(calls)]
    return json_reply({"id": "chatcmpl-up", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
                       "choices": [{"index": 0, "message": message, "logprobs": logprobs,
                                    "finish_reason": "tool_calls" if calls else "stop"}],
                       "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}})


def _serve(upstream: ScriptedServer, store: Any, **settings: Any) -> Any:
    config = {"base_url": upstream.url + "/v1", "api_key": KEY}
    return running(create_app(store=store, config=config, settings=ServeSettings(**settings)))


@pytest.fixture
def facade(server: ScriptedServer, store: Any) -> Iterator[str]:
    with _serve(server, store, default_provider="openai", model_aliases={"fast": "openai/gpt-4o-mini"}) as url:
        yield url


@pytest.fixture
def client(facade: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=facade + "/v1", api_key="unused", max_retries=0)


def test_a_tool_call_message_has_null_content_and_a_refusal_field(client: openai.OpenAI, server: Any) -> None:
    server.enqueue(_completion(calls=("add", "mul")))
    reply = client.chat.completions.create(model="openai/gpt-4o-mini", messages=HI, tools=[TOOL])
    message = reply.choices[0].message
    assert message.content is None and message.refusal is None
    assert [c.function.name for c in message.tool_calls] == ["add", "mul"]
    raw = client.chat.completions.with_raw_response.create(model="echo", messages=HI).http_response.json()
    assert raw["choices"][0]["message"] == {"role": "assistant", "content": "Echo: hi", "refusal": None}


def test_n_choices_plain_and_streamed(client: openai.OpenAI) -> None:
    reply = client.chat.completions.create(model="echo", messages=HI, n=3)
    assert [c.index for c in reply.choices] == [0, 1, 2]
    assert {c.message.content for c in reply.choices} == {"Echo: hi"}
    texts: dict[int, str] = {}
    finished = set()
    for part in client.chat.completions.create(model="echo", messages=HI, n=2, stream=True):
        for choice in part.choices:
            texts[choice.index] = texts.get(choice.index, "") + (choice.delta.content or "")
            if choice.finish_reason:
                finished.add(choice.index)
    assert texts == {0: "Echo: hi", 1: "Echo: hi"} and finished == {0, 1}
    with pytest.raises(openai.BadRequestError) as err:
        client.chat.completions.create(model="echo", messages=HI, n=9)
    assert err.value.body["param"] == "n" and "max_choices" in err.value.body["message"]


def test_one_model_by_id_even_with_a_slash_the_sdk_percent_encodes(client: openai.OpenAI, facade: str) -> None:
    model = client.models.retrieve("openai/gpt-4o-mini")
    assert model.id == "openai/gpt-4o-mini" and model.owned_by == "openai"
    assert httpx.get(f"{facade}/v1/models/openai%2Fgpt-4o-mini").json()["id"] == "openai/gpt-4o-mini"
    assert client.models.retrieve("fast").owned_by == "openai"  # an alias
    assert "fast" in [m.id for m in client.models.list()]


def test_a_bare_model_name_goes_to_the_default_provider_and_an_alias_to_its_target(
    client: openai.OpenAI, server: Any
) -> None:
    server.enqueue(_completion("Hi!"), _completion("Yo"))
    assert client.chat.completions.create(model="gpt-4o-mini", messages=HI).choices[0].message.content == "Hi!"
    assert server.requests[-1].body["model"] == "gpt-4o-mini"
    assert client.chat.completions.create(model="fast", messages=HI).choices[0].message.content == "Yo"
    assert server.requests[-1].body["model"] == "gpt-4o-mini"


def test_without_a_default_provider_a_bare_name_is_a_404_that_says_how(server: Any, store: Any) -> None:
    with _serve(server, store) as url:
        r = httpx.post(f"{url}/v1/chat/completions", json={"model": "gpt-4o-mini", "messages": HI})
        missing = httpx.get(f"{url}/v1/models/nosuch%2Fmodel")
    assert r.status_code == 404
    assert "--default-provider" in r.json()["error"]["message"] and r.json()["error"]["param"] == "model"
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "model_not_found"


def test_fields_reach_the_upstream_or_are_refused_by_name(client: openai.OpenAI, server: Any) -> None:
    server.enqueue(_completion("ok"))
    client.chat.completions.create(model="openai/gpt-4o-mini", messages=HI, reasoning_effort="low",
                                   verbosity="low", logit_bias={"42": -100}, max_completion_tokens=9)
    sent = server.requests[-1].body
    assert sent["reasoning_effort"] == "low" and sent["verbosity"] == "low" and sent["logit_bias"] == {"42": -100}
    assert 9 in (sent.get("max_completion_tokens"), sent.get("max_tokens"))
    # a value that asks nothing is fine for a provider that cannot honour the field; one that asks, refused
    client.chat.completions.create(model="echo", messages=HI, tool_choice="auto", store=False, service_tier="auto")
    for kwargs, field in (({"reasoning_effort": "high"}, "reasoning_effort"),
                          ({"response_format": {"type": "json_object"}}, "response_format"),
                          ({"extra_body": {"frobnicate": 1}}, "frobnicate")):
        with pytest.raises(openai.BadRequestError) as err:
            client.chat.completions.create(model="echo", messages=HI, **kwargs)
        assert err.value.body["param"] == field and err.value.body["message"].startswith(f"{field}:")


def test_the_legacy_functions_api_round_trips(client: openai.OpenAI, server: Any) -> None:
    server.enqueue(_completion(calls=("add",)), _completion("done"))
    reply = client.chat.completions.create(
        model="openai/gpt-4o-mini", messages=HI, functions=[TOOL["function"]], function_call="auto")
    choice = reply.choices[0]
    assert choice.finish_reason == "function_call" and choice.message.function_call.name == "add"
    assert server.requests[-1].body["tools"][0]["function"]["name"] == "add"
    history = [*HI, {"role": "assistant", "content": None, "function_call": choice.message.function_call.model_dump()},
               {"role": "function", "name": "add", "content": "3"}]
    client.chat.completions.create(model="openai/gpt-4o-mini", messages=history, functions=[TOOL["function"]])
    sent = server.requests[-1].body["messages"]
    assert sent[-1]["role"] == "tool" and sent[-1]["tool_call_id"] == sent[-2]["tool_calls"][0]["id"]


@pytest.mark.parametrize("stream", [False, True], ids=["call", "stream"])
def test_upstream_errors_keep_their_own_values_and_headers(client: openai.OpenAI, server: Any, stream: bool) -> None:
    body = {"error": {"message": "This model's maximum context length is 8 tokens.", "type": "invalid_request_error",
                      "param": "messages", "code": "context_length_exceeded"}}
    server.enqueue(json_reply(body, 400, {"x-request-id": "req_up_1"}))
    with pytest.raises(openai.BadRequestError) as err:
        client.chat.completions.create(model="openai/gpt-4o-mini", messages=HI, stream=stream)
    got = err.value.body
    assert {k: got[k] for k in ("message", "type", "param", "code")} == body["error"]
    assert got["agent_core_type"] == "ContextLengthError"


def test_a_429_is_passed_on_at_once_with_its_rate_limit_headers(client: openai.OpenAI, server: Any) -> None:
    headers = {"retry-after": "1", "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1s"}
    server.enqueue(json_reply({"error": {"message": "Rate limit reached", "type": "requests",
                                         "param": None, "code": "rate_limit_exceeded"}}, 429, headers))
    before = len(server.requests)
    with pytest.raises(openai.RateLimitError) as err:
        client.chat.completions.create(model="openai/gpt-4o-mini", messages=HI)
    assert len(server.requests) - before == 1  # the gateway did not retry: the client decides
    response = err.value.response
    assert response.headers["x-ratelimit-remaining-requests"] == "0" and response.headers["retry-after"] == "1"
    assert err.value.body["code"] == "rate_limit_exceeded" and KEY not in response.text


LOGPROBS = {"content": [{"token": "Hi", "logprob": -0.01, "bytes": [72, 105], "top_logprobs": []}], "refusal": None}


def test_logprobs_are_relayed_plain_and_streamed(client: openai.OpenAI, server: Any) -> None:
    server.enqueue(_completion("Hi", logprobs=LOGPROBS))
    reply = client.chat.completions.create(model="openai/gpt-4o-mini", messages=HI, logprobs=True, top_logprobs=0)
    assert reply.choices[0].logprobs.model_dump() == LOGPROBS
    assert server.requests[-1].body["logprobs"] is True
    server.enqueue(sse_reply(
        oa_chunk({"role": "assistant", "content": ""}),
        *(sse({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [
            {"index": 0, "delta": {"content": word}, "finish_reason": None,
             "logprobs": {"content": [{**LOGPROBS["content"][0], "token": word}]}}]}) for word in ("Hi", " you", "!")),
        oa_chunk({}, "stop"), OA_DONE))
    got = [c.choices[0].logprobs for c in client.chat.completions.create(
        model="openai/gpt-4o-mini", messages=HI, logprobs=True, stream=True) if c.choices and c.choices[0].logprobs]
    assert [token.token for lp in got for token in lp.content] == ["Hi", " you", "!"]  # every chunk's, in order
    # a provider that cannot return them: refused by name, not answered without them
    with pytest.raises(openai.BadRequestError) as err:
        client.chat.completions.create(model="echo", messages=HI, logprobs=True)
    assert err.value.body["param"] == "logprobs"


def test_an_answer_carries_the_upstreams_rate_limit_headers(client: openai.OpenAI, server: Any) -> None:
    reply = _completion("ok")
    server.enqueue(json_reply(json.loads(b"".join(reply.parts)),
                              headers={"x-ratelimit-remaining-tokens": "9000", "x-request-id": "req_upstream"}))
    raw = client.chat.completions.with_raw_response.create(model="openai/gpt-4o-mini", messages=HI)
    assert raw.headers["x-ratelimit-remaining-tokens"] == "9000"
    assert raw.headers["x-request-id"] != "req_upstream"  # the client's request id, not the upstream's


@pytest.mark.parametrize("route", ["/v1/chat/completions", "/v1/messages"])
def test_a_streamed_answer_sends_its_headers_once_the_upstream_answers(facade: str, server: Any, route: str) -> None:
    """The upstream answers at once but thinks 1.5 s before its first token: the client has its status first."""
    server.enqueue(sse_reply(oa_chunk({"role": "assistant", "content": ""}), Delay(1.5),
                             oa_chunk({"content": "late"}), oa_chunk({}, "stop"), OA_DONE))
    body: dict[str, Any] = {"model": "openai/gpt-4o-mini", "messages": HI, "stream": True}
    if route == "/v1/messages":
        body["max_tokens"] = 16
    started = time.monotonic()
    with httpx.stream("POST", facade + route, json=body, timeout=10) as r:
        headers_after = time.monotonic() - started
        text = "".join(r.iter_text())
    assert r.status_code == 200 and headers_after < 1.0, headers_after
    assert "late" in text
