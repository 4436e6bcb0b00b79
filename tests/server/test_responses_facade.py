"""``POST /v1/responses`` driven by the official ``openai`` SDK (``client.responses``), over any provider.

The server runs in-process on a real socket; the ``openai`` provider behind it talks to the
scripted loopback upstream of the provider tests, which plays Chat Completions bytes. So a
Responses client reaches a Chat Completions model: text, streaming, a function tool round
trip, usage and errors in OpenAI's shape.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from agent_core.server import create_app
from providers._server import CUT, ScriptedServer, json_reply, sse_reply
from providers._wire import (
    OA_DONE,
    OA_USAGE,
    an_text,
    an_thinking_tools,
    oa_chunk,
    oa_text,
)

from ._live import running

TOOLS = [{"type": "function", "name": "get_weather", "description": "The weather in a city.",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
          "strict": True}]


@pytest.fixture
def facade(server: ScriptedServer, store: Any) -> Iterator[str]:
    operator = {"base_url": f"{server.url}/v1", "api_key": "sk-upstream-0123456789", "max_retries": 0}
    with running(create_app(store=store, config=operator)) as url:
        yield url


@pytest.fixture
def client(facade: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{facade}/v1", api_key="unused", max_retries=0)


def completion(content: str | None = None, calls: list[dict[str, Any]] | None = None, finish: str = "stop",
               usage: dict[str, Any] = OA_USAGE) -> Any:
    """A non-streamed Chat Completions answer (what the upstream sends when the facade does not stream)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    return json_reply({"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
                       "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage})


def _events(raw: str) -> list[tuple[str, dict[str, Any]]]:
    """``(event name, data)`` per server-sent event of a raw body."""
    out = []
    for block in raw.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        out.append((lines["event"], json.loads(lines["data"])))
    return out


def test_a_plain_and_a_streamed_answer_through_the_echo_provider(client: openai.OpenAI) -> None:
    reply = client.responses.create(model="echo", input="hi", instructions="be brief", metadata={"k": "v"})
    assert reply.object == "response" and reply.status == "completed" and reply.id.startswith("resp_")
    assert reply.output_text == "Echo: hi" and reply.instructions == "be brief" and reply.metadata == {"k": "v"}
    [item] = reply.output
    assert item.type == "message" and item.role == "assistant" and item.status == "completed"
    assert item.content[0].type == "output_text" and item.content[0].annotations == []
    deltas = [e.delta for e in client.responses.create(model="echo", input="hi", stream=True)
              if e.type == "response.output_text.delta"]
    assert "".join(deltas) == "Echo: hi" and len(deltas) >= 2
    items = [{"role": "user", "content": [{"type": "input_text", "text": "one"}]},
             {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Echo: one"}]},
             {"role": "developer", "content": "terse"},
             {"type": "reasoning", "id": "rs_1", "summary": []},  # the upstream's own: dropped
             {"role": "user", "content": "two"}]
    with client.responses.stream(model="echo", input=items) as stream:
        text = "".join(e.delta for e in stream if e.type == "response.output_text.delta")
        final = stream.get_final_response()
    assert text == "Echo: two" == final.output_text


def test_an_openai_model_answers_with_usage_and_the_fields_passed(client: openai.OpenAI,
                                                                 server: ScriptedServer) -> None:
    server.enqueue(completion("Hello"))
    reply = client.responses.create(model="openai/gpt-4o-mini", input="hi", instructions="be brief",
                                    max_output_tokens=50, temperature=0.2, top_p=0.9, user="u1",
                                    text={"format": {"type": "json_schema", "name": "x",
                                                     "schema": {"type": "object"}, "strict": True}},
                                    store=True, include=[], truncation="disabled", reasoning={"effort": "low"},
                                    parallel_tool_calls=False)
    assert reply.output_text == "Hello" and reply.model == "openai/gpt-4o-mini"
    usage = reply.usage
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (11, 7, 18)
    assert usage.input_tokens_details.cached_tokens == 4 and usage.output_tokens_details.reasoning_tokens == 0
    sent = server.requests[-1].body
    assert sent["model"] == "gpt-4o-mini" and sent["temperature"] == 0.2 and sent["top_p"] == 0.9
    assert sent["messages"] == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    assert 50 in (sent.get("max_tokens"), sent.get("max_completion_tokens")) and sent["user"] == "u1"
    assert sent["reasoning_effort"] == "low"
    assert sent["response_format"] == {"type": "json_schema",
                                       "json_schema": {"name": "x", "schema": {"type": "object"}, "strict": True}}


def test_a_cut_off_answer_is_incomplete(client: openai.OpenAI, server: ScriptedServer) -> None:
    server.enqueue(completion("Half", finish="length"))
    reply = client.responses.create(model="openai/m", input="hi", max_output_tokens=1)
    assert reply.status == "incomplete" and reply.incomplete_details.reason == "max_output_tokens"


def _tool_call_then_text(server: ScriptedServer, stream: bool) -> None:
    if not stream:
        call = {"id": "call_w1", "type": "function", "function": {"name": "get_weather",
                                                                  "arguments": '{"city": "Kyoto"}'}}
        server.enqueue(completion(None, [call], "tool_calls"), completion("It is 18°C in Kyoto."))
        return
    call = {"index": 0, "id": "call_w1", "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": '}}
    server.enqueue(
        sse_reply(oa_chunk({"role": "assistant", "content": None}), oa_chunk({"tool_calls": [call]}),
                  oa_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"Kyoto"}'}}]}),
                  oa_chunk({}, "tool_calls"), OA_DONE),
        oa_text("It is 18°C in Kyoto."),
    )


@pytest.mark.parametrize("stream", [False, True])
def test_a_function_tool_round_trip(client: openai.OpenAI, server: ScriptedServer, stream: bool) -> None:
    _tool_call_then_text(server, stream)
    ask = [{"role": "user", "content": "Weather in Kyoto?"}]
    if stream:
        with client.responses.stream(model="openai/m", input=ask, tools=TOOLS, tool_choice="required") as s:
            first = s.get_final_response()
    else:
        first = client.responses.create(model="openai/m", input=ask, tools=TOOLS, tool_choice="required")
    [call] = first.output
    assert call.type == "function_call" and call.status == "completed"
    assert (call.call_id, call.name, json.loads(call.arguments)) == ("call_w1", "get_weather", {"city": "Kyoto"})
    offered = server.requests[0].body
    assert offered["tools"] == [{"type": "function", "function": {k: TOOLS[0][k] for k in
                                                                  ("name", "description", "parameters", "strict")}}]
    assert offered["tool_choice"] == "required"
    # the client runs the tool and sends its output with the call it answers
    follow = [*ask, call.model_dump(exclude_none=True),
              {"type": "function_call_output", "call_id": "call_w1", "output": "18°C"}]
    if stream:
        with client.responses.stream(model="openai/m", input=follow, tools=TOOLS) as s:
            second = s.get_final_response()
    else:
        second = client.responses.create(model="openai/m", input=follow, tools=TOOLS)
    assert second.output_text == "It is 18°C in Kyoto."
    raw = json.loads(server.requests[1].raw)
    assert raw["messages"][1]["tool_calls"] == [{"id": "call_w1", "type": "function", "function": {
        "name": "get_weather", "arguments": '{"city": "Kyoto"}'}}]
    assert raw["messages"][2] == {"role": "tool", "tool_call_id": "call_w1", "content": "18°C"}


def test_the_raw_event_order_and_sequence_numbers(facade: str, server: ScriptedServer) -> None:
    call = {"index": 0, "id": "call_x", "type": "function", "function": {"name": "get_weather",
                                                                         "arguments": '{"city":"Oslo"}'}}
    server.enqueue(sse_reply(oa_chunk({"role": "assistant", "content": "Let me check."}),
                             oa_chunk({"tool_calls": [call]}), oa_chunk({}, "tool_calls"),
                             oa_chunk(usage={"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29},
                                      choices=False), OA_DONE))
    r = httpx.post(f"{facade}/v1/responses", json={"model": "openai/m", "input": "hi", "tools": TOOLS,
                                                   "stream": True})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = _events(r.text)
    assert [name for name, _ in events] == [
        "response.created", "response.in_progress",
        "response.output_item.added", "response.content_part.added", "response.output_text.delta",
        "response.output_text.done", "response.content_part.done", "response.output_item.done",
        "response.output_item.added", "response.function_call_arguments.delta",
        "response.function_call_arguments.done", "response.output_item.done", "response.completed"]
    assert all(name == data["type"] for name, data in events)
    assert [data["sequence_number"] for _, data in events] == list(range(len(events)))
    done = events[-1][1]["response"]
    assert [item["type"] for item in done["output"]] == ["message", "function_call"]
    assert (done["usage"]["input_tokens"], done["usage"]["output_tokens"], done["usage"]["total_tokens"]) == (20, 9, 29)
    assert events[0][1]["response"]["status"] == "in_progress"


def test_errors_in_openais_shape(client: openai.OpenAI, server: ScriptedServer, facade: str) -> None:
    server.enqueue(json_reply({"error": {"type": "rate_limit_error", "code": "rate_limit_exceeded",
                                         "message": "slow down"}}, 429, {"retry-after": "7"}))
    with pytest.raises(openai.RateLimitError) as limited:
        client.responses.create(model="openai/m", input="hi")
    assert limited.value.response.headers["retry-after"] == "7" and limited.value.code == "rate_limit_exceeded"
    assert len(server.requests) == 1  # passed on at once: the client's own retries are the only ones
    server.enqueue(json_reply({"error": {"type": "rate_limit_error", "message": "slow down"}}, 429,
                              {"retry-after": "3"}))
    with pytest.raises(openai.RateLimitError) as streamed:  # before the first event: still a status
        client.responses.create(model="openai/m", input="hi", stream=True)
    assert streamed.value.response.headers["retry-after"] == "3"
    with pytest.raises(openai.NotFoundError) as missing:
        client.responses.create(model="nosuch/m", input="hi")
    assert missing.value.code == "model_not_found"
    with pytest.raises(openai.BadRequestError) as stateful:
        client.responses.create(model="echo", input="hi", previous_response_id="resp_1")
    assert stateful.value.param == "previous_response_id" and "stateless" in stateful.value.message
    refused = [({"frobnicate": 1}, "frobnicate"), ({"tools": [{"type": "web_search"}]}, "tools[0].type"),
               ({"input": [{"role": "user", "content": [{"type": "input_file", "file_id": "x"}]}]},
                "input[0].content[0]"),
               ({"input": [{"type": "item_reference", "id": "msg_1"}]}, "input[0].type"),
               ({"reasoning": {"effort": "high"}}, "reasoning.effort"), ({"input": []}, "input")]
    for extra, param in refused:
        r = httpx.post(f"{facade}/v1/responses", json={"model": "echo", "input": "hi", **extra})
        assert r.status_code == 400 and r.json()["error"]["param"] == param, (extra, r.text)
        assert r.json()["error"]["type"] == "invalid_request_error"


def test_a_stream_that_breaks_after_text_ends_with_an_error_event(facade: str, server: ScriptedServer) -> None:
    server.enqueue(sse_reply(oa_chunk({"role": "assistant", "content": "Half an answ"}), CUT))
    r = httpx.post(f"{facade}/v1/responses", json={"model": "openai/m", "input": "hi", "stream": True})
    assert r.status_code == 200
    events = _events(r.text)
    names = [name for name, _ in events]
    assert "response.output_text.delta" in names and names[-2:] == ["error", "response.failed"]
    error, failed = events[-2][1], events[-1][1]
    assert error["message"] and failed["response"]["status"] == "failed"
    assert failed["response"]["error"]["message"] == error["message"]
    assert "response.completed" not in names


@pytest.fixture
def retrying(server: ScriptedServer, store: Any) -> Iterator[str]:
    """A server whose operator allows upstream retries (the facades' own default is none)."""
    config = {"base_url": f"{server.url}/v1", "api_key": "sk-upstream-0123456789", "max_retries": 2,
              "max_retry_wait_s": 0}
    with running(create_app(store=store, config=config)) as url:
        yield url


def test_a_retry_after_text_ends_the_stream(retrying: str, server: ScriptedServer) -> None:
    text_then_cut = sse_reply(oa_chunk({"role": "assistant", "content": ""}), oa_chunk({"content": "Half an "}),
                              CUT)
    server.enqueue(text_then_cut, oa_text("The whole ", "answer."))
    r = httpx.post(f"{retrying}/v1/responses", json={"model": "openai/m", "input": "hi", "stream": True},
                   timeout=10)
    names = [name for name, _ in _events(r.text)]
    deltas = [data["delta"] for name, data in _events(r.text) if name == "response.output_text.delta"]
    assert deltas == ["Half an "] and names[-2:] == ["error", "response.failed"]  # never two attempts glued


def test_a_retry_before_any_text_is_unseen(retrying: str, server: ScriptedServer) -> None:
    server.enqueue(sse_reply(oa_chunk({"role": "assistant", "content": ""}), CUT), oa_text("The whole ", "answer."))
    r = httpx.post(f"{retrying}/v1/responses", json={"model": "openai/m", "input": "hi", "stream": True},
                   timeout=10)
    events = _events(r.text)
    assert events[-1][0] == "response.completed" and "error" not in [name for name, _ in events]
    assert events[-1][1]["response"]["output"][0]["content"][0]["text"] == "The whole answer."
    assert len(server.requests) == 2


def test_x_session_id_keeps_the_exchange(client: openai.OpenAI, store: Any) -> None:
    reply = client.responses.create(model="echo", input="remember me", extra_headers={"X-Session-Id": "r1"})
    assert reply.output_text == "Echo: remember me"
    kept = store.get("r1").session
    assert [(m.role, m.content) for m in kept.messages] == [("user", "remember me"),
                                                           ("assistant", "Echo: remember me")]


def test_an_anthropic_models_thinking_and_calls_stream_as_reasoning_and_function_call_items(
        facade: str, client: openai.OpenAI, server: ScriptedServer) -> None:
    anthropic_tools = [{"type": "function", "name": name, "parameters": {"type": "object", "properties": {}}}
                       for name in ("add", "mul")]
    server.enqueue(an_thinking_tools())
    r = httpx.post(f"{facade}/v1/responses", json={"model": "anthropic/claude-test", "input": "hi",
                                                   "tools": anthropic_tools, "stream": True})
    events = _events(r.text)
    names = [name for name, _ in events]
    assert names[2:5] == ["response.output_item.added", "response.content_part.added",
                          "response.reasoning_text.delta"]
    output = events[-1][1]["response"]["output"]
    assert [item["type"] for item in output] == ["reasoning", "message", "function_call", "function_call"]
    assert output[0]["content"] == [{"type": "reasoning_text", "text": "The user wants two sums."}]
    assert output[1]["content"][0]["text"] == "Let me compute."
    assert [(c["call_id"], json.loads(c["arguments"])) for c in output[2:]] == [("toolu_1", {"a": 1, "b": 2}),
                                                                                 ("toolu_2", {"x": 3, "y": 4})]
    assert [data["sequence_number"] for _, data in events] == list(range(len(events)))
    # sent back next time, the reasoning item is dropped and the calls are answered
    server.enqueue(an_text("Done."))
    answers = [{"type": "function_call_output", "call_id": c["call_id"], "output": "3"} for c in output[2:]]
    follow = [{"role": "user", "content": "hi"}, *output, *answers]
    with client.responses.stream(model="anthropic/claude-test", input=follow, tools=anthropic_tools) as stream:
        assert stream.get_final_response().output_text == "Done."
    sent = server.requests[-1].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert [b["type"] for b in sent[1]["content"]] == ["text", "tool_use", "tool_use"]


def test_responses_fields_map_to_a_chat_completions_model(client: openai.OpenAI, server: ScriptedServer) -> None:
    server.enqueue(completion("Hello"))
    choice = {"type": "allowed_tools", "mode": "required", "tools": [{"type": "function", "name": "get_weather"}]}
    client.responses.create(model="openai/gpt-5-mini", input="hi", tools=TOOLS, tool_choice=choice,
                            reasoning={"effort": "low", "summary": "detailed"}, text={"verbosity": "low"},
                            include=["reasoning.encrypted_content"], truncation="auto", max_tool_calls=2)
    sent = server.requests[-1].body
    assert sent["tool_choice"] == {"type": "allowed_tools", "allowed_tools": {
        "mode": "required", "tools": [{"type": "function", "function": {"name": "get_weather"}}]}}
    assert (sent["reasoning_effort"], sent["verbosity"]) == ("low", "low")
    # what only OpenAI's Responses platform has is left out, not sent to an API that would refuse it
    assert not {"include", "truncation", "max_tool_calls", "reasoning_summary", "reasoning", "text"} & set(sent)


def test_an_image_reaches_a_chat_completions_model_as_an_image_url(client: openai.OpenAI,
                                                                   server: ScriptedServer) -> None:
    server.enqueue(completion("A red pixel."))
    parts = [{"type": "input_text", "text": "What is this?"},
             {"type": "input_image", "image_url": "https://example.com/p.png", "detail": "low"}]
    client.responses.create(model="openai/gpt-4o-mini", input=[{"role": "user", "content": parts}])
    assert server.requests[-1].body["messages"] == [{"role": "user", "content": [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": "https://example.com/p.png", "detail": "low"}}]}]
