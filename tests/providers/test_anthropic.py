"""Anthropic Messages provider and its extensions against a scripted loopback server."""

from __future__ import annotations

import pytest
from agent_core import MalformedResponseError
from agent_core_plugins.anthropic_thinking import AnthropicThinkingExtension
from agent_core_plugins.anthropic_tools import AnthropicToolsExtension
from agent_core_providers.anthropic import AnthropicProvider

from ._anthropic_api import refuse_like_anthropic
from ._driver import arun_turn, run_turn
from ._server import json_reply, sse, sse_reply
from ._wire import an_block, an_end, an_event, an_start, an_text, an_thinking_tools
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


def test_text_blocks_around_a_tool_block_each_keep_their_own_text(server):
    # the streaming text lives in its own state key and is written into its block when the
    # block stops, another starts, or the call ends: every way must land in the right block
    def text(index, *parts):
        return an_block(index, {"type": "text", "text": ""}, [{"type": "text_delta", "text": p} for p in parts])

    tool = an_block(1, {"type": "tool_use", "id": "toolu_9", "name": "add", "input": {}},
                    [{"type": "input_json_delta", "partial_json": '{"a":1}'}])
    orphan = an_event("content_block_delta", index=3, delta={"type": "text_delta", "text": "no start"})
    unclosed = [an_event("content_block_start", index=4, content_block={"type": "text", "text": ""}),
                an_event("content_block_delta", index=4, delta={"type": "text_delta", "text": "never stopped"})]
    server.enqueue(sse_reply(an_start(), *text(0, "Be", "fore"), *tool, *text(2, "af", "ter"), orphan,
                             *unclosed, *an_end("tool_use")))
    turn = run_turn(AnthropicProvider(), exts(), USER, config(server))
    assert [p["content"] for p in turn.partials] == ["Be", "fore", "af", "ter", "no start", "never stopped"]
    assert turn.native[-1]["content"] == [
        {"type": "text", "text": "Before"},
        {"type": "tool_use", "id": "toolu_9", "name": "add", "input": {"a": 1}},
        {"type": "text", "text": "after"},
        {"type": "text", "text": "no start"},
        {"type": "text", "text": "never stopped"},
    ]
    assert turn.finals[0]["content"] == "Beforeafterno startnever stopped"


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
    # thinking streams as reasoning partials; the signature and the redacted block follow, each in one of its own
    assert [p["metadata"] for p in turn.partials if p.get("metadata")] == [
        {"reasoning": "The user wants "}, {"reasoning": "two sums."}, {"thinking_signature": "sig-AAA"},
        {"redacted_thinking": "opaque-blob"}]
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
    assert AnthropicThinkingExtension().required_tags() == ["provider:anthropic"]  # blocks are kept from any model
    assert AnthropicToolsExtension().accepted_tool_schema_formats({}) == ["anthropic.messages"]
    assert AnthropicToolsExtension().emitted_tool_call_formats({}) == ["openai.chat_completions"]


def test_key_never_in_state(server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env-99999")
    server.enqueue(an_text("a"))
    turn = run_turn(AnthropicProvider(), exts(), USER, {"base_url": server.url, "model": "claude-test"})
    assert server.requests[0].headers["x-api-key"] == "sk-ant-env-99999"
    assert "sk-ant-env-99999" not in repr(turn.state) + repr(turn.native) + repr(turn.finals)


# -- stream shapes seen from real vendors ----------------------------------------


def tool_block(index, input_parts, *, id="toolu_cut", name="write", stop=True):
    deltas = [{"type": "input_json_delta", "partial_json": p} for p in input_parts]
    blocks = an_block(index, {"type": "tool_use", "id": id, "name": name, "input": {}}, deltas)
    return blocks if stop else blocks[:-1]


@pytest.mark.parametrize("stop", ["max_tokens", "model_context_window_exceeded"])
def test_input_cut_by_max_tokens_is_kept_raw_and_marked_incomplete(server, stop):
    server.enqueue(
        sse_reply(
            an_start(),
            *an_block(0, {"type": "text", "text": ""}, [{"type": "text_delta", "text": "Writing it."}]),
            *tool_block(1, ['{"path": "/tmp/a", ', '"text": "Once upon']),
            *an_end(stop, 4096),
        )
    )
    turn = run_turn(AnthropicProvider(), exts(), USER, config(server))
    final = turn.finals[0]
    assert final["content"] == "Writing it."
    assert final["metadata"]["stop_reason"] == stop
    assert final["metadata"]["tool_calls"] == [
        {
            "id": "toolu_cut",
            "type": "function",
            "function": {"name": "write", "arguments": '{"path": "/tmp/a", "text": "Once upon'},
            "incomplete": True,
        }
    ]
    # The native answer no longer claims the call: the API must not see it as made.
    native = turn.native[-1]
    assert native["content"] == [{"type": "text", "text": "Writing it."}]
    assert native["_cut_tool_uses"] == [
        {"id": "toolu_cut", "name": "write", "arguments": '{"path": "/tmp/a", "text": "Once upon'}
    ]


def test_tool_use_without_content_block_stop_is_incomplete(server):
    server.enqueue(
        sse_reply(
            an_start(),
            *tool_block(0, ['{"a": 1}'], id="toolu_ok", name="add"),
            *tool_block(1, ['{"path": "/tm'], stop=False),
            *an_end("tool_use", 30),
        )
    )
    turn = run_turn(AnthropicProvider(), exts(), USER, config(server))
    calls = turn.finals[0]["metadata"]["tool_calls"]
    assert [(c["id"], c["function"]["arguments"], c.get("incomplete")) for c in calls] == [
        ("toolu_ok", '{"a":1}', None),
        ("toolu_cut", '{"path": "/tm', True),
    ]
    assert [b["id"] for b in turn.native[-1]["content"]] == ["toolu_ok"]


def test_invalid_input_not_cut_keeps_its_raw_text(server):
    """Complete but not a JSON object: no LLMError, no {}; the engine tells the model (not marked incomplete)."""
    server.enqueue(sse_reply(an_start(), *tool_block(0, ["{oops"], id="toolu_bad", name="f"), *an_end("tool_use", 9)))
    turn = run_turn(AnthropicProvider(), exts(), USER, config(server))
    assert turn.finals[0]["metadata"]["tool_calls"] == [
        {"id": "toolu_bad", "type": "function", "function": {"name": "f", "arguments": "{oops"}}
    ]
    # The wire block keeps an object input, as the API demands; the raw text rides beside it, never sent.
    assert turn.native[-1]["content"] == [{"type": "tool_use", "id": "toolu_bad", "name": "f", "input": {}}]
    assert turn.native[-1]["_tool_arguments"] == {"toolu_bad": "{oops"}


def test_non_streamed_answer_ending_in_a_tool_use_under_max_tokens_is_incomplete(server):
    server.enqueue(
        json_reply(
            {
                "type": "message",
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Sure."},
                    {"type": "tool_use", "id": "t1", "name": "write", "input": {"path": "/tmp/a"}},
                ],
                "stop_reason": "max_tokens",
                "usage": {"input_tokens": 9, "output_tokens": 4096},
            }
        )
    )
    turn = run_turn(AnthropicProvider(), exts(), USER, config(server), stream=False)
    (call,) = turn.finals[0]["metadata"]["tool_calls"]
    assert call["incomplete"] is True and call["function"]["arguments"] == '{"path":"/tmp/a"}'
    assert turn.native[-1]["content"] == [{"type": "text", "text": "Sure."}]


def test_an_incomplete_call_and_its_result_are_never_sent_back(server):
    server.enqueue(
        sse_reply(
            an_start(),
            *tool_block(0, ['{"a": 1}'], id="toolu_ok", name="add"),
            *tool_block(1, ['{"pa']),
            *an_end("max_tokens", 50),
        ),
        an_text("ok"),
        an_text("ok"),
    )
    first = run_turn(AnthropicProvider(), exts(), USER, config(server))
    result = {"role": "tool", "content": "1", "metadata": {"tool_call_id": "toolu_ok"}}
    stray = {"role": "tool", "content": "never ran", "metadata": {"tool_call_id": "toolu_cut"}}

    run_turn(AnthropicProvider(), exts(), [result, stray], config(server), history=first.native)
    run_turn(AnthropicProvider(), exts(), [*USER, first.finals[0], result, stray], config(server))

    for request in server.requests[1:]:
        sent = request.body["messages"]
        assert sent[1:] == [
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "toolu_ok", "name": "add", "input": {"a": 1}}],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_ok", "content": "1"}]},
        ]


def test_tool_use_without_id_gets_one_used_for_its_result(server):
    no_args = [{"type": "input_json_delta", "partial_json": "{}"}]
    server.enqueue(
        sse_reply(
            an_start(),
            *an_block(0, {"type": "tool_use", "name": "add", "input": {}}, no_args),
            *an_end("tool_use", 5),
        ),
        an_text("done"),
    )
    first = run_turn(AnthropicProvider(), exts(), USER, config(server))
    (call,) = first.finals[0]["metadata"]["tool_calls"]
    assert call["id"].startswith("toolu_")
    assert first.native[-1]["content"][0]["id"] == call["id"]
    result = {"role": "tool", "content": "0", "metadata": {"tool_call_id": call["id"]}}
    run_turn(AnthropicProvider(), exts(), [result], config(server), history=first.native)
    sent = server.requests[1].body["messages"]
    assert sent[1]["content"][0]["id"] == sent[2]["content"][0]["tool_use_id"] == call["id"]


def test_unknown_block_types_are_kept_and_never_run(server):
    """A block type invented after this code, with deltas we cannot read: kept as it started, listed, not a call."""
    future = {"type": "hologram_tool_result", "tool_use_id": "srvtoolu_9", "content": {"frames": 3}}
    server.enqueue(
        sse_reply(
            an_start(),
            *an_block(
                0,
                {"type": "server_tool_use", "id": "srvtoolu_9", "name": "hologram", "input": {}},
                [{"type": "input_json_delta", "partial_json": '{"q": "cat"}'}],
            ),
            *an_block(1, future, [{"type": "hologram_delta", "frame": 4}]),
            *an_block(2, {"type": "text", "text": ""}, [{"type": "text_delta", "text": "Here."}]),
            *an_end("end_turn", 5),
        ),
        an_text("ok"),
    )
    turn = run_turn(AnthropicProvider(), exts(), USER, config(server))
    final = turn.finals[0]
    assert final["content"] == "Here." and "tool_calls" not in final["metadata"]
    assert final["metadata"]["server_tools"] == [
        {"type": "server_tool_use", "id": "srvtoolu_9", "name": "hologram", "input": {"q": "cat"}},
        future,
    ]
    run_turn(AnthropicProvider(), exts(), [{"role": "user", "content": "more"}], config(server), history=turn.native)
    assert server.requests[1].body["messages"][1]["content"][1] == future


MALFORMED = {
    "index null": {"type": "content_block_delta", "index": None, "delta": {"type": "text_delta", "text": "x"}},
    "a string delta": {"type": "content_block_delta", "index": 0, "delta": "x"},
    "text not a string": {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": 5}},
    "usage as strings": {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn"},
        "usage": {"output_tokens": "9"},
    },
    "block without type": {"type": "content_block_start", "index": 1, "content_block": ["text"]},
}


@pytest.mark.parametrize("label", list(MALFORMED))
def test_valid_json_in_a_wrong_shape_is_a_malformed_response(server, label):
    event = {**MALFORMED[label], "note": f"key {KEY}"}
    server.enqueue(
        sse_reply(
            an_start(),
            *an_block(0, {"type": "text", "text": ""}, [{"type": "text_delta", "text": "Hi"}])[:2],
            sse(event, event=event["type"]),
            *an_end(),
        )
    )
    with pytest.raises(MalformedResponseError) as info:
        run_turn(AnthropicProvider(), exts(), USER, config(server))
    text = str(info.value)
    assert info.value.provider == "anthropic" and event["type"] in text
    assert KEY not in text and "***" in text and len(text) < 400


def test_malformed_non_streamed_answer(server):
    server.enqueue(json_reply({"type": "message", "content": [{"text": "no type"}], "usage": {}}))
    with pytest.raises(MalformedResponseError, match="content block"):
        run_turn(AnthropicProvider(), exts(), USER, config(server), stream=False)


def test_non_streamed_tool_use_without_id_gets_one_in_the_native_history_too(server):
    server.enqueue(
        json_reply(
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "tool_use", "name": "add", "input": {"a": 1}}],
                "stop_reason": "tool_use",
                "usage": {"input_tokens": 3, "output_tokens": 5},
            }
        )
    )
    turn = run_turn(AnthropicProvider(), exts(), USER, config(server), stream=False)
    (call,) = turn.finals[0]["metadata"]["tool_calls"]
    assert call["id"].startswith("toolu_") and "incomplete" not in call
    assert turn.native[-1]["content"] == [{"type": "tool_use", "id": call["id"], "name": "add", "input": {"a": 1}}]


@pytest.mark.parametrize(("choice", "parallel", "sent"), [
    ("auto", None, {"type": "auto"}),
    ("none", False, {"type": "none"}),  # none takes no other key
    ("any", None, {"type": "any"}),
    ("required", False, {"type": "any", "disable_parallel_tool_use": True}),
    ("add", None, {"type": "tool", "name": "add"}),
    ({"type": "function", "function": {"name": "add"}}, True, {"type": "tool", "name": "add"}),
    ({"type": "tool", "name": "add"}, None, {"type": "tool", "name": "add"}),
    (None, False, {"type": "auto", "disable_parallel_tool_use": True}),
])
def test_every_tool_choice_form_is_sent_in_the_apis_shape(server, choice, parallel, sent):
    refuse_like_anthropic(server)
    server.enqueue(an_text("ok"))
    tools = [{"type": "function", "function": {"name": "add", "parameters": {"type": "object", "properties": {}}}}]
    extra = {k: v for k, v in (("tool_choice", choice), ("parallel_tool_calls", parallel)) if v is not None}
    turn = run_turn(AnthropicProvider(), exts(), USER, config(server, tools=tools, **extra))
    assert turn.finals[0]["content"] == "ok"
    assert server.requests[0].body["tool_choice"] == sent
