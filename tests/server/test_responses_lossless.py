"""A Responses client in front of an ``openai_responses`` model: what it writes reaches the upstream as written.

The upstream is the scripted loopback server made to refuse, with the API's own 400, every
body the real Responses API refuses (:mod:`providers._responses_api`): ``text.format`` in Chat
Completions' nesting, a tool choice in Chat's shape, a reasoning item without its summary or
(with ``store: false``) its ``encrypted_content``. Its answers are bodies recorded from the
live API (``tests/providers/responses_recordings``). The client is the official ``openai`` SDK.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from agent_core.server import create_app
from providers._responses_api import refuse_like_responses, responses_fault
from providers._server import ScriptedServer, json_reply
from providers.test_openai_responses import RECORDINGS, recorded_responses, recorded_stream

from ._live import running

MODEL = "openai_responses/gpt-5-mini"
SCHEMA = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"],
          "additionalProperties": False}
FORMAT = {"type": "json_schema", "name": "result", "schema": SCHEMA, "strict": True}
TOOL = {"type": "function", "name": "calculator", "description": "Arithmetic.", "strict": True,
        "parameters": {"type": "object", "properties": {"a": {"type": "number"}}, "required": ["a"],
                       "additionalProperties": False}}


@pytest.fixture
def upstream(server: ScriptedServer) -> ScriptedServer:
    return refuse_like_responses(server)


@pytest.fixture
def client(upstream: ScriptedServer, store: Any) -> Iterator[openai.OpenAI]:
    operator = {"base_url": f"{upstream.url}/v1", "api_key": "sk-upstream-0123456789", "max_retries": 0}
    with running(create_app(store=store, config=operator)) as url:
        yield openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)


def recorded_answer() -> dict[str, Any]:
    """gpt-5-mini's recorded answer: a reasoning item (encrypted, with a summary), then the message."""
    return json.loads((RECORDINGS / "responses-reasoning.json").read_bytes())


def sent(upstream: ScriptedServer) -> dict[str, Any]:
    [request] = [r for r in upstream.requests if r.path.endswith("/responses")]
    assert responses_fault(request.body) is None  # what the real API takes
    return request.body  # type: ignore[no-any-return]


def test_the_scripted_upstream_refuses_what_the_api_refuses() -> None:
    ok = {"model": "m", "input": "hi", "store": False}
    assert responses_fault(ok) is None
    chat_format = {"type": "json_schema", "json_schema": {"name": "x", "schema": {}}}
    assert responses_fault({**ok, "text": {"format": chat_format}})[2] == "text.format.json_schema"
    assert responses_fault({**ok, "response_format": {"type": "json_object"}})[:3] == (
        400, "unknown_parameter", "response_format")
    assert responses_fault({**ok, "tool_choice": {"type": "function", "function": {"name": "x"}}})[2] == \
        "tool_choice.function"
    thought = {"type": "reasoning", "id": "rs_1", "summary": []}
    call = {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}
    assert responses_fault({**ok, "input": [thought, call]})[0] == 404  # not kept without store
    assert responses_fault({**ok, "input": [{**thought, "encrypted_content": "e"}, call]}) is None
    assert responses_fault({**ok, "input": [{**thought, "encrypted_content": "e"}]})[2] == "input[0]"
    assert responses_fault({**ok, "include": ["reasoning.encrypted"]})[2] == "include[0]"


def test_structured_output_and_reasoning_reach_the_upstream_as_written(client: openai.OpenAI,
                                                                       upstream: ScriptedServer) -> None:
    upstream.enqueue(json_reply(recorded_answer()))
    text = {"format": FORMAT, "verbosity": "low"}
    reply = client.responses.create(model=MODEL, input="(12 + 7) * 3 * 10?", text=text, instructions="Be exact.",
                                    reasoning={"effort": "high", "summary": "detailed"},
                                    include=["reasoning.encrypted_content"], truncation="auto", max_tool_calls=3)
    body = sent(upstream)
    assert body["text"] == text and body["reasoning"] == {"effort": "high", "summary": "detailed"}
    assert body["include"] == ["reasoning.encrypted_content"] and body["store"] is False
    assert (body["truncation"], body["max_tool_calls"]) == ("auto", 3)
    assert body["instructions"] == "Be exact." and body["input"] == [{"role": "user", "content": "(12 + 7) * 3 * 10?"}]
    recorded = recorded_answer()["output"][0]
    [thought, message] = reply.output
    assert thought.model_dump(exclude_none=True) == recorded  # id, summary, encrypted content: as the API gave them
    assert message.content[0].text.endswith("Final result: 570")
    assert reply.usage.output_tokens_details.reasoning_tokens == 128
    assert reply.service_tier == "default" and reply.text.verbosity == "low"


def test_encrypted_reasoning_only_when_the_client_includes_it(client: openai.OpenAI,
                                                              upstream: ScriptedServer) -> None:
    upstream.enqueue(json_reply(recorded_answer()))
    reply = client.responses.create(model=MODEL, input="hi", reasoning={"effort": "low"})
    body = sent(upstream)
    assert body["reasoning"] == {"effort": "low"}  # no summary asked for behind the client's back
    [thought, _message] = reply.output
    assert thought.type == "reasoning" and thought.encrypted_content is None
    assert thought.summary[0].text.startswith("**Reporting final result**") and not thought.content


def test_reasoning_items_sent_back_reach_the_upstream_unchanged(client: openai.OpenAI,
                                                                upstream: ScriptedServer) -> None:
    first = recorded_responses("responses-reasoning-tool-loop.chunks.txt")[0]
    done = [json.loads(line) for line in first if json.loads(line)["type"] == "response.output_item.done"]
    thought, call = done[0]["item"], done[1]["item"]
    upstream.enqueue(json_reply(recorded_answer()))
    items = [{"role": "user", "content": "(12 + 7) * 3 * 10?"}, thought, call,
             {"type": "function_call_output", "call_id": call["call_id"], "output": "Result: 19"}]
    client.responses.create(model=MODEL, input=items, tools=[TOOL], store=False,
                            include=["reasoning.encrypted_content"])
    body = sent(upstream)
    assert body["input"][1] == thought  # encrypted content, summary and id, byte for byte
    assert body["input"][2] == {k: call[k] for k in ("type", "call_id", "name", "arguments")}
    assert body["tools"] == [TOOL]


def test_a_streamed_reasoning_summary_and_item_as_the_api_streams_them(client: openai.OpenAI,
                                                                       upstream: ScriptedServer) -> None:
    first = recorded_responses("responses-reasoning-tool-loop.chunks.txt")[0]
    recorded = [json.loads(line) for line in first]
    upstream.enqueue(recorded_stream(first))
    events = list(client.responses.create(model=MODEL, input="go", tools=[TOOL], stream=True,
                                          reasoning={"effort": "high", "summary": "detailed"},
                                          include=["reasoning.encrypted_content"]))
    kinds = [e.type for e in events]
    reasoning_kinds = [k for k in kinds if "reasoning" in k]
    assert reasoning_kinds == ["response.reasoning_summary_part.added"] + \
        ["response.reasoning_summary_text.delta"] * sum(e["type"].endswith("summary_text.delta") for e in recorded) + \
        ["response.reasoning_summary_text.done", "response.reasoning_summary_part.done"]
    added = next(e for e in events if e.type == "response.output_item.added")
    item = recorded[[e["type"] for e in recorded].index("response.output_item.done")]["item"]
    assert added.item.id == item["id"] and added.item.type == "reasoning"
    done = next(e for e in events if e.type == "response.output_item.done")
    assert done.item.model_dump(exclude_none=True) == item
    final = events[-1].response
    assert final.output[0].model_dump(exclude_none=True) == item
    assert [o.type for o in final.output] == ["reasoning", "function_call"]
    assert [e.sequence_number for e in events] == list(range(len(events)))


@pytest.mark.parametrize("choice", [
    "required", {"type": "function", "name": "calculator"},
    {"type": "allowed_tools", "mode": "required", "tools": [{"type": "function", "name": "calculator"}]},
])
def test_every_tool_choice_form_reaches_the_upstream_as_written(client: openai.OpenAI, upstream: ScriptedServer,
                                                                choice: Any) -> None:
    upstream.enqueue(json_reply(recorded_answer()))
    client.responses.create(model=MODEL, input="hi", tools=[TOOL], tool_choice=choice, parallel_tool_calls=False)
    body = sent(upstream)
    assert body["tool_choice"] == choice and body["parallel_tool_calls"] is False


def test_a_tool_that_cannot_be_declared_cannot_be_chosen(client: openai.OpenAI, upstream: ScriptedServer) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model=MODEL, input="hi", tool_choice={"type": "file_search"})
    assert caught.value.param == "tool_choice" and not upstream.requests


@pytest.mark.parametrize(("fields", "param"), [
    ({"reasoning": {"summary": "long"}}, "reasoning.summary"),
    ({"reasoning": {"effort": "low", "budget": 5}}, "reasoning.budget"),
    ({"text": {"format": {"type": "json_schema", "schema": SCHEMA}}}, "text.format.name"),
    ({"text": {"format": {"type": "json_schema", "json_schema": {"name": "x", "schema": SCHEMA}}}},
     "text.format.json_schema"),
    ({"text": {"format": FORMAT, "style": "terse"}}, "text.style"),
    ({"include": "reasoning.encrypted_content"}, "include"),
])
def test_a_field_the_api_refuses_is_a_400_naming_it(client: openai.OpenAI, upstream: ScriptedServer,
                                                    fields: dict[str, Any], param: str) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model=MODEL, input="hi", **fields)
    assert caught.value.param == param and not upstream.requests


def test_a_malformed_reasoning_item_is_refused_by_path(client: openai.OpenAI, upstream: ScriptedServer) -> None:
    bad = {"type": "reasoning", "id": "rs_1", "summary": [{"type": "text", "text": "x"}]}
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model=MODEL, input=[{"role": "user", "content": "hi"}, bad])
    assert caught.value.param == "input[1].summary[0]" and not upstream.requests


def test_chat_response_format_reaches_a_responses_upstream_as_text_format(upstream: ScriptedServer,
                                                                          client: openai.OpenAI) -> None:
    upstream.enqueue(json_reply(recorded_answer()))
    fmt = {"type": "json_schema", "json_schema": {"name": "result", "schema": SCHEMA, "strict": True}}
    base = str(client.base_url).rstrip("/")
    answer = httpx.post(f"{base}/chat/completions", timeout=30, json={
        "model": MODEL, "messages": [{"role": "user", "content": "hi"}], "response_format": fmt,
        "verbosity": "high", "tools": [{"type": "function", "function": {"name": "calculator", "parameters": {}}}],
        "tool_choice": {"type": "allowed_tools", "allowed_tools": {
            "mode": "auto", "tools": [{"type": "function", "function": {"name": "calculator"}}]}}})
    assert answer.status_code == 200, answer.text
    body = sent(upstream)
    assert body["text"] == {"format": FORMAT, "verbosity": "high"}
    assert body["tool_choice"] == {"type": "allowed_tools", "mode": "auto",
                                   "tools": [{"type": "function", "name": "calculator"}]}


class Redact:
    """An extension that rewrites the user's words in the native messages, and notes what it saw."""

    name = "redact_words"
    version = "1.0.0"
    seen: list[Any] = []

    def to_native_messages(self, messages: Any, native_messages: Any, state: Any = None, *,
                           context: Any = None) -> Any:
        Redact.seen.extend(m["metadata"].get("reasoning_items") for m in messages if m["role"] == "assistant")
        return [{**n, "content": n["content"].replace("secret", "[redacted]")}
                if n.get("role") == "user" and isinstance(n.get("content"), str) else n for n in native_messages]


def test_the_pipeline_runs_and_what_it_leaves_passes_intact(upstream: ScriptedServer, store: Any) -> None:
    from agent_core import AgentCore

    first = recorded_responses("responses-reasoning-tool-loop.chunks.txt")[0]
    done = [json.loads(line) for line in first if json.loads(line)["type"] == "response.output_item.done"]
    thought, call = done[0]["item"], done[1]["item"]
    upstream.enqueue(json_reply(recorded_answer()))
    operator = {"base_url": f"{upstream.url}/v1", "api_key": "sk-upstream-0123456789", "max_retries": 0}
    Redact.seen.clear()
    with running(create_app(core=AgentCore.discover(extensions=[Redact]), store=store, config=operator)) as url:
        items = [{"role": "user", "content": "my secret sum"}, thought, call,
                 {"type": "function_call_output", "call_id": call["call_id"], "output": "Result: 19"}]
        openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0).responses.create(
            model=MODEL, input=items, tools=[TOOL], text={"format": FORMAT})
    body = sent(upstream)
    assert body["input"][0]["content"] == "my [redacted] sum"  # the extension's change
    assert body["input"][1] == thought and body["text"] == {"format": FORMAT}  # what it left alone
    assert Redact.seen == [[thought]]  # it saw the reasoning item, on the assistant message it belongs to


def test_each_reasoning_item_rides_on_the_answer_it_precedes() -> None:
    from agent_core import thaw
    from agent_core.server.facades.responses.dialect import ResponsesBody, responses_session

    def thought(n: int) -> dict[str, Any]:
        return {"type": "reasoning", "id": f"rs_{n}", "summary": [], "encrypted_content": f"e{n}"}

    def call(n: int) -> dict[str, Any]:
        return {"type": "function_call", "call_id": f"c{n}", "name": "f", "arguments": "{}"}

    def output(n: int) -> dict[str, Any]:
        return {"type": "function_call_output", "call_id": f"c{n}", "output": "ok"}

    items = [{"role": "user", "content": "go"}, thought(1), call(1), output(1), thought(2), call(2), output(2),
             thought(3), {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]},
             {"role": "user", "content": "again"}, thought(4)]
    session = responses_session("s", ResponsesBody(model="m", input=items), 100)
    shape = [(m.role, m.content, [i["id"] for i in thaw(m.metadata).get("reasoning_items", [])],
              [c["id"] for c in thaw(m.metadata).get("tool_calls", [])]) for m in session.messages]
    assert shape == [("user", "go", [], []), ("assistant", "", ["rs_1"], ["c1"]), ("tool", "ok", [], []),
                     ("assistant", "", ["rs_2"], ["c2"]), ("tool", "ok", [], []), ("assistant", "done", ["rs_3"], []),
                     ("user", "again", [], []), ("assistant", "", ["rs_4"], [])]
    assert thaw(session.messages[1].metadata)["reasoning_items"] == [thought(1)]  # as sent


def test_an_image_reaches_the_upstream_as_an_input_image(client: openai.OpenAI, upstream: ScriptedServer) -> None:
    upstream.enqueue(json_reply(recorded_answer()))
    pixel = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    parts = [{"type": "input_text", "text": "What is in this image?"},
             {"type": "input_image", "image_url": pixel, "detail": "high"}]
    client.responses.create(model=MODEL, input=[{"role": "user", "content": parts}])
    assert sent(upstream)["input"] == [{"role": "user", "content": parts}]
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model=MODEL, input=[{"role": "user", "content": [
            {"type": "input_image", "file_id": "file-abc", "detail": "auto"}]}])
    assert caught.value.param == "input[0].content[0].image_url"
