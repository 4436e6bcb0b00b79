"""Anthropic Messages provider and its extensions against a scripted loopback server."""

from __future__ import annotations

from agent_core_plugins.anthropic_thinking import AnthropicThinkingExtension
from agent_core_plugins.anthropic_tools import AnthropicToolsExtension
from agent_core_providers.anthropic import AnthropicProvider

from ._driver import arun_turn, run_turn
from ._server import json_reply
from ._wire import an_text, an_thinking_tools
from .conftest import run_async

KEY = "sk-ant-test-0123456789"
USER = [{"role": "user", "content": "hi"}]


def config(server, **extra):
    return {"base_url": server.url, "api_key": KEY, "model": "claude-test", "max_retries": 0, **extra}


def exts():
    return [AnthropicThinkingExtension(), AnthropicToolsExtension()]


def test_plain_text_stream(server):
    server.enqueue(an_text("Hel", "lo"))
    turn = run_turn(AnthropicProvider(), exts(), USER, config(server))

    assert [p["content"] for p in turn.partials] == ["Hel", "lo"]
    (final,) = turn.finals
    assert final["content"] == "Hello"
    assert final["metadata"]["stop_reason"] == "end_turn"
    assert final["metadata"]["usage"] == {"input_tokens": 12, "output_tokens": 15, "cache_read_tokens": 3}
    (request,) = server.requests
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == KEY and request.headers["anthropic-version"] == "2023-06-01"
    assert request.body == {
        "model": "claude-test",
        "max_tokens": 4096,
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
    }


def test_thinking_and_parallel_tool_use(server):
    server.enqueue(an_thinking_tools())
    tools = [
        {"name": "add", "description": "a+b", "input_schema": {"type": "object"}},
        {"type": "function", "function": {"name": "mul", "parameters": {"type": "object"}}},
    ]
    turn = run_turn(
        AnthropicProvider(), exts(), USER, config(server, tools=tools, thinking_budget=2048, temperature=0.2)
    )

    final = turn.finals[0]
    assert final["content"] == "Let me compute."
    assert final["metadata"]["reasoning"] == "The user wants two sums."
    assert final["metadata"]["tool_calls"] == [
        {"id": "toolu_1", "type": "function", "function": {"name": "add", "arguments": '{"a":1,"b":2}'}},
        {"id": "toolu_2", "type": "function", "function": {"name": "mul", "arguments": '{"x":3,"y":4}'}},
    ]
    assert final["metadata"]["stop_reason"] == "tool_use"
    assert [p["metadata"]["reasoning"] for p in turn.partials if p.get("metadata")] == ["The user wants ", "two sums."]
    # The native answer keeps every block, signed, in stream order, for the next turn.
    assert turn.native[-1]["content"] == [
        {"type": "thinking", "thinking": "The user wants two sums.", "signature": "sig-AAA"},
        {"type": "redacted_thinking", "data": "opaque-blob"},
        {"type": "text", "text": "Let me compute."},
        {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 1, "b": 2}},
        {"type": "tool_use", "id": "toolu_2", "name": "mul", "input": {"x": 3, "y": 4}},
    ]
    body = server.requests[0].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert "temperature" not in body  # the API refuses a custom temperature with thinking
    assert [t["name"] for t in body["tools"]] == ["add", "mul"]
    assert body["tools"][1] == {"name": "mul", "input_schema": {"type": "object"}}


def test_next_turn_sends_thinking_back_and_merges_tool_results(server):
    server.enqueue(an_thinking_tools(), an_text("3 and 12"))
    first = run_turn(AnthropicProvider(), exts(), USER, config(server, thinking_budget=2048))
    results = [
        {"role": "tool", "content": "Result: 3", "metadata": {"tool_call_id": "toolu_1", "tool_name": "add"}},
        {"role": "tool", "content": "Result: 12", "metadata": {"tool_call_id": "toolu_2", "tool_name": "mul"}},
    ]
    second = run_turn(AnthropicProvider(), exts(), results, config(server, thinking_budget=2048), history=first.native)

    assert second.finals[0]["content"] == "3 and 12"
    sent = server.requests[1].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert sent[1]["content"][0] == {"type": "thinking", "thinking": "The user wants two sums.", "signature": "sig-AAA"}
    assert sent[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "Result: 3"},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "Result: 12"},
    ]


def test_system_goes_on_top_and_same_roles_merge(server):
    server.enqueue(an_text("ok"))
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "one"},
        {
            "role": "user",
            "content": "two",
            "multipartContent": [{"type": "image", "content": {"url": "data:image/png;base64,iVBORw0KGgo="}}],
        },
        {"role": "assistant", "content": ""},  # empty: dropped, not sent
        {"role": "system", "content": "Answer in French."},
    ]
    run_turn(AnthropicProvider(), exts(), messages, config(server))
    body = server.requests[0].body
    assert body["system"] == "Be brief.\n\nAnswer in French."
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "one"},
                {"type": "text", "text": "two"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
            ],
        }
    ]


def test_history_rebuilt_from_core_messages_keeps_thinking(server):
    """When the native history is rebuilt from core messages, the signed blocks come back from metadata."""
    server.enqueue(an_thinking_tools(), an_text("done"))
    first = run_turn(AnthropicProvider(), exts(), USER, config(server, thinking_budget=2048))
    core = [
        *USER,
        first.finals[0],
        {"role": "tool", "content": "3", "metadata": {"tool_call_id": "toolu_1"}},
        {"role": "tool", "content": "12", "metadata": {"tool_call_id": "toolu_2"}},
    ]
    run_turn(AnthropicProvider(), exts(), core, config(server, thinking_budget=2048))
    assert server.requests[1].body["messages"] == server.requests[0].body["messages"] + [
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "The user wants two sums.", "signature": "sig-AAA"},
                {"type": "redacted_thinking", "data": "opaque-blob"},
                {"type": "text", "text": "Let me compute."},
                {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 1, "b": 2}},
                {"type": "tool_use", "id": "toolu_2", "name": "mul", "input": {"x": 3, "y": 4}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "3"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "12"},
            ],
        },
    ]


def test_non_streaming_call(server):
    server.enqueue(
        json_reply(
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-test",
                "content": [
                    {"type": "thinking", "thinking": "hm", "signature": "s"},
                    {"type": "text", "text": "Hi"},
                    {"type": "tool_use", "id": "t1", "name": "add", "input": {"a": 1}},
                ],
                "stop_reason": "tool_use",
                "usage": {"input_tokens": 9, "output_tokens": 4},
            }
        )
    )
    turn = run_turn(AnthropicProvider(), exts(), USER, config(server), stream=False)
    final = turn.finals[0]
    assert final["content"] == "Hi" and final["metadata"]["reasoning"] == "hm"
    assert final["metadata"]["tool_calls"][0]["function"] == {"name": "add", "arguments": '{"a":1}'}
    assert final["metadata"]["usage"] == {"input_tokens": 9, "output_tokens": 4}
    assert server.requests[0].body["stream"] is False


def test_async_matches_sync(server):
    server.enqueue(an_thinking_tools(), an_thinking_tools())
    sync_turn = run_turn(AnthropicProvider(), exts(), USER, config(server))
    async_turn = run_async(arun_turn, AnthropicProvider(), exts(), USER, config(server))
    assert (sync_turn.partials, sync_turn.finals, sync_turn.native) == (
        async_turn.partials,
        async_turn.finals,
        async_turn.native,
    )


def test_without_extensions_is_a_plain_text_provider(server):
    server.enqueue(an_text("plain"))
    messages = [*USER, {"role": "tool", "content": "Result: 2", "metadata": {"tool_call_id": "t"}}]
    turn = run_turn(AnthropicProvider(), [], messages, config(server, tools=[{"name": "x"}], thinking_budget=2048))
    assert turn.finals[0]["content"] == "plain"
    body = server.requests[0].body
    assert "tools" not in body and "thinking" not in body
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "text", "text": "Result: 2"}]}
    ]


def test_tags_follow_the_model():
    provider = AnthropicProvider()
    assert "thinking" in provider.get_tags({"model": "claude-sonnet-4-5"}, [])
    assert "thinking" in provider.get_tags({"model": "claude-3-7-sonnet-latest"}, [])
    assert "thinking" not in provider.get_tags({"model": "claude-3-5-haiku-latest"}, [])
    assert {"provider:anthropic", "streaming", "tools"} <= set(provider.get_tags({}, []))
    assert AnthropicThinkingExtension().required_tags() == ["provider:anthropic", "thinking"]
    assert AnthropicToolsExtension().accepted_tool_schema_formats({}) == ["anthropic.messages"]
    assert AnthropicToolsExtension().emitted_tool_call_formats({}) == ["openai.chat_completions"]


def test_key_never_in_state(server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env-99999")
    server.enqueue(an_text("a"))
    turn = run_turn(AnthropicProvider(), exts(), USER, {"base_url": server.url, "model": "claude-test"})
    assert server.requests[0].headers["x-api-key"] == "sk-ant-env-99999"
    assert "sk-ant-env-99999" not in repr(turn.state) + repr(turn.native) + repr(turn.finals)
