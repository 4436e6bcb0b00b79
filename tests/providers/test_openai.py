"""OpenAI Chat Completions provider and its extensions against a scripted loopback server."""

from __future__ import annotations

import pytest
from agent_core import AgentCore, ErrorEvent, LLMError, MalformedResponseError, Message, freeze
from agent_core_plugins.openai_reasoning import OpenAIReasoningExtension
from agent_core_plugins.openai_tools import OpenAIToolsExtension
from agent_core_providers.openai import OpenAIProvider

from ._driver import run_turn
from ._server import json_reply, sse, sse_reply
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
    owners = [e["plugin"] for e in AgentCore([OpenAIProvider], [OpenAIReasoningExtension]).get_config_schema()
              if e["key"] == "reasoning_effort"]
    assert owners == ["openai"]  # one declaration, by the provider that sends it

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


# -- stream shapes seen from real vendors ----------------------------------------


def tool_delta(**fields):
    return {"tool_calls": [fields]}


def test_two_calls_at_one_index_stay_two_calls(server):
    """Some servers number every call 0; a new id at the same index is a new call, not more arguments."""
    server.enqueue(
        sse_reply(
            oa_chunk({"role": "assistant"}),
            oa_chunk(tool_delta(index=0, id="call_a", type="function", function={"name": "add", "arguments": '{"a'})),
            oa_chunk(tool_delta(index=0, function={"arguments": '":1}'})),
            oa_chunk(tool_delta(index=0, id="call_b", function={"name": "mul", "arguments": '{"b":2}'})),
            oa_chunk({}, "tool_calls"),
            OA_DONE,
        )
    )
    turn = run_turn(OpenAIProvider(), exts(), USER, config(server))
    calls = turn.finals[0]["metadata"]["tool_calls"]
    assert [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in calls] == [
        ("call_a", "add", '{"a":1}'),
        ("call_b", "mul", '{"b":2}'),
    ]


def test_fragments_without_index_join_by_id_or_start_a_call(server):
    """A later chunk without ``index`` is its own call when it brings a new id; a bare fragment continues."""
    server.enqueue(
        sse_reply(
            oa_chunk(tool_delta(index=0, id="call_a", function={"name": "add", "arguments": '{"a":1}'})),
            oa_chunk(tool_delta(id="call_b", type="function", function={"name": "mul", "arguments": '{"b"'})),
            oa_chunk(tool_delta(function={"arguments": ":2}"})),
            oa_chunk(tool_delta(id="call_a", function={"arguments": ""})),  # the first call's id again: no new call
            oa_chunk({}, "tool_calls"),
            OA_DONE,
        )
    )
    turn = run_turn(OpenAIProvider(), exts(), USER, config(server))
    calls = turn.finals[0]["metadata"]["tool_calls"]
    assert [(c["id"], c["function"]["arguments"]) for c in calls] == [("call_a", '{"a":1}'), ("call_b", '{"b":2}')]
    assert turn.native[-1]["tool_calls"] == calls


def test_calls_without_ids_get_distinct_generated_ids(server):
    server.enqueue(
        sse_reply(
            oa_chunk(tool_delta(index=0, function={"name": "add", "arguments": "{}"})),
            oa_chunk(tool_delta(index=1, function={"name": "add", "arguments": "{}"})),
            oa_chunk({}, "tool_calls"),
            OA_DONE,
        )
    )
    turn = run_turn(OpenAIProvider(), exts(), USER, config(server))
    ids = [c["id"] for c in turn.finals[0]["metadata"]["tool_calls"]]
    assert len(set(ids)) == 2 and all(i.startswith("call_") for i in ids)
    assert [c["id"] for c in turn.native[-1]["tool_calls"]] == ids  # the native history says the same


def cut_call_reply():
    """The token limit hits inside the second call's arguments (finish_reason "length")."""
    return sse_reply(
        oa_chunk(tool_delta(index=0, id="call_ok", type="function", function={"name": "add", "arguments": '{"a":1}'})),
        oa_chunk(tool_delta(index=1, id="call_cut", type="function", function={"name": "write", "arguments": ""})),
        oa_chunk(tool_delta(index=1, function={"arguments": '{"path": "/tmp/a", "text": "Once upon'})),
        oa_chunk({}, "length"),
        oa_chunk(usage={"prompt_tokens": 5, "completion_tokens": 64, "total_tokens": 69}, choices=False),
        OA_DONE,
    )


def test_arguments_cut_by_the_token_limit_stay_raw_and_marked_incomplete(server):
    server.enqueue(cut_call_reply())
    turn = run_turn(OpenAIProvider(), exts(), USER, config(server))
    final = turn.finals[0]
    assert final["metadata"]["finish_reason"] == "length"
    assert final["metadata"]["tool_calls"] == [
        {"id": "call_ok", "type": "function", "function": {"name": "add", "arguments": '{"a":1}'}},
        {
            "id": "call_cut",
            "type": "function",
            "function": {"name": "write", "arguments": '{"path": "/tmp/a", "text": "Once upon'},
            "incomplete": True,
        },
    ]
    # The native answer only claims the complete call; the cut one is kept aside, never sent.
    native = turn.native[-1]
    assert [c["id"] for c in native["tool_calls"]] == ["call_ok"]
    assert [c["id"] for c in native["_incomplete_tool_calls"]] == ["call_cut"]


def test_a_cut_call_and_its_result_are_never_sent_back(server):
    """Next turn, from the stored native history and from core messages alike."""
    server.enqueue(cut_call_reply(), oa_text("ok"), oa_text("ok"))
    first = run_turn(OpenAIProvider(), exts(), USER, config(server))
    result = {"role": "tool", "content": "3", "metadata": {"tool_call_id": "call_ok"}}
    stray = {"role": "tool", "content": "never ran", "metadata": {"tool_call_id": "call_cut"}}

    run_turn(OpenAIProvider(), exts(), [result, stray], config(server), history=first.native)
    run_turn(OpenAIProvider(), exts(), [*USER, first.finals[0], result, stray], config(server))

    for request in server.requests[1:]:
        sent = request.body["messages"]
        assert [m["role"] for m in sent] == ["user", "assistant", "tool"]
        assert [c["id"] for c in sent[1]["tool_calls"]] == ["call_ok"]
        assert sent[2] == {"role": "tool", "tool_call_id": "call_ok", "content": "3"}
        assert "call_cut" not in repr(sent)


def test_non_streamed_answer_cut_inside_arguments(server):
    server.enqueue(
        json_reply(
            {
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "length",
                        "message": {
                            "role": "assistant",
                            "content": None,
                            "tool_calls": [
                                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"x": [1, 2'}}
                            ],
                        },
                    }
                ],
                "usage": {"prompt_tokens": 3, "completion_tokens": 16},
            }
        )
    )
    turn = run_turn(OpenAIProvider(), exts(), USER, config(server), stream=False)
    (call,) = turn.finals[0]["metadata"]["tool_calls"]
    assert call["incomplete"] is True and call["function"]["arguments"] == '{"x": [1, 2'
    assert "tool_calls" not in turn.native[-1]


def test_invalid_arguments_without_a_cut_are_kept_raw_and_not_marked(server):
    """Not cut (finish_reason tool_calls): the engine answers the model with an error result, as before."""
    server.enqueue(
        sse_reply(
            oa_chunk(tool_delta(index=0, id="c1", type="function", function={"name": "f", "arguments": "{oops"})),
            oa_chunk({}, "tool_calls"),
            OA_DONE,
        )
    )
    turn = run_turn(OpenAIProvider(), exts(), USER, config(server))
    assert turn.finals[0]["metadata"]["tool_calls"] == [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{oops"}}
    ]


def test_content_as_typed_parts_splits_text_and_thinking(server):
    """Magistral streams content as a list of parts: text to content, thinking to metadata["reasoning"]."""

    def parts(*items):
        return oa_chunk({"content": list(items)})

    server.enqueue(
        sse_reply(
            oa_chunk(
                {"role": "assistant", "content": [{"type": "thinking", "thinking": [{"type": "text", "text": "Two "}]}]}
            ),
            parts({"type": "thinking", "thinking": [{"type": "text", "text": "and two."}]}),
            parts({"type": "text", "text": "4"}, {"type": "text", "text": "!"}),
            oa_chunk({"content": ""}, "stop"),
            OA_DONE,
        )
    )
    turn = run_turn(OpenAIProvider(), exts(), USER, config(server))
    final = turn.finals[0]
    assert final["content"] == "4!" and final["metadata"]["reasoning"] == "Two and two."
    assert [(p["content"], (p.get("metadata") or {}).get("reasoning")) for p in turn.partials] == [
        ("", "Two "),
        ("", "and two."),
        ("4!", None),
    ]
    assert turn.native[-1]["content"] == "4!"


def test_groq_usage_in_x_groq(server):
    server.enqueue(
        sse_reply(
            oa_chunk({"content": "hi"}),
            oa_chunk({}, "stop"),
            sse(
                {
                    "id": "x",
                    "object": "chat.completion.chunk",
                    "choices": [],
                    "x_groq": {
                        "id": "req_1",
                        "usage": {"prompt_tokens": 7, "completion_tokens": 2, "queue_time": 0.01},
                    },
                }
            ),
            OA_DONE,
        )
    )
    turn = run_turn(OpenAIProvider(), exts(), USER, config(server))
    usage = turn.finals[0]["metadata"]["usage"]
    assert (usage["input_tokens"], usage["output_tokens"], usage["queue_time"]) == (7, 2, 0.01)


MALFORMED = {
    "usage as strings": {"choices": [], "usage": {"prompt_tokens": "11", "completion_tokens": "7"}},
    "tool call index null": {"choices": [{"index": 0, "delta": tool_delta(index=None, function={"name": "f"})}]},
    "choices of strings": {"choices": ["x"]},
    "a string delta": {"choices": [{"index": 0, "delta": "hello"}]},
    "choices an object": {"choices": {"0": {}}},
    "arguments not text": {"choices": [{"index": 0, "delta": tool_delta(index=0, function={"arguments": {"a": 1}})}]},
    "content a number": {"choices": [{"index": 0, "delta": {"content": 7}}]},
}


@pytest.mark.parametrize("label", list(MALFORMED))
def test_valid_json_in_a_wrong_shape_is_a_malformed_response(server, label):
    body = {"id": f"echo {KEY}", "object": "chat.completion.chunk", **MALFORMED[label]}
    server.enqueue(sse_reply(oa_chunk({"content": "partial "}), sse(body), OA_DONE))
    with pytest.raises(MalformedResponseError) as info:
        run_turn(OpenAIProvider(), exts(), USER, config(server))
    err = info.value
    assert err.provider == "openai" and isinstance(err, LLMError)
    assert "unexpected shape" in str(err) and "chat.completion.chunk" in str(err)  # quotes the line
    assert KEY not in str(err) and "***" in str(err)  # scrubbed before quoting
    assert len(str(err)) < 400  # bounded


def test_malformed_non_streamed_answer(server):
    server.enqueue(json_reply({"choices": [{"message": {"content": "x"}, "finish_reason": 1}]}))
    with pytest.raises(MalformedResponseError, match="finish_reason"):
        run_turn(OpenAIProvider(), exts(), USER, config(server), stream=False)


def test_malformed_stream_through_the_engine_is_a_provider_error_not_a_plugin_error(server):
    server.enqueue(sse_reply(sse({"choices": [{"index": 0, "delta": "hello"}]}), OA_DONE))
    core = AgentCore(providers=[OpenAIProvider], extensions=[OpenAIToolsExtension, OpenAIReasoningExtension])
    session = core.add_message(core.create_session(), Message(role="user", content="hi"))
    events = list(core.stream_request(session, {"provider": "openai", **config(server)}))
    (error,) = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.error.type == "MalformedResponseError"
    assert events[-1].outcome.status == "stopped" and events[-1].session == session


def test_a_text_chunk_hands_a_frozen_state_back_frozen():
    """The usual chunk's state comes back frozen when it came in frozen, so the engine has nothing to walk."""
    from agent_core import FrozenDict, FrozenList
    from agent_core.plugin_kit import text_of

    provider = OpenAIProvider()
    frozen = freeze({"openai": {}, "openai_text": None, "other": {"kept": [1]}})
    plain = {"openai": {}, "openai_text": None}
    for piece in ("Hel", "lo", " world"):
        chunk = {"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
        partials, finals, _, frozen = provider.process_chunk(chunk, [], frozen)
        _, _, _, plain = provider.process_chunk(chunk, [], plain)
        assert partials == [{"role": "assistant", "content": piece}] and finals == []
        assert type(frozen) is FrozenDict and type(frozen["openai_text"]) is FrozenList
        assert type(plain) is dict  # a plain state (a test calling the hook) stays plain
    assert text_of(frozen["openai_text"]) == text_of(plain["openai_text"]) == "Hello world"
    assert frozen["other"] == {"kept": [1]} and type(frozen["other"]) is FrozenDict
    with pytest.raises(TypeError):
        frozen["openai_text"].append("x")
