"""Content blocks on the Messages facade: as written to an Anthropic model, mapped for another.

The Anthropic upstream checks each body as the API does (``providers._anthropic_api``): a
block key the API does not take, a malformed ``cache_control`` or image source, a system
that is not text blocks, a tool in OpenAI's shape are all a 400 there. Clients are the
official ``anthropic`` and ``openai`` SDKs.
"""

from __future__ import annotations

from typing import Any

import anthropic
import openai
import pytest
from providers._anthropic_api import messages_fault, refuse_like_anthropic
from providers._server import ScriptedServer, json_reply, sse_reply
from providers._wire import OA_DONE, an_block, an_event, an_start, oa_chunk

MODEL = "anthropic/claude-test"
CACHED = {"type": "ephemeral"}
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
PDF = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0xLjQK"},
       "title": "terms", "cache_control": CACHED}
SYSTEM = [{"type": "text", "text": "You answer from the terms."},
          {"type": "text", "text": "A long, cached preamble.", "cache_control": CACHED}]
TOOLS = [{"name": "lookup", "description": "find a clause", "cache_control": CACHED,
          "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}}}]
USAGE = {"input_tokens": 21, "output_tokens": 5, "cache_creation_input_tokens": 1800, "cache_read_input_tokens": 0}


def answer(stop_reason: str = "end_turn", stop_sequence: str | None = None, usage: Any = None) -> Any:
    return json_reply({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
                       "content": [{"type": "text", "text": "Clause 4."}], "stop_reason": stop_reason,
                       "stop_sequence": stop_sequence, "usage": usage or USAGE})


@pytest.fixture
def facade(scripted_facade: str) -> str:
    return scripted_facade


@pytest.fixture
def client(facade: str, server: ScriptedServer) -> anthropic.Anthropic:
    refuse_like_anthropic(server)
    return anthropic.Anthropic(base_url=facade, api_key="unused", max_retries=0)


def test_blocks_reach_an_anthropic_model_as_written(client: anthropic.Anthropic, server: ScriptedServer) -> None:
    server.enqueue(answer("stop_sequence", "###"))
    user = [{"type": "text", "text": "What do the terms say?"}, IMAGE, PDF,
            {"type": "text", "text": "Be exact.", "cache_control": CACHED}]
    reply = client.messages.create(model=MODEL, max_tokens=50, system=SYSTEM, tools=TOOLS, stop_sequences=["###"],
                                   messages=[{"role": "user", "content": user}])
    sent = server.requests[-1].body
    assert sent["system"] == SYSTEM and sent["tools"] == TOOLS
    assert sent["messages"] == [{"role": "user", "content": user}]
    assert (reply.stop_reason, reply.stop_sequence) == ("stop_sequence", "###")
    assert (reply.usage.cache_creation_input_tokens, reply.usage.cache_read_input_tokens) == (1800, 0)
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (21, 5)


def test_plain_text_blocks_stay_text(client: anthropic.Anthropic, server: ScriptedServer) -> None:
    server.enqueue(answer())
    client.messages.create(model=MODEL, max_tokens=50, system=[{"type": "text", "text": "Be brief."}],
                           messages=[{"role": "user", "content": [{"type": "text", "text": "hi"}]}])
    sent = server.requests[-1].body
    assert sent["system"] == "Be brief." and sent["messages"] == [{"role": "user", "content": "hi"}]


def test_cache_counts_and_the_stop_sequence_stream_back(client: anthropic.Anthropic, server: ScriptedServer) -> None:
    end = [an_event("message_delta", delta={"stop_reason": "stop_sequence", "stop_sequence": "END"},
                    usage={"output_tokens": 9}), an_event("message_stop")]
    server.enqueue(sse_reply(an_start(), *an_block(0, {"type": "text", "text": ""},
                                                   [{"type": "text_delta", "text": "Clause 4."}]), *end))
    with client.messages.stream(model=MODEL, max_tokens=50, system=SYSTEM,
                                messages=[{"role": "user", "content": [IMAGE, {"type": "text", "text": "?"}]}]) as s:
        final = s.get_final_message()
    assert (final.stop_reason, final.stop_sequence) == ("stop_sequence", "END")
    assert (final.usage.cache_read_input_tokens, final.usage.cache_creation_input_tokens) == (3, 0)  # an_start's
    assert server.requests[-1].body["system"] == SYSTEM


def test_the_scripted_upstream_refuses_what_the_api_refuses() -> None:
    """The checks the tests above rely on."""
    body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
    assert messages_fault({**body, "system": [{"type": "text", "text": "x", "cache_control": {"type": "forever"}}]})
    assert messages_fault({**body, "system": [{"type": "image", "source": IMAGE["source"]}]})
    assert messages_fault({**body, "tools": [{"type": "function", "function": {"name": "f"}}]})
    bad_image = {"type": "image", "source": {"type": "base64", "media_type": "image/tiff", "data": PNG}}
    assert messages_fault({**body, "messages": [{"role": "user", "content": [bad_image]}]})
    assert messages_fault({**body, "messages": [{"role": "user", "content": [{**IMAGE, "detail": "high"}]}]})
    assert messages_fault({**body, "system": SYSTEM, "tools": TOOLS,
                           "messages": [{"role": "user", "content": [IMAGE, PDF]}]}) is None


def test_an_image_maps_to_an_openai_model_and_a_document_is_refused(facade: str, server: ScriptedServer) -> None:
    client = anthropic.Anthropic(base_url=facade, api_key="unused", max_retries=0)
    server.enqueue(json_reply({"id": "c", "object": "chat.completion", "created": 1, "model": "gpt-4o",
                               "choices": [{"index": 0, "message": {"role": "assistant", "content": "A dot."},
                                            "finish_reason": "stop"}],
                               "usage": {"prompt_tokens": 30, "completion_tokens": 2, "total_tokens": 32,
                                         "prompt_tokens_details": {"cached_tokens": 16}}}))
    reply = client.messages.create(model="openai/gpt-4o", max_tokens=50, system=SYSTEM, messages=[
        {"role": "user", "content": [{"type": "text", "text": "What is this?", "cache_control": CACHED}, IMAGE]}])
    sent = server.requests[-1].body["messages"]
    assert sent[0] == {"role": "system", "content": "You answer from the terms.A long, cached preamble."}
    assert sent[1] == {"role": "user", "content": [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}]}
    assert reply.content[0].text == "A dot." and reply.usage.cache_read_input_tokens == 16
    with pytest.raises(anthropic.BadRequestError) as refused:
        client.messages.create(model="openai/gpt-4o", max_tokens=50,
                               messages=[{"role": "user", "content": [{"type": "text", "text": "Read it."}, PDF]}])
    assert refused.value.body["error"]["message"].startswith("messages[0].content[1]: a document block")
    assert len(server.requests) == 1


def test_a_chat_image_reaches_an_anthropic_model_as_a_base64_block(facade: str, server: ScriptedServer) -> None:
    refuse_like_anthropic(server)
    chat = openai.OpenAI(base_url=f"{facade}/v1", api_key="unused", max_retries=0)
    server.enqueue(answer(usage={**USAGE, "cache_read_input_tokens": 1200}))
    reply = chat.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}", "detail": "low"}}]}])
    assert server.requests[-1].body["messages"] == [{"role": "user", "content": [
        {"type": "text", "text": "What is this?"}, IMAGE]}]
    assert reply.usage is not None and reply.usage.prompt_tokens_details is not None
    assert reply.usage.prompt_tokens_details.cached_tokens == 1200
    with pytest.raises(openai.BadRequestError) as refused:
        chat.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": [
            {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}]}])
    assert refused.value.body["message"].startswith("messages[0].content[0]: a input_audio part")


def test_chat_parts_and_answer_notes_pass_to_an_openai_model(facade: str, server: ScriptedServer) -> None:
    chat = openai.OpenAI(base_url=f"{facade}/v1", api_key="unused", max_retries=0)
    parts = [{"type": "text", "text": "Compare"}, {"type": "image_url", "image_url": {"url": "https://x.test/a.png",
                                                                                     "detail": "high"}},
             {"type": "text", "text": "with"}, {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}]
    usage = {"prompt_tokens": 40, "completion_tokens": 12, "total_tokens": 52,
             "prompt_tokens_details": {"cached_tokens": 32, "audio_tokens": 0},
             "completion_tokens_details": {"reasoning_tokens": 8, "accepted_prediction_tokens": 0}}
    server.enqueue(json_reply({"id": "c", "object": "chat.completion", "created": 1, "model": "gpt-4o",
                               "choices": [{"index": 0, "message": {"role": "assistant", "content": "Same."},
                                            "finish_reason": "stop"}], "usage": usage,
                               "service_tier": "default", "system_fingerprint": "fp_44709d6fcb"}))
    reply = chat.chat.completions.create(model="openai/gpt-4o", messages=[{"role": "user", "content": parts,
                                                                             "name": "ann"}])
    assert server.requests[-1].body["messages"] == [{"role": "user", "content": parts, "name": "ann"}]
    assert (reply.system_fingerprint, reply.service_tier) == ("fp_44709d6fcb", "default")
    assert reply.usage is not None and reply.usage.model_dump(exclude_none=True) == usage
    server.enqueue(sse_reply(oa_chunk({"role": "assistant", "content": ""}), oa_chunk({"content": "Same."}),
                             oa_chunk({}, "stop"), oa_chunk(usage=usage, choices=False).replace(
                                 b'"usage"', b'"system_fingerprint": "fp_44709d6fcb", "service_tier": "default", "usage"'),
                             OA_DONE))
    chunks = list(chat.chat.completions.create(model="openai/gpt-4o", messages=[{"role": "user", "content": parts}],
                                               stream=True, stream_options={"include_usage": True}))
    assert chunks[-1].usage is not None and chunks[-1].usage.model_dump(exclude_none=True) == usage
    assert {(c.system_fingerprint, c.service_tier) for c in chunks} >= {("fp_44709d6fcb", "default")}


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema": {"type": "object"}}}},
     "response_format"),
    ({"reasoning_effort": "high"}, "reasoning_effort"),
])
def test_a_chat_field_with_no_messages_counterpart_is_refused_by_name(facade: str, server: ScriptedServer,
                                                                      kwargs: Any, field: str) -> None:
    chat = openai.OpenAI(base_url=f"{facade}/v1", api_key="unused", max_retries=0)
    with pytest.raises(openai.BadRequestError) as refused:
        chat.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}], **kwargs)
    assert refused.value.body["param"] == field and server.requests == []


def test_thinking_for_an_openai_model_is_refused_by_name(facade: str, server: ScriptedServer) -> None:
    client = anthropic.Anthropic(base_url=facade, api_key="unused", max_retries=0)
    with pytest.raises(anthropic.BadRequestError) as refused:
        client.messages.create(model="openai/gpt-4o", max_tokens=50, thinking={"type": "enabled", "budget_tokens": 1024},
                               messages=[{"role": "user", "content": "hi"}])
    assert refused.value.body["error"]["message"].startswith("thinking:") and server.requests == []


def test_a_tool_result_keeps_its_blocks_and_cache_breakpoint(client: anthropic.Anthropic,
                                                            server: ScriptedServer) -> None:
    server.enqueue(answer())
    tools = [{"name": "lookup", "input_schema": {"type": "object", "properties": {}}}]
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "cache_control": CACHED,
              "content": [{"type": "text", "text": "The chart:"}, IMAGE]}
    history = [{"role": "user", "content": "Find the chart."},
               {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}}]},
               {"role": "user", "content": [result, {"type": "text", "text": "Describe it."}]}]
    client.messages.create(model=MODEL, max_tokens=50, tools=tools, messages=history)
    assert server.requests[-1].body["messages"][2] == {"role": "user", "content": history[2]["content"]}
    with pytest.raises(anthropic.BadRequestError) as refused:
        client.messages.create(model="openai/gpt-4o", max_tokens=50, tools=tools, messages=history)
    assert refused.value.body["error"]["message"].startswith("messages[2].content[0].content[1]: a image block")


def test_an_assistant_turns_cache_breakpoint_and_the_user_id_pass(client: anthropic.Anthropic,
                                                                   server: ScriptedServer) -> None:
    server.enqueue(answer())
    said = [{"type": "text", "text": "Clause 4 says so.", "cache_control": CACHED}]
    history = [{"role": "user", "content": "What does it say?"}, {"role": "assistant", "content": said},
               {"role": "user", "content": "And clause 5?"}]
    client.messages.create(model=MODEL, max_tokens=50, messages=history, metadata={"user_id": "user-7f3a"})
    sent = server.requests[-1].body
    assert sent["messages"][1] == {"role": "assistant", "content": said}
    assert sent["metadata"] == {"user_id": "user-7f3a"}
