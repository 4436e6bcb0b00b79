"""``POST /v1/messages`` driven by the official ``anthropic`` SDK, over any provider.

Upstreams are the scripted loopback servers of the provider tests, playing OpenAI's and
Anthropic's wire bytes: an Anthropic client reaches an OpenAI-speaking model (and the other
way round), with streaming, client tools both ways, thinking blocks, usage and errors in
Anthropic's shape.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import pytest
from agent_core.server import ServeSettings, create_app
from providers._server import ScriptedServer, json_reply
from providers._wire import an_thinking_tools, oa_text, oa_tool_calls

from ._live import running

HI = [{"role": "user", "content": "hi"}]
TOOLS = [{"name": "add", "description": "a + b", "input_schema": {"type": "object", "properties": {}}},
         {"name": "mul", "input_schema": {"type": "object", "properties": {}}}]


@pytest.fixture
def facade(server: ScriptedServer, store: Any) -> Iterator[str]:
    operator = {"base_url": f"{server.url}/v1", "api_key": "sk-upstream-0123456789", "max_retries": 0}
    with running(create_app(store=store, config=operator)) as url:
        yield url


@pytest.fixture
def client(facade: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=facade, api_key="unused", max_retries=0)


def test_plain_and_streamed_answers_through_the_echo_provider(client: anthropic.Anthropic) -> None:
    reply = client.messages.create(model="echo", max_tokens=50, messages=HI, system="be brief")
    assert reply.type == "message" and reply.role == "assistant" and reply.stop_reason == "end_turn"
    assert [b.type for b in reply.content] == ["text"] and reply.content[0].text == "Echo: hi"
    with client.messages.stream(model="echo", max_tokens=50, messages=HI) as stream:
        pieces = list(stream.text_stream)
        final = stream.get_final_message()
    assert "".join(pieces) == "Echo: hi" and len(pieces) >= 2
    assert final.content[0].text == "Echo: hi"


def test_an_openai_model_answers_an_anthropic_client_with_usage(client: anthropic.Anthropic,
                                                                server: ScriptedServer) -> None:
    server.enqueue(oa_text("Hel", "lo"))
    with client.messages.stream(model="openai/gpt-4o-mini", max_tokens=50, messages=HI, stop_sequences=["END"],
                                extra_body={"temperature": 0.2}) as s:
        text = "".join(s.text_stream)
        final = s.get_final_message()
    assert text == "Hello" and final.usage.output_tokens == 7
    sent = server.requests[-1].body
    assert sent["model"] == "gpt-4o-mini" and sent["max_tokens"] == 50 and sent["temperature"] == 0.2
    assert sent["stop"] == ["END"]


def test_client_tools_round_trip_as_tool_use_and_tool_result(client: anthropic.Anthropic,
                                                             server: ScriptedServer) -> None:
    server.enqueue(oa_tool_calls(), oa_text("The sum is 3."))
    with client.messages.stream(model="openai/m", max_tokens=100, messages=HI, tools=TOOLS,
                                tool_choice={"type": "any"}) as stream:
        reply = stream.get_final_message()
    assert reply.stop_reason == "tool_use"
    uses = [b for b in reply.content if b.type == "tool_use"]
    assert [(u.id, u.name, u.input) for u in uses] == [("call_a", "add", {"a": 1, "b": 2}),
                                                       ("call_b", "mul", {"x": 3, "y": 4})]
    sent = server.requests[0].body
    assert [t["function"]["name"] for t in sent["tools"]] == ["add", "mul"] and sent["tool_choice"] == "required"
    # the client runs the tools and sends the results back
    history = [*HI, {"role": "assistant", "content": [u.model_dump() for u in uses]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_a", "content": "3"},
                                            {"type": "tool_result", "tool_use_id": "call_b", "content": "12"}]}]
    with client.messages.stream(model="openai/m", max_tokens=100, messages=history, tools=TOOLS) as stream:
        assert "".join(stream.text_stream) == "The sum is 3."
    second = server.requests[1].body["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "tool", "tool"]
    assert second[1]["tool_calls"][0]["function"] == {"name": "add", "arguments": '{"a": 1, "b": 2}'}
    assert (second[2]["tool_call_id"], second[2]["content"]) == ("call_a", "3")


def test_streamed_tool_use_and_thinking_from_an_anthropic_model(client: anthropic.Anthropic,
                                                                server: ScriptedServer) -> None:
    server.enqueue(an_thinking_tools())
    with client.messages.stream(model="anthropic/claude-test", max_tokens=100, messages=HI, tools=TOOLS,
                                thinking={"type": "enabled", "budget_tokens": 1024}) as stream:
        kinds = [e.type for e in stream]
        final = stream.get_final_message()
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    blocks = [b.type for b in final.content]
    assert blocks[0] == "thinking" and "tool_use" in blocks and final.stop_reason == "tool_use"
    assert final.content[0].thinking == "The user wants two sums."
    assert [b.input for b in final.content if b.type == "tool_use"][0] == {"a": 1, "b": 2}
    assert server.requests[-1].body["thinking"] == {"type": "enabled", "budget_tokens": 1024}


def test_errors_come_in_anthropics_shape_with_the_upstreams_wait(client: anthropic.Anthropic,
                                                                server: ScriptedServer, facade: str) -> None:
    server.enqueue(json_reply({"error": {"type": "rate_limit_exceeded", "message": "slow down"}}, 429,
                              {"retry-after": "7"}))
    with pytest.raises(anthropic.RateLimitError) as limited:
        client.messages.create(model="openai/m", max_tokens=10, messages=HI)
    assert limited.value.response.headers["retry-after"] == "7"
    assert limited.value.body["error"]["type"] == "rate_limit_error"
    assert limited.value.body["error"]["message"] == "slow down"  # the upstream's words, verbatim
    assert len(server.requests) == 1  # passed on at once: the client's own retries are the only ones
    with pytest.raises(anthropic.NotFoundError):
        client.messages.create(model="nosuch/m", max_tokens=10, messages=HI)
    r = httpx.post(f"{facade}/v1/messages", json={"model": "echo", "messages": HI})
    assert r.status_code == 400 and r.json()["type"] == "error"
    assert r.json()["error"] == {"type": "invalid_request_error",
                                 "message": "Object missing required field `max_tokens`"}
    r = httpx.post(f"{facade}/v1/messages", json={"model": "echo", "max_tokens": 5, "messages": [
        {"role": "user", "content": [{"type": "image", "source": {"type": "base64", "data": "x"}}]}]})
    assert r.status_code == 400 and "messages[0].content[0]" in r.json()["error"]["message"]
    r = httpx.post(f"{facade}/v1/messages", json={"model": "echo", "max_tokens": 5, "messages": HI,
                                                  "system": "x", "base_url": "http://evil.example"})
    # a field the Messages API does not have is never dropped: refused by the policy when it is a config key...
    assert r.status_code == 403 and "base_url" in r.json()["error"]["message"], r.text
    assert r.json()["error"]["type"] == "permission_error"
    # ...and by name when nothing reads it; Anthropic's server-side features are refused by name too
    for extra, field in (({"frobnicate": 1}, "frobnicate"), ({"mcp_servers": [{"url": "x"}]}, "mcp_servers")):
        r = httpx.post(f"{facade}/v1/messages", json={"model": "echo", "max_tokens": 5, "messages": HI, **extra})
        assert r.status_code == 400 and r.json()["error"]["message"].startswith(f"{field}:"), r.text


def test_x_session_id_keeps_the_exchange_and_x_api_key_is_a_token(store: Any, tmp_path: Any) -> None:
    tokens = tmp_path / "tokens.toml"
    tokens.write_text('[[tenants]]\nname = "ann"\ntoken = "ann-token-0123456789"\n')
    with running(create_app(store=store, settings=ServeSettings(tokens_file=str(tokens)))) as url:
        client = anthropic.Anthropic(base_url=url, api_key="ann-token-0123456789", max_retries=0)
        raw = client.messages.with_raw_response.create(model="echo", max_tokens=20, messages=HI,
                                                       extra_headers={"x-session-id": "talk"})
        assert raw.headers["x-session-revision"] == "1"
        stored = httpx.get(f"{url}/v1/sessions/talk", headers={"x-api-key": "ann-token-0123456789"}).json()
        assert [m["content"] for m in stored["messages"]] == ["hi", "Echo: hi"]
        with pytest.raises(anthropic.AuthenticationError):
            anthropic.Anthropic(base_url=url, api_key="wrong-token-000000", max_retries=0).messages.create(
                model="echo", max_tokens=5, messages=HI)
    assert json.dumps([s.session_id for s in store.list()]) == '["ann/talk"]'
