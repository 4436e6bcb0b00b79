"""End to end through AgentCore: both providers, a tool loop, sync and async, streaming or not."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from agent_core import AgentCore, Message, ProviderRequestCancelled
from agent_core_plugins.anthropic_thinking import AnthropicThinkingExtension
from agent_core_plugins.anthropic_tools import AnthropicToolsExtension
from agent_core_plugins.openai_reasoning import OpenAIReasoningExtension
from agent_core_plugins.openai_tools import OpenAIToolsExtension
from agent_core_providers.anthropic import AnthropicProvider
from agent_core_providers.openai import OpenAIProvider

from ._server import Delay, json_reply, sse_reply
from ._wire import OA_DONE, an_block, an_end, an_start, an_text, oa_chunk, oa_text
from .conftest import run_async

KEY = "sk-e2e-secret-key-42"
EXTENSIONS = [OpenAIToolsExtension, OpenAIReasoningExtension, AnthropicToolsExtension, AnthropicThinkingExtension]


class Calculator:
    name = "calculator"
    version = "1.0.0"

    def get_tool_schemas(self, state):
        params = {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}
        return [{"type": "function", "function": {"name": "add", "description": "a + b", "parameters": params}}]

    def execute_tool(self, tool_name, payload, state):
        return {"success": True, "result": payload["a"] + payload["b"]}


def make_core() -> AgentCore:
    return AgentCore(providers=[OpenAIProvider, AnthropicProvider], extensions=EXTENSIONS, tools=[Calculator])


# Scripted answers: (1) ask for add(1, 2); (2) answer with text.


def openai_replies(stream: bool):
    if stream:
        return [
            sse_reply(
                oa_chunk({"role": "assistant", "reasoning_content": "need a sum"}),
                oa_chunk(
                    {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "add", "arguments": '{"a": 1,'},
                            }
                        ]
                    }
                ),
                oa_chunk({"tool_calls": [{"index": 0, "function": {"arguments": ' "b": 2}'}}]}, "tool_calls"),
                oa_chunk(usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}, choices=False),
                OA_DONE,
            ),
            oa_text("The sum ", "is 3.", usage={"prompt_tokens": 20, "completion_tokens": 4, "total_tokens": 24}),
        ]
    return [
        json_reply(
            {
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "tool_calls",
                        "message": {
                            "role": "assistant",
                            "content": None,
                            "tool_calls": [
                                {
                                    "id": "call_1",
                                    "type": "function",
                                    "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'},
                                }
                            ],
                        },
                    }
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5},
            }
        ),
        json_reply(
            {
                "choices": [
                    {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "The sum is 3."}}
                ],
                "usage": {"prompt_tokens": 20, "completion_tokens": 4},
            }
        ),
    ]


def anthropic_replies(stream: bool):
    if stream:
        return [
            sse_reply(
                an_start(10),
                *an_block(
                    0,
                    {"type": "thinking", "thinking": ""},
                    [
                        {"type": "thinking_delta", "thinking": "need a sum"},
                        {"type": "signature_delta", "signature": "sig-1"},
                    ],
                ),
                *an_block(
                    1,
                    {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {}},
                    [
                        {"type": "input_json_delta", "partial_json": '{"a": 1,'},
                        {"type": "input_json_delta", "partial_json": ' "b": 2}'},
                    ],
                ),
                *an_end("tool_use", 5),
            ),
            sse_reply(
                an_start(20),
                *an_block(
                    0,
                    {"type": "text", "text": ""},
                    [{"type": "text_delta", "text": "The sum "}, {"type": "text_delta", "text": "is 3."}],
                ),
                *an_end("end_turn", 4),
            ),
        ]
    return [
        json_reply(
            {
                "type": "message",
                "role": "assistant",
                "stop_reason": "tool_use",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 1, "b": 2}}],
                "usage": {"input_tokens": 10, "output_tokens": 5},
            }
        ),
        json_reply(
            {
                "type": "message",
                "role": "assistant",
                "stop_reason": "end_turn",
                "content": [{"type": "text", "text": "The sum is 3."}],
                "usage": {"input_tokens": 20, "output_tokens": 4},
            }
        ),
    ]


CASES = {
    "openai": (openai_replies, "/v1"),
    "anthropic": (anthropic_replies, ""),
}


def config(server, provider: str, stream: bool, **extra):
    base = server.url + CASES[provider][1]
    return {
        "provider": provider,
        "base_url": base,
        "api_key": KEY,
        "model": "claude-sonnet-4-5",
        "stream": stream,
        "max_retries": 0,
        **extra,
    }


def check_tool_loop(result, server, provider: str) -> None:
    assert result.outcome.status == "finished", result.outcome
    roles = [m.role for m in result.final_messages]
    assert roles == ["assistant", "tool", "assistant"]
    call = result.final_messages[0].metadata["tool_calls"][0]
    assert call["function"]["name"] == "add"
    assert result.final_messages[1].metadata["tool_call_id"] == call["id"]
    assert "3" in str(result.final_messages[1].content)
    assert result.final_messages[-1].content == "The sum is 3."
    assert (result.usage.input_tokens, result.usage.output_tokens) == (30, 9)
    assert len(server.requests) == 2
    # The tool result went back in the provider's own wire shape.
    second = server.requests[1].body["messages"]
    if provider == "openai":
        assert second[-1]["role"] == "tool" and second[-1]["tool_call_id"] == "call_1"
    else:
        assert second[-1]["content"][0]["type"] == "tool_result"
        assert second[-1]["content"][0]["tool_use_id"] == "toolu_1"
    # The key is nowhere in what the engine keeps.
    assert KEY not in result.session.to_json().decode()


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "call"])
def test_sync_tool_loop(server, provider, stream):
    replies, _ = CASES[provider]
    server.enqueue(*replies(stream))
    core = make_core()
    session = core.add_message(core.create_session(), Message(role="user", content="add 1 and 2"))
    result = core.request(session, config(server, provider, stream, thinking_budget=1024 if stream else 0))
    check_tool_loop(result, server, provider)
    if stream:
        assert result.final_messages[0].metadata["reasoning"] == "need a sum"


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "call"])
def test_async_tool_loop(server, provider, stream):
    replies, _ = CASES[provider]
    server.enqueue(*replies(stream))
    core = make_core()
    session = core.add_message(core.create_session(), Message(role="user", content="add 1 and 2"))
    result = run_async(core.arequest, session, config(server, provider, stream))
    check_tool_loop(result, server, provider)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_stream_events_and_next_turn_reuses_native_history(server, provider):
    replies, _ = CASES[provider]
    server.enqueue(*replies(True))
    core = make_core()
    session = core.add_message(core.create_session(), Message(role="user", content="add 1 and 2"))
    cfg = config(server, provider, True, thinking_budget=1024)
    events = list(core.stream_request(session, cfg))
    kinds = [e.type for e in events]
    assert kinds[0] == "start" and kinds[-1] == "done"
    assert {"partial", "final", "tool_call", "tool_result"} <= set(kinds)
    text = "".join(e.message.content for e in events if e.type == "partial" and e.iteration == 2)
    assert text == "The sum is 3."

    session = core.add_message(events[-1].session, Message(role="user", content="thanks"))
    server.enqueue(oa_text("You're welcome.") if provider == "openai" else an_text("You're welcome."))
    result = core.request(session, cfg)
    assert result.final_messages[-1].content == "You're welcome."
    sent = server.requests[2].body["messages"]
    if provider == "anthropic":  # the signed thinking block went back, untouched
        assert sent[1]["content"][0] == {"type": "thinking", "thinking": "need a sum", "signature": "sig-1"}
    else:  # reasoning is never sent back
        assert all("reasoning_content" not in m for m in sent)
    assert [m["role"] for m in sent][-1] == "user"


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_cancel_through_the_engine(server, provider):
    first = (
        oa_chunk({"content": "tick "})
        if provider == "openai"
        else an_block(0, {"type": "text", "text": ""}, [{"type": "text_delta", "text": "tick "}])[1]
    )
    opening = (
        [oa_chunk({"role": "assistant"})]
        if provider == "openai"
        else [an_start(), an_block(0, {"type": "text", "text": ""}, [])[0]]
    )
    server.enqueue(sse_reply(*opening, first, *[p for _ in range(50) for p in (Delay(0.1), first)]))
    core = make_core()
    session = core.add_message(core.create_session(), Message(role="user", content="count"))
    started = time.monotonic()
    events = []
    for event in core.stream_request(session, config(server, provider, True), request_id="rq-1"):
        events.append(event)
        if event.type == "partial" and len(events) == 3:
            threading.Thread(target=core.cancel_request, args=("rq-1",)).start()
    assert time.monotonic() - started < 3.0  # the stream would run 5 s
    done = events[-1]
    assert done.type == "done" and done.outcome.status == "stopped" and done.outcome.reason == "cancelled"


def test_async_cancel_through_the_engine(server):
    server.enqueue(
        sse_reply(
            oa_chunk({"content": "tick "}),
            *[p for _ in range(50) for p in (Delay(0.1), oa_chunk({"content": "tick "}))],
        )
    )
    core = make_core()
    session = core.add_message(core.create_session(), Message(role="user", content="count"))

    async def main():
        async def cancel_later():
            await asyncio.sleep(0.3)
            core.cancel_request("rq-2")

        task = asyncio.create_task(cancel_later())
        with pytest.raises(ProviderRequestCancelled):
            await core.arequest(session, config(server, "openai", True), request_id="rq-2")
        await task

    started = time.monotonic()
    run_async(main)
    assert time.monotonic() - started < 3.0


def test_discovered_through_entry_points():
    core = AgentCore.discover()
    assert {"openai", "anthropic"} <= set(core.plugins("provider"))
    assert {"openai_tools", "openai_reasoning", "anthropic_tools", "anthropic_thinking"} <= set(
        core.plugins("extension")
    )
    on = lambda cfg: {str(e) for e in core.resolve(cfg).extensions}  # noqa: E731
    budget = "tool_output_budget"  # bundled, on for every provider (as is compact_history, an action only)
    on = lambda cfg: {str(e) for e in core.resolve(cfg).extensions} - {"compact_history"}  # noqa: E731
    # anthropic_thinking runs with the anthropic provider whatever the budget (it keeps blocks that arrive)
    assert on({"provider": "anthropic", "model": "claude-sonnet-4-5"}) == {"anthropic_tools", "anthropic_thinking",
                                                                           budget}
    thinking = {"provider": "anthropic", "model": "claude-sonnet-4-5", "thinking_budget": 2048}
    assert on(thinking) == {"anthropic_tools", "anthropic_thinking", budget}
    # think_tags (bundled) runs wherever the provider does not separate reasoning itself
    assert on({"provider": "anthropic", "model": "claude-3-5-haiku-latest"}) == {
        "anthropic_tools", "anthropic_thinking", "think_tags", budget}
    assert on({"provider": "openai"}) == {"openai_tools", "openai_reasoning", "think_tags", budget}
    assert on({"provider": "openai", "disabled_plugins": ["openai_tools", "openai_reasoning", budget]}) == {
        "think_tags"}
    assert "compact_history" in {str(e) for e in core.resolve({"provider": "openai"}).extensions}
