"""OpenAI Chat Completions provider and its extensions against a scripted loopback server."""

from __future__ import annotations


from agent_core import freeze
from agent_core_plugins.openai_reasoning import OpenAIReasoningExtension
from agent_core_plugins.openai_tools import OpenAIToolsExtension
from agent_core_providers.openai import OpenAIProvider

from ._driver import run_turn
from ._server import json_reply, sse_reply
from ._wire import OA_DONE, oa_chunk, oa_text, oa_tool_calls
from .conftest import run_async

KEY = "sk-test-0123456789abcdef"


def config(server, **extra):
    return {"base_url": f"{server.url}/v1", "api_key": KEY, "model": "m", "max_retries": 0, **extra}


def exts():
    return [OpenAIToolsExtension(), OpenAIReasoningExtension()]


USER = [{"role": "user", "content": "hi"}]


def test_plain_text_stream(server):
    server.enqueue(oa_text("Hel", "lo", " world"))
    turn = run_turn(OpenAIProvider(), exts(), USER, config(server))

    assert [p["content"] for p in turn.partials] == ["Hel", "lo", " world"]
    (final,) = turn.finals
    assert final["content"] == "Hello world"
    assert final["metadata"]["finish_reason"] == "stop"
    assert final["metadata"]["usage"] == {
        "input_tokens": 11,
        "output_tokens": 7,
        "total_tokens": 18,
        "cache_read_tokens": 4,
        "prompt_tokens_details": {"cached_tokens": 4},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }
    assert "tool_calls" not in final["metadata"] and "reasoning" not in final["metadata"]
    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.body["stream"] is True and request.body["stream_options"] == {"include_usage": True}
    assert request.body["messages"] == [{"role": "user", "content": "hi"}]
    assert turn.native[-1]["content"] == "Hello world"


def test_parallel_tool_calls_assembled_by_index(server):
    server.enqueue(oa_tool_calls())
    tools = [{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}]
    turn = run_turn(OpenAIProvider(), exts(), USER, config(server, tools=tools))

    calls = turn.finals[0]["metadata"]["tool_calls"]
    assert calls == [
        {"id": "call_a", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}},
        {"id": "call_b", "type": "function", "function": {"name": "mul", "arguments": '{"x": 3, "y": 4}'}},
    ]
    assert turn.finals[0]["metadata"]["finish_reason"] == "tool_calls"
    assert turn.native[-1]["tool_calls"] == calls  # the history carries them for the next turn
    assert server.requests[0].body["tools"] == tools


def test_reasoning_goes_to_metadata_not_content(server):
    server.enqueue(
        sse_reply(
            oa_chunk({"role": "assistant", "reasoning_content": "Think"}),
            oa_chunk({"reasoning_content": "ing..."}),
            oa_chunk({"reasoning": " more"}),  # Ollama/OpenRouter spelling
            oa_chunk({"content": "Answer"}, "stop"),
            OA_DONE,
        )
    )
    turn = run_turn(OpenAIProvider(), exts(), USER, config(server, reasoning_effort="low"))

    final = turn.finals[0]
    assert final["content"] == "Answer"
    assert final["metadata"]["reasoning"] == "Thinking... more"
    assert [p["metadata"]["reasoning"] for p in turn.partials if p.get("metadata")] == ["Think", "ing...", " more"]
    assert "".join(p["content"] for p in turn.partials) == "Answer"
    assert server.requests[0].body["reasoning_effort"] == "low"

    # The next request does not send the reasoning back.
    server.enqueue(oa_text("ok"))
    run_turn(OpenAIProvider(), exts(), [{"role": "user", "content": "next"}], config(server), history=turn.native)
    sent = server.requests[1].body["messages"]
    assert sent[1] == {"role": "assistant", "content": "Answer"}


def test_non_streaming_call(server):
    server.enqueue(
        json_reply(
            {
                "id": "x",
                "object": "chat.completion",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "tool_calls",
                        "message": {
                            "role": "assistant",
                            "content": None,
                            "reasoning_content": "hmm",
                            "tool_calls": [
                                {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}
                            ],
                        },
                    }
                ],
                "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
            }
        )
    )
    turn = run_turn(OpenAIProvider(), exts(), USER, config(server), stream=False)

    final = turn.finals[0]
    assert final["content"] == ""
    assert final["metadata"]["tool_calls"][0]["id"] == "c1"
    assert final["metadata"]["reasoning"] == "hmm"
    assert final["metadata"]["usage"]["input_tokens"] == 5
    assert server.requests[0].body["stream"] is False
    assert "stream_options" not in server.requests[0].body


def test_tool_results_and_multipart_to_wire(server):
    server.enqueue(oa_text("done"))
    messages = [
        {"role": "system", "content": "be brief"},
        {
            "role": "user",
            "content": "look",
            "multipartContent": [
                {"type": "image", "content": {"url": "https://example.invalid/cat.png"}},
                {"type": "text", "content": "and this"},
            ],
        },
        {
            "role": "assistant",
            "content": "",
            "metadata": {
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a":1}'}}]
            },
        },
        {"role": "tool", "content": "Result: 2", "metadata": {"tool_call_id": "c1", "tool_name": "add"}},
    ]
    run_turn(OpenAIProvider(), exts(), messages, config(server))
    sent = server.requests[0].body["messages"]
    assert sent[1]["content"] == [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "https://example.invalid/cat.png"}},
        {"type": "text", "text": "and this"},
    ]
    assert sent[2]["tool_calls"][0]["function"]["name"] == "add"
    assert sent[3] == {"role": "tool", "tool_call_id": "c1", "content": "Result: 2"}


def test_without_extensions_is_a_plain_text_provider(server):
    server.enqueue(oa_text("plain"))
    messages = [*USER, {"role": "tool", "content": "Result: 2", "metadata": {"tool_call_id": "c1"}}]
    turn = run_turn(OpenAIProvider(), [], messages, config(server, tools=[{"type": "function"}]))
    assert turn.finals[0]["content"] == "plain"
    body = server.requests[0].body
    assert "tools" not in body
    assert body["messages"][1] == {"role": "user", "content": "Result: 2"}


def test_config_wins_over_env_and_env_fills_gaps(server, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-000")
    server.enqueue(oa_text("a"), oa_text("b"))
    run_turn(OpenAIProvider(), [], USER, {"model": "m"})
    run_turn(OpenAIProvider(), [], USER, {"model": "m", "api_key": KEY})
    assert server.requests[0].headers["authorization"] == "Bearer sk-from-env-000"
    assert server.requests[1].headers["authorization"] == f"Bearer {KEY}"


def test_local_server_without_key_sends_no_auth(server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server.enqueue(oa_text("local"))
    run_turn(OpenAIProvider(), [], USER, {"base_url": f"{server.url}/v1", "model": "llama"})
    assert "authorization" not in server.requests[0].headers


def test_get_models_only_asks_when_told(server):
    provider = OpenAIProvider()
    assert provider.get_models({"model": "m", "base_url": f"{server.url}/v1"}) == [{"id": "m"}]
    assert server.requests == []
    server.enqueue(json_reply({"object": "list", "data": [{"id": "a", "object": "model"}, {"id": "b"}]}))
    models = provider.get_models(config(server, list_models=True))
    assert [m["id"] for m in models] == ["a", "b"]
    assert server.requests[0].method == "GET" and server.requests[0].path == "/v1/models"


def test_tags_and_formats():
    assert {"provider:openai", "streaming", "tools"} <= set(OpenAIProvider().get_tags({}, []))
    assert OpenAIToolsExtension().required_tags() == ["provider:openai"]
    assert OpenAIToolsExtension().accepted_tool_schema_formats({}) == ["openai.chat_completions"]
    assert OpenAIToolsExtension().emitted_tool_call_formats({}) == ["openai.chat_completions"]


def test_async_stream_and_call(server):
    server.enqueue(oa_tool_calls(), oa_text("x", "y"))

    async def main():
        from ._driver import arun_turn

        a = await arun_turn(OpenAIProvider(), exts(), USER, config(server))
        b = await arun_turn(OpenAIProvider(), exts(), USER, config(server), stream=True)
        return a, b

    tools_turn, text_turn = run_async(main)
    assert len(tools_turn.finals[0]["metadata"]["tool_calls"]) == 2
    assert text_turn.finals[0]["content"] == "xy"


def test_sync_and_async_agree(server):
    from ._driver import arun_turn

    server.enqueue(oa_tool_calls(), oa_tool_calls())
    sync_turn = run_turn(OpenAIProvider(), exts(), USER, config(server))
    async_turn = run_async(arun_turn, OpenAIProvider(), exts(), USER, config(server))
    assert (sync_turn.partials, sync_turn.finals, sync_turn.native) == (
        async_turn.partials,
        async_turn.finals,
        async_turn.native,
    )
    assert server.bodies[0] == server.bodies[1]


def test_frozen_state_never_holds_the_key(server):
    server.enqueue(oa_text("ok"))
    turn = run_turn(
        OpenAIProvider(),
        exts(),
        USER,
        config(server, extra_headers={"X-Trace": "t1", "Authorization": "Bearer proxy-secret"}),
    )
    text = repr(turn.state) + repr(turn.native) + repr(turn.finals) + repr(OpenAIProvider())
    assert KEY not in text and "proxy-secret" not in text
    # extra headers are credentials: sent, but never kept in the state
    assert turn.state["request"]["headers"] == freeze({"content-type": "application/json"})
    assert server.requests[0].headers["x-trace"] == "t1"
    assert server.requests[0].headers["authorization"] == "Bearer proxy-secret"  # extra header wins, sent at send time
