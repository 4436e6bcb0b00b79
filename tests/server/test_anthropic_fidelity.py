"""What reaches an Anthropic upstream, and comes back, through the server's facades.

The upstream is a scripted loopback server that checks each body as Anthropic's API
does (``providers._anthropic_api``): a tool choice in OpenAI's shape or a thinking
block without its signature is a 400 there, so a shape bug fails the test. Clients are
the official ``anthropic`` and ``openai`` SDKs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import openai
import pytest
from agent_core.server import ServeSettings, create_app
from providers._anthropic_api import refuse_like_anthropic
from providers._server import ScriptedServer, json_reply
from providers._wire import an_message, an_text, an_thinking_tools

from ._live import running

HI = [{"role": "user", "content": "hi"}]
TOOLS = [{"name": "add", "description": "a + b", "input_schema": {"type": "object", "properties": {}}},
         {"name": "mul", "input_schema": {"type": "object", "properties": {}}}]
CHAT_TOOLS = [{"type": "function", "function": {"name": t["name"], "parameters": t["input_schema"]}} for t in TOOLS]
MODEL = "anthropic/claude-test"


@pytest.fixture
def facade(server: ScriptedServer, store: Any) -> Iterator[str]:
    refuse_like_anthropic(server)
    operator = {"base_url": f"{server.url}/v1", "api_key": "sk-upstream-0123456789", "max_retries": 0}
    with running(create_app(store=store, config=operator)) as url:
        yield url


@pytest.fixture
def client(facade: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=facade, api_key="unused", max_retries=0)


@pytest.fixture
def chat(facade: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{facade}/v1", api_key="unused", max_retries=0)


@pytest.mark.parametrize(("sent", "upstream"), [
    ({"type": "tool", "name": "mul"}, {"type": "tool", "name": "mul"}),
    ({"type": "any"}, {"type": "any"}),
    ({"type": "auto"}, {"type": "auto"}),
    ({"type": "none"}, {"type": "none"}),
    ({"type": "any", "disable_parallel_tool_use": True}, {"type": "any", "disable_parallel_tool_use": True}),
    ({"type": "tool", "name": "add", "disable_parallel_tool_use": True},
     {"type": "tool", "name": "add", "disable_parallel_tool_use": True}),
])
def test_a_messages_tool_choice_reaches_anthropic_in_its_own_shape(client: anthropic.Anthropic, server: ScriptedServer,
                                                                   sent: Any, upstream: Any) -> None:
    server.enqueue(an_message({"type": "text", "text": "ok"}))
    reply = client.messages.create(model=MODEL, max_tokens=50, messages=HI, tools=TOOLS, tool_choice=sent)
    assert reply.content[0].text == "ok"
    assert server.requests[-1].body["tool_choice"] == upstream


@pytest.mark.parametrize(("sent", "parallel", "upstream"), [
    ("required", None, {"type": "any"}),
    ({"type": "function", "function": {"name": "add"}}, None, {"type": "tool", "name": "add"}),
    ("auto", None, {"type": "auto"}),
    ("none", None, {"type": "none"}),
    ("required", False, {"type": "any", "disable_parallel_tool_use": True}),
    (None, False, {"type": "auto", "disable_parallel_tool_use": True}),
])
def test_a_chat_tool_choice_reaches_anthropic_in_its_shape(chat: openai.OpenAI, server: ScriptedServer,
                                                           sent: Any, parallel: Any, upstream: Any) -> None:
    server.enqueue(an_message({"type": "text", "text": "ok"}))
    extra: dict[str, Any] = {} if sent is None else {"tool_choice": sent}
    if parallel is not None:
        extra["parallel_tool_calls"] = parallel
    reply = chat.chat.completions.create(model=MODEL, messages=HI, tools=CHAT_TOOLS, **extra)  # type: ignore[call-overload]
    assert reply.choices[0].message.content == "ok"
    assert server.requests[-1].body["tool_choice"] == upstream


def test_the_scripted_upstream_refuses_an_openai_shaped_choice(server: ScriptedServer) -> None:
    """The check the tests above rely on: a shape bug would be a 400, not a pass."""
    refuse_like_anthropic(server)
    body = {"model": "m", "max_tokens": 5, "messages": HI, "tools": TOOLS,
            "tool_choice": {"type": "function", "function": {"name": "add"}}}
    r = httpx.post(f"{server.url}/v1/messages", json=body)
    assert r.status_code == 400 and "tool_choice" in r.json()["error"]["message"]
    r = httpx.post(f"{server.url}/v1/messages", json={**body, "tool_choice": {"type": "tool", "name": "required"}})
    assert r.status_code == 400 and "not found" in r.json()["error"]["message"]


def test_count_tokens_is_the_anthropic_upstreams_own_count(client: anthropic.Anthropic, server: ScriptedServer) -> None:
    server.enqueue(json_reply({"input_tokens": 321}))
    history = [*HI, {"role": "assistant", "content": [{"type": "text", "text": "yes?"}]},
               {"role": "user", "content": [{"type": "text", "text": "more", "cache_control": {"type": "ephemeral"}}]}]
    raw = client.messages.with_raw_response.count_tokens(model=MODEL, messages=history, system="be brief",
                                                         tools=TOOLS, tool_choice={"type": "tool", "name": "add"})
    assert raw.parse().input_tokens == 321 and "x-token-count" not in raw.headers
    sent = server.requests[-1]
    assert sent.path.endswith("/v1/messages/count_tokens") and sent.headers["x-api-key"] == "sk-upstream-0123456789"
    # the client's body as written (cache_control too), with the upstream's model name and nothing added
    assert sent.body == {"model": "claude-test", "messages": history, "system": "be brief", "tools": TOOLS,
                         "tool_choice": {"type": "tool", "name": "add"}}


def test_count_tokens_passes_on_an_upstream_refusal(client: anthropic.Anthropic, server: ScriptedServer) -> None:
    with pytest.raises(anthropic.BadRequestError) as refused:
        client.messages.count_tokens(model=MODEL, messages=HI, tools=TOOLS, tool_choice={"type": "tool", "name": "nope"})
    assert "nope" in refused.value.body["error"]["message"] and len(server.requests) == 1


def test_count_tokens_for_another_provider_is_an_estimate_that_says_so(client: anthropic.Anthropic,
                                                                      server: ScriptedServer) -> None:
    raw = client.messages.with_raw_response.count_tokens(model="openai/gpt-4o-mini", messages=HI * 50)
    counted = raw.parse()
    assert raw.headers["x-token-count"] == "estimate" and raw.http_response.json()["estimated"] is True
    assert 50 < counted.input_tokens < 1000 and server.requests == []
    bigger = client.messages.count_tokens(model="echo", messages=HI * 100)
    assert bigger.input_tokens > counted.input_tokens


def test_count_tokens_is_checked_as_a_messages_request_is(facade: str, server: ScriptedServer, store: Any,
                                                          tmp_path: Any) -> None:
    client = anthropic.Anthropic(base_url=facade, api_key="unused", max_retries=0)
    with pytest.raises(anthropic.NotFoundError):
        client.messages.count_tokens(model="nosuch/m", messages=HI)
    with pytest.raises(anthropic.BadRequestError) as bad:
        client.messages.count_tokens(model=MODEL, messages=[{"role": "user", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {}}]}])
    assert bad.value.body["error"]["message"].startswith("messages[0].content[0]: ")  # as /v1/messages says
    r = httpx.post(f"{facade}/v1/messages/count_tokens", json={"model": MODEL, "messages": HI,
                                                              "base_url": "http://evil.example"})
    assert r.status_code == 403 and "base_url" in r.json()["error"]["message"]
    assert server.requests == []
    # a tenant's token is needed here as on /v1/messages, and its model list holds
    tokens = tmp_path / "tokens.toml"
    tokens.write_text('[[tenants]]\nname = "ann"\ntoken = "ann-token-0123456789"\nmodels = ["echo"]\n')
    with running(create_app(store=store, settings=ServeSettings(tokens_file=str(tokens)))) as url:
        with pytest.raises(anthropic.AuthenticationError):
            anthropic.Anthropic(base_url=url, api_key="wrong-token-000000", max_retries=0).messages.count_tokens(
                model="echo", messages=HI)
        ann = anthropic.Anthropic(base_url=url, api_key="ann-token-0123456789", max_retries=0)
        assert ann.messages.count_tokens(model="echo", messages=HI).input_tokens >= 1
        with pytest.raises(anthropic.PermissionDeniedError):
            ann.messages.count_tokens(model=MODEL, messages=HI)


THOUGHT, SIGNATURE = "The user wants two sums.", "sig-AAA"  # what an_thinking_tools() streams
THINKING = {"type": "enabled", "budget_tokens": 1024}


def test_streamed_thinking_reaches_the_client_signed_and_redacted_blocks_whole(client: anthropic.Anthropic,
                                                                              server: ScriptedServer) -> None:
    server.enqueue(an_thinking_tools())
    with client.messages.stream(model=MODEL, max_tokens=2048, messages=HI, tools=TOOLS, thinking=THINKING) as stream:
        deltas = [e.delta.type for e in stream if e.type == "content_block_delta"]
        final = stream.get_final_message()
    assert "signature_delta" in deltas
    assert deltas.index("signature_delta") > deltas.index("thinking_delta")
    assert [b.type for b in final.content] == ["thinking", "redacted_thinking", "text", "tool_use", "tool_use"]
    assert (final.content[0].thinking, final.content[0].signature) == (THOUGHT, SIGNATURE)
    assert final.content[1].data == "opaque-blob"


def test_a_whole_answer_carries_the_signature_and_redacted_thinking(client: anthropic.Anthropic,
                                                                    server: ScriptedServer) -> None:
    server.enqueue(an_message({"type": "thinking", "thinking": THOUGHT, "signature": SIGNATURE},
                              {"type": "redacted_thinking", "data": "opaque-blob"},
                              {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 1}},
                              stop_reason="tool_use"))
    reply = client.messages.create(model=MODEL, max_tokens=2048, messages=HI, tools=TOOLS, thinking=THINKING)
    assert [b.model_dump(exclude_none=True) for b in reply.content[:2]] == [
        {"type": "thinking", "thinking": THOUGHT, "signature": SIGNATURE},
        {"type": "redacted_thinking", "data": "opaque-blob"}]


@pytest.mark.parametrize("stream", [True, False])
def test_a_tool_loop_with_thinking_hands_the_signed_blocks_back_unchanged(client: anthropic.Anthropic,
                                                                         server: ScriptedServer, stream: bool) -> None:
    """The upstream refuses unsigned or altered thinking, and a tool_use turn that does not start with it."""
    refuse_like_anthropic(server, signed={SIGNATURE: THOUGHT})
    server.enqueue(an_thinking_tools(), an_message({"type": "text", "text": "The sum is 3."}))
    with client.messages.stream(model=MODEL, max_tokens=2048, messages=HI, tools=TOOLS, thinking=THINKING) as s:
        first = s.get_final_message()
    uses = [b for b in first.content if b.type == "tool_use"]
    history = [*HI, {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": u.id, "content": "3"}
                                            for u in uses]}]
    if stream:
        server.requests.clear()
        server.enqueue(an_text("The sum is 3."))
        with client.messages.stream(model=MODEL, max_tokens=2048, messages=history, tools=TOOLS,
                                    thinking=THINKING) as s:
            assert "".join(s.text_stream) == "The sum is 3."
    else:
        reply = client.messages.create(model=MODEL, max_tokens=2048, messages=history, tools=TOOLS, thinking=THINKING)
        assert reply.content[0].text == "The sum is 3."
    sent = server.requests[-1].body["messages"][1]["content"]
    assert sent[:2] == [{"type": "thinking", "thinking": THOUGHT, "signature": SIGNATURE},
                        {"type": "redacted_thinking", "data": "opaque-blob"}]
    assert [b["type"] for b in sent[2:]] == ["text", "tool_use", "tool_use"]


def test_the_scripted_upstream_refuses_unsigned_thinking_before_a_tool_use(server: ScriptedServer) -> None:
    refuse_like_anthropic(server, signed={SIGNATURE: THOUGHT})
    use = {"type": "tool_use", "id": "t", "name": "add", "input": {}}
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "3"}]}
    body = {"model": "m", "max_tokens": 2048, "thinking": THINKING, "tools": TOOLS}
    for turn, said in (([use], "must start with a thinking block"),
                       ([{"type": "thinking", "thinking": THOUGHT}, use], "signature: Field required"),
                       ([{"type": "thinking", "thinking": "edited", "signature": SIGNATURE}, use], "Invalid")):
        r = httpx.post(f"{server.url}/v1/messages",
                       json={**body, "messages": [*HI, {"role": "assistant", "content": turn}, result]})
        assert r.status_code == 400 and said in r.json()["error"]["message"], r.text


def test_unsigned_thinking_from_another_provider_is_not_sent_to_anthropic(client: anthropic.Anthropic,
                                                                         server: ScriptedServer) -> None:
    """Reasoning this facade relayed from another provider has an empty signature, which Anthropic refuses."""
    refuse_like_anthropic(server, signed={SIGNATURE: THOUGHT})
    server.enqueue(an_message({"type": "text", "text": "fine"}))
    history = [*HI, {"role": "assistant", "content": [{"type": "thinking", "thinking": "mused", "signature": ""},
                                                      {"type": "text", "text": "hello"}]},
               {"role": "user", "content": "and?"}]
    assert client.messages.create(model=MODEL, max_tokens=50, messages=history).content[0].text == "fine"
    sent = server.requests[-1].body["messages"][1]
    assert sent["role"] == "assistant" and "mused" not in json.dumps(sent) and "hello" in json.dumps(sent)
