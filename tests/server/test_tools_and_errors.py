"""The facade in front of a scripted OpenAI-shaped upstream: tool round trips, errors, auth."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from agent_core.server import create_app
from providers._server import ScriptedServer, json_reply
from providers._wire import oa_text, oa_tool_calls

from ._live import running

KEY = "sk-upstream-secret-123"
TOOLS = [
    {"type": "function", "function": {"name": "add", "description": "a + b",
                                      "parameters": {"type": "object", "properties": {"a": {}, "b": {}}}}},
    {"type": "function", "function": {"name": "mul", "parameters": {"type": "object", "properties": {}}}},
]


@pytest.fixture
def upstream(server: ScriptedServer) -> ScriptedServer:
    """The model API the facade talks to: the shared loopback ``server`` fixture."""
    return server


@pytest.fixture
def facade(upstream: ScriptedServer, store: Any) -> Iterator[str]:
    config = {"base_url": upstream.url + "/v1", "api_key": KEY, "max_retries": 0}
    with running(create_app(store=store, config=config)) as url:
        yield url


@pytest.fixture
def client(facade: str) -> Any:
    return openai.OpenAI(base_url=f"{facade}/v1", api_key="unused", max_retries=0)


def _completion(message: dict[str, Any], finish: str) -> dict[str, Any]:
    return {"id": "chatcmpl-up", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29}}


def test_streamed_tool_calls_go_back_to_the_client_and_its_results_go_upstream(client: Any, upstream: Any) -> None:
    upstream.enqueue(oa_tool_calls(), oa_text("It is ", "3 and 12."))
    messages: list[Any] = [{"role": "user", "content": "add 1 and 2, multiply 3 by 4"}]
    chunks = list(client.chat.completions.create(model="openai/gpt-4o-mini", messages=messages, tools=TOOLS,
                                                 stream=True))
    opening = chunks[0].choices[0].delta  # as OpenAI's: a reply of tool calls opens with null content
    assert opening.role == "assistant" and opening.content is None
    calls = [tc for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or ()]
    assert [(c.id, c.function.name, json.loads(c.function.arguments)) for c in calls] == [
        ("call_a", "add", {"a": 1, "b": 2}), ("call_b", "mul", {"x": 3, "y": 4})]
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["tool_calls"]
    # The upstream saw the client's tools, and was called once: the server ran nothing itself.
    assert len(upstream.requests) == 1
    assert [t["function"]["name"] for t in upstream.requests[0].body["tools"]] == ["add", "mul"]
    assert upstream.requests[0].body["model"] == "gpt-4o-mini"

    messages.append({"role": "assistant", "content": None, "tool_calls": [
        {"id": c.id, "type": "function", "function": {"name": c.function.name, "arguments": c.function.arguments}}
        for c in calls]})
    messages += [{"role": "tool", "tool_call_id": "call_a", "content": "3"},
                 {"role": "tool", "tool_call_id": "call_b", "content": "12"}]
    stream = list(client.chat.completions.create(model="openai/gpt-4o-mini", messages=messages, tools=TOOLS,
                                                 stream=True))
    assert stream[0].choices[0].delta.role == "assistant" and stream[0].choices[0].delta.content == ""  # text: ""
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "It is 3 and 12."
    sent = upstream.requests[1].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "tool"]
    assert [tc["id"] for tc in sent[1]["tool_calls"]] == ["call_a", "call_b"]
    assert [(m["tool_call_id"], m["content"]) for m in sent[2:]] == [("call_a", "3"), ("call_b", "12")]


def test_non_streaming_tool_round_trip_with_usage(client: Any, upstream: Any) -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}
    upstream.enqueue(
        json_reply(_completion({"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls")),
        json_reply(_completion({"role": "assistant", "content": "The sum is 3."}, "stop")),
    )
    messages: list[Any] = [{"role": "user", "content": "1 + 2?"}]
    first = client.chat.completions.create(model="openai/gpt-4o-mini", messages=messages, tools=TOOLS)
    assert first.choices[0].finish_reason == "tool_calls"
    assert first.choices[0].message.tool_calls[0].function.arguments == '{"a": 1, "b": 2}'
    assert (first.usage.prompt_tokens, first.usage.completion_tokens, first.usage.total_tokens) == (20, 9, 29)
    messages += [first.choices[0].message.model_dump(exclude_none=True),
                 {"role": "tool", "tool_call_id": "call_1", "content": "3"}]
    second = client.chat.completions.create(model="openai/gpt-4o-mini", messages=messages, tools=TOOLS)
    assert second.choices[0].message.content == "The sum is 3."
    assert upstream.requests[1].body["messages"][-1] == {"role": "tool", "tool_call_id": "call_1", "content": "3"}


@pytest.mark.parametrize("stream", [False, True], ids=["call", "stream"])
def test_rate_limit_upstream_is_429_with_retry_after(facade: str, upstream: Any, stream: bool) -> None:
    upstream.enqueue(json_reply({"error": {"type": "rate_limit_exceeded", "message": "slow down"}}, 429,
                                {"retry-after": "7"}))
    r = httpx.post(f"{facade}/v1/chat/completions", json={
        "model": "openai/gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}], "stream": stream})
    assert r.status_code == 429
    assert r.headers["retry-after"] == "7"
    error = r.json()["error"]
    assert error["type"] == "rate_limit_exceeded" and error["agent_core_type"] == "RateLimitError"
    assert error["message"] == "slow down"  # the upstream's own words, not rewritten
    assert KEY not in r.text


@pytest.mark.parametrize(("status", "body", "want", "kind"), [
    (503, {"error": {"type": "server_error", "message": "down"}}, 503, "ProviderUnavailableError"),
    (500, {"error": {"message": "boom"}}, 500, "ProviderUnavailableError"),  # the upstream's status, passed on
    (408, {"error": {"message": "took too long"}}, 408, "LLMTimeoutError"),
    # the operator's key is wrong, not the client's token: not passed on as a 401
    (401, {"error": {"type": "invalid_api_key", "message": "bad key"}}, 502, "AuthenticationError"),
    (200, {"error": {"message": "an error inside a 200"}}, 502, "LLMError"),
    (400, {"error": {"type": "context_length_exceeded", "message": "too long"}}, 400, "ContextLengthError"),
])
def test_upstream_errors_map_to_statuses(
    facade: str, upstream: Any, status: int, body: Any, want: int, kind: str
) -> None:
    upstream.enqueue(json_reply(body, status))
    r = httpx.post(f"{facade}/v1/chat/completions", json={
        "model": "openai/gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]})
    assert r.status_code == want, r.text
    error = r.json()["error"]
    assert error["agent_core_type"] == kind
    assert error["message"] == body["error"]["message"]  # verbatim: no provider prefix, no status suffix
    assert error["type"] == body["error"].get("type", "server_error" if want >= 500 else "invalid_request_error")
    assert {"param", "code"} <= error.keys()


def test_the_openai_client_raises_its_own_typed_errors(client: Any, upstream: Any) -> None:
    upstream.enqueue(json_reply({"error": {"type": "rate_limit_exceeded", "message": "slow"}}, 429))
    with pytest.raises(openai.RateLimitError):
        client.chat.completions.create(model="openai/gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="nosuch/model", messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="echo", messages=[])


def test_request_fields_reach_the_upstream_or_are_refused_by_name(client: Any, upstream: Any) -> None:
    upstream.enqueue(json_reply({"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": '{"ok": true}'}}]}))
    fmt = {"type": "json_schema", "json_schema": {"name": "r", "schema": {"type": "object"}}}
    client.chat.completions.create(
        model="openai/gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], response_format=fmt,
        tool_choice="none", seed=7, stop=["END"], max_completion_tokens=5, user="u-1",
        tools=[{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
    )
    sent = upstream.requests[-1].body
    assert sent["response_format"] == fmt and sent["tool_choice"] == "none" and sent["seed"] == 7
    assert sent["stop"] == ["END"] and sent["user"] == "u-1"
    assert 5 in (sent.get("max_tokens"), sent.get("max_completion_tokens"))
    for kwargs, field in (({"n": 9}, "n"), ({"logprobs": True}, "logprobs"), ({"logprobs": True, "top_logprobs": 2},
                                                                                  "logprobs")):
        with pytest.raises(openai.BadRequestError) as err:
            client.chat.completions.create(model="echo", messages=[{"role": "user", "content": "hi"}], **kwargs)
        assert err.value.body["message"].startswith(f"{field}:"), err.value.body
