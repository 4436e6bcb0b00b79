"""Snapshots of what goes over the wire and what each extension changes.

A change to a request body or to an extension's output shows up here as a
diff in review (``__snapshots__/test_snapshots.ambr``; update with
``pytest --snapshot-update`` when the change is intended).
"""

from __future__ import annotations

import pytest
from agent_core import AgentCore, Message, thaw
from agent_core_plugins.anthropic_thinking import AnthropicThinkingExtension
from agent_core_plugins.anthropic_tools import AnthropicToolsExtension
from agent_core_plugins.openai_reasoning import OpenAIReasoningExtension
from agent_core_plugins.openai_tools import OpenAIToolsExtension
from agent_core_providers.anthropic import AnthropicProvider
from agent_core_providers.openai import OpenAIProvider

from ._driver import run_turn
from ._server import sse_reply
from ._wire import OA_DONE, an_text, an_thinking_tools, oa_chunk, oa_text, oa_tool_calls
from .test_e2e import Calculator, anthropic_replies, openai_replies

EXTENSIONS = [OpenAIToolsExtension, OpenAIReasoningExtension, AnthropicToolsExtension, AnthropicThinkingExtension]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_request_bodies_of_a_multi_turn_conversation_with_tools(server, provider, snapshot):
    """System prompt, a tool loop (call, result, answer), then a follow-up question."""
    replies = openai_replies(True) if provider == "openai" else anthropic_replies(True)
    server.enqueue(*replies, oa_text("Sure.") if provider == "openai" else an_text("Sure."))
    core = AgentCore(providers=[OpenAIProvider, AnthropicProvider], extensions=EXTENSIONS, tools=[Calculator])
    cfg = {
        "provider": provider,
        "base_url": server.url + ("/v1" if provider == "openai" else ""),
        "api_key": "sk-snap",
        "model": "snap-model",
        "stream": True,
        "temperature": 0.5,
        "max_tokens": 512,
        "thinking_budget": 1024,  # the recorded Anthropic answers think, as they do only when asked
    }
    session = core.create_session()
    session = core.add_message(session, Message(role="system", content="You are a calculator."))
    session = core.add_message(session, Message(role="user", content="What is 1 + 2?"))
    session = core.request(session, cfg).session
    session = core.add_message(session, Message(role="user", content="Say it again."))
    core.request(session, cfg)
    assert thaw(server.bodies) == snapshot


CONVERSATION = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Add and multiply."},
    {
        "role": "assistant",
        "content": "On it.",
        "metadata": {
            "reasoning": "two tools",
            "tool_calls": [
                {"id": "call_a", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}},
                {"id": "call_b", "type": "function", "function": {"name": "mul", "arguments": '{"x": 3, "y": 4}'}},
            ],
        },
    },
    {"role": "tool", "content": "Result: 3", "metadata": {"tool_call_id": "call_a", "tool_name": "add"}},
    {
        "role": "tool",
        "content": {
            "type": "provider_native_tool_result",
            "format": "openai.chat_completions",
            "content": [{"type": "text", "text": "Result: 12"}],
        },
        "metadata": {"tool_call_id": "call_b", "tool_name": "mul"},
    },
]
TOOLS_OPENAI = [{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}]
TOOLS_ANTHROPIC = [{"name": "add", "input_schema": {"type": "object"}}]

EXTENSION_CASES = {
    "openai_tools": (OpenAIProvider, OpenAIToolsExtension, oa_tool_calls, "/v1", {"tools": TOOLS_OPENAI}),
    "openai_reasoning": (
        OpenAIProvider,
        OpenAIReasoningExtension,
        lambda: sse_reply(
            oa_chunk({"role": "assistant", "reasoning_content": "Let me "}),
            oa_chunk({"reasoning_content": "think."}),
            oa_chunk({"content": "42"}, "stop"),
            OA_DONE,
        ),
        "/v1",
        {"reasoning_effort": "high"},
    ),
    "anthropic_tools": (AnthropicProvider, AnthropicToolsExtension, an_thinking_tools, "", {"tools": TOOLS_ANTHROPIC}),
    "anthropic_thinking": (
        AnthropicProvider,
        AnthropicThinkingExtension,
        an_thinking_tools,
        "",
        {"thinking_budget": 2048, "temperature": 0.3},
    ),
}


@pytest.mark.parametrize("name", list(EXTENSION_CASES))
def test_what_each_extension_adds(server, name, snapshot):
    """The same conversation and answer with the provider alone, then with the extension."""
    provider_cls, ext_cls, answer, path, extra = EXTENSION_CASES[name]
    cfg = {"base_url": server.url + path, "api_key": "sk-snap", "model": "snap-model", "max_retries": 0, **extra}
    out = {}
    for label, exts in (("provider_alone", []), ("with_extension", [ext_cls()])):
        server.enqueue(answer())
        turn = run_turn(provider_cls(), exts, CONVERSATION, cfg)
        out[label] = {
            "request_body": server.requests[-1].body,
            "partials": thaw(turn.partials),
            "native_answer": thaw(turn.native_finals),
            "core_answer": thaw(turn.finals),
        }
    assert out == snapshot
