"""The ``openai_responses`` provider (OpenAI's Responses API) against a scripted loopback server.

The bodies below are the Responses API's own event stream, event for event
(``event: <type>`` then ``data: {"type": <type>, ...}``, no ``[DONE]``), built
by the helpers at the top; ``responses_recordings/`` holds real recorded ones.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agent_core import (
    AgentCore,
    ContentFilterError,
    InvalidRequestError,
    Message,
    ProviderUnavailableError,
    RateLimitError,
    RetractEvent,
    thaw,
)
from agent_core_providers.openai_responses import OpenAIResponsesProvider

from ._driver import arun_turn, run_turn
from ._server import CUT, json_reply, sse, sse_reply
from .conftest import run_async
from .test_e2e import Calculator

KEY = "sk-test-0123456789abcdef"
USER = [{"role": "user", "content": "hi"}]
USAGE = {
    "input_tokens": 21,
    "input_tokens_details": {"cached_tokens": 5},
    "output_tokens": 9,
    "output_tokens_details": {"reasoning_tokens": 3},
    "total_tokens": 30,
}


# -- the Responses API's wire format ------------------------------------------------------------


class Stream:
    """Builds one streamed answer: lifecycle events, items opened, deltas, items closed, the end."""

    def __init__(self, response_id: str = "resp_1") -> None:
        self.id = response_id
        self.seq = 0
        self.parts: list[Any] = []
        self.output: list[dict] = []
        self.event("response.created", response=self.response("in_progress", []))
        self.event("response.in_progress", response=self.response("in_progress", []))

    def response(self, status: str, output: list, **extra: Any) -> dict:
        return {"id": self.id, "object": "response", "created_at": 1, "status": status, "model": "m",
                "output": output, "usage": None, "error": None, "incomplete_details": None, **extra}

    def event(self, kind: str, **fields: Any) -> Stream:
        self.parts.append(sse({"type": kind, "sequence_number": self.seq, **fields}, event=kind))
        self.seq += 1
        return self

    def raw(self, part: Any) -> Stream:
        self.parts.append(part)
        return self

    def text(self, *pieces: str, item_id: str = "msg_1", close: bool = True) -> Stream:
        index = len(self.output)
        opened = {"id": item_id, "type": "message", "status": "in_progress", "role": "assistant", "content": []}
        self.event("response.output_item.added", output_index=index, item=opened)
        self.event("response.content_part.added", item_id=item_id, output_index=index, content_index=0,
                   part={"type": "output_text", "text": "", "annotations": []})
        for p in pieces:
            self.event("response.output_text.delta", item_id=item_id, output_index=index, content_index=0, delta=p)
        text = "".join(pieces)
        part = {"type": "output_text", "text": text, "annotations": []}
        item = {**opened, "status": "completed", "content": [part]}
        self.output.append(item)
        if close:
            self.event("response.output_text.done", item_id=item_id, output_index=index, content_index=0, text=text)
            self.event("response.content_part.done", item_id=item_id, output_index=index, content_index=0, part=part)
            self.event("response.output_item.done", output_index=index, item=item)
        return self

    def reasoning(self, *summary: str, item_id: str = "rs_1", encrypted: str | None = "gAAAA-secret") -> Stream:
        index = len(self.output)
        opened = {"id": item_id, "type": "reasoning", "summary": []}
        if encrypted is not None:
            opened["encrypted_content"] = encrypted
        self.event("response.output_item.added", output_index=index, item=opened)
        if summary:
            self.event("response.reasoning_summary_part.added", item_id=item_id, output_index=index,
                       summary_index=0, part={"type": "summary_text", "text": ""})
            for s in summary:
                self.event("response.reasoning_summary_text.delta", item_id=item_id, output_index=index,
                           summary_index=0, delta=s)
            self.event("response.reasoning_summary_text.done", item_id=item_id, output_index=index,
                       summary_index=0, text="".join(summary))
        item = {**opened, "summary": [{"type": "summary_text", "text": "".join(summary)}] if summary else []}
        self.output.append(item)
        self.event("response.output_item.done", output_index=index, item=item)
        return self

    def call(self, name: str, *pieces: str, call_id: str = "call_1", item_id: str = "fc_1",
             close: bool = True) -> Stream:
        index = len(self.output)
        opened = {"id": item_id, "type": "function_call", "status": "in_progress", "arguments": "",
                  "call_id": call_id, "name": name}
        self.event("response.output_item.added", output_index=index, item=opened)
        for p in pieces:
            self.event("response.function_call_arguments.delta", item_id=item_id, output_index=index, delta=p)
        item = {**opened, "status": "completed", "arguments": "".join(pieces)}
        self.output.append(item)
        if close:
            self.event("response.function_call_arguments.done", item_id=item_id, output_index=index,
                       arguments="".join(pieces))
            self.event("response.output_item.done", output_index=index, item=item)
        return self

    def completed(self, usage: dict | None = USAGE) -> Any:
        return self.end("response.completed", self.response("completed", self.output, usage=usage))

    def incomplete(self, reason: str, usage: dict | None = USAGE) -> Any:
        return self.end("response.incomplete", self.response("incomplete", self.output, usage=usage,
                                                              incomplete_details={"reason": reason}))

    def failed(self, code: str, message: str) -> Any:
        return self.end("response.failed", self.response("failed", self.output,
                                                          error={"code": code, "message": message}))

    def end(self, kind: str, response: dict) -> Any:
        self.event(kind, response=response)
        return sse_reply(*self.parts)

    def reply(self) -> Any:
        """The stream as it is so far (to end it with a raw part, a cut...)."""
        return sse_reply(*self.parts)


def text_reply(*pieces: str) -> Any:
    return Stream().text(*pieces).completed()


def config(server: Any, **extra: Any) -> dict:
    return {"base_url": f"{server.url}/v1", "api_key": KEY, "model": "m", "max_retries": 0, **extra}


def turn(server: Any, messages: list | None = None, **extra: Any) -> Any:
    return run_turn(OpenAIResponsesProvider(), [], messages or USER, config(server, **extra))


# -- streamed text ------------------------------------------------------------------------------------


def test_streamed_text(server):
    server.enqueue(text_reply("Hel", "lo", " world"))
    t = turn(server)

    assert [p["content"] for p in thaw(t.partials)] == ["Hel", "lo", " world"]
    (final,) = thaw(t.finals)
    assert final["content"] == "Hello world"
    metadata = final["metadata"]
    assert metadata["finish_reason"] == "stop" and metadata["status"] == "completed"
    assert metadata["response_id"] == "resp_1"
    assert metadata["usage"] == {
        "input_tokens": 21, "output_tokens": 9, "cache_read_tokens": 5, "reasoning_tokens": 3, "total_tokens": 30,
        "input_tokens_details": {"cached_tokens": 5}, "output_tokens_details": {"reasoning_tokens": 3},
    }
    assert "tool_calls" not in metadata and "reasoning" not in metadata
    (request,) = server.requests
    assert request.path == "/v1/responses"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.body == {"model": "m", "input": [{"role": "user", "content": "hi"}], "store": False,
                            "stream": True}
    assert thaw(t.native)[-1]["items"][0]["content"][0]["text"] == "Hello world"


def test_request_fields_from_config(server):
    server.enqueue(text_reply("ok"))
    messages = [{"role": "system", "content": "be brief"}, *USER]
    turn(server, messages, max_tokens=64, temperature=0.2, instructions="You are terse.", top_p=0.5,
         reasoning_effort="low", extra_body={"service_tier": "flex"})
    body = server.requests[0].body
    assert body["input"] == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    assert body["instructions"] == "You are terse."
    assert body["max_output_tokens"] == 64 and "max_tokens" not in body
    assert body["temperature"] == 0.2 and body["top_p"] == 0.5
    assert body["reasoning"] == {"effort": "low", "summary": "auto"}
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["store"] is False and body["service_tier"] == "flex"


def test_no_reasoning_fields_for_a_plain_model_and_store_sends_none_encrypted(server):
    server.enqueue(text_reply("a"), text_reply("b"))
    turn(server)
    turn(server, reasoning_effort="high", reasoning_summary="none", store=True)
    first, second = server.bodies
    assert "reasoning" not in first and "include" not in first
    assert second["reasoning"] == {"effort": "high"} and second["store"] is True and "include" not in second


def test_async_matches_sync(server):
    server.enqueue(Stream().reasoning("why").text("Hi", " there").completed())
    sync_turn = turn(server)
    server.enqueue(Stream().reasoning("why").text("Hi", " there").completed())
    async_turn = run_async(arun_turn, OpenAIResponsesProvider(), [], USER, config(server))
    assert thaw(async_turn.finals) == thaw(sync_turn.finals)
    assert thaw(async_turn.native) == thaw(sync_turn.native)
    assert thaw(async_turn.partials) == thaw(sync_turn.partials)
    assert server.requests[0].raw == server.requests[1].raw


# -- tools, reasoning, and the stateless history -------------------------------------------------------


ADD_PARAMS = {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}


def make_core() -> AgentCore:
    return AgentCore(providers=[OpenAIResponsesProvider], tools=[Calculator])


def engine_config(server: Any, **extra: Any) -> dict:
    return {"provider": "openai_responses", "stream": True, **config(server, **extra)}


def tool_turn_replies() -> list[Any]:
    """(1) reasoning with encrypted content, then a call of add(1, 2); (2) the answer in text."""
    first = Stream("resp_1").reasoning("Need ", "a sum.", encrypted="enc-AAA").call(
        "add", '{"a": 1,', ' "b": 2}', call_id="call_7", item_id="fc_7").completed()
    second = Stream("resp_2").text("The sum ", "is 3.", item_id="msg_2").completed()
    return [first, second]


def test_streamed_reasoning_summary_and_encrypted_item(server):
    server.enqueue(Stream().reasoning("Thinking ", "hard.").text("Done").completed())
    t = turn(server, reasoning_effort="medium")

    partials = thaw(t.partials)
    thoughts = [p["metadata"] for p in partials if (p.get("metadata") or {}).get("reasoning")]
    assert [m["reasoning"] for m in thoughts] == ["Thinking ", "hard."]
    assert [m["reasoning_part"] for m in thoughts] == [{"id": "rs_1", "summary_index": 0}] * 2
    assert all(p["content"] == "" for p in partials if p.get("metadata"))
    # the closed item is shown whole as soon as it closes, before the text
    [closed] = [i for i, p in enumerate(partials) if "reasoning_item" in (p.get("metadata") or {})]
    assert partials[closed]["metadata"]["reasoning_item"]["encrypted_content"] == "gAAAA-secret"
    assert closed < next(i for i, p in enumerate(partials) if p["content"] == "Done")
    (final,) = thaw(t.finals)
    assert final["content"] == "Done"
    assert final["metadata"]["reasoning"] == "Thinking hard."
    assert final["metadata"]["reasoning_items"] == [
        {"id": "rs_1", "type": "reasoning", "encrypted_content": "gAAAA-secret",
         "summary": [{"type": "summary_text", "text": "Thinking hard."}]}]
    assert [i["type"] for i in thaw(t.native)[-1]["items"]] == ["reasoning", "message"]


def test_function_call_round_trip_through_the_engine(server):
    server.enqueue(*tool_turn_replies())
    core = make_core()
    session = core.add_message(core.create_session(), Message(role="user", content="add 1 and 2"))
    result = core.request(session, engine_config(server, reasoning_effort="low"))

    assert result.outcome.status == "finished"
    assert [m.role for m in result.final_messages] == ["assistant", "tool", "assistant"]
    asking, tool, answer = result.final_messages
    assert thaw(asking.metadata["tool_calls"]) == [
        {"id": "call_7", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}]
    assert asking.metadata["finish_reason"] == "tool_calls" and asking.metadata["reasoning"] == "Need a sum."
    assert tool.metadata["tool_call_id"] == "call_7"
    assert answer.content == "The sum is 3."
    first, second = server.bodies
    assert first["tools"] == [{"type": "function", "name": "add", "description": "a + b", "parameters": ADD_PARAMS}]
    assert first["include"] == ["reasoning.encrypted_content"]
    # the second call sends the reasoning item (with its encrypted content), the call and its output, in order
    assert second["input"] == [
        {"role": "user", "content": "add 1 and 2"},
        {"id": "rs_1", "type": "reasoning", "encrypted_content": "enc-AAA",
         "summary": [{"type": "summary_text", "text": "Need a sum."}]},
        {"id": "fc_7", "type": "function_call", "status": "completed", "arguments": '{"a": 1, "b": 2}',
         "call_id": "call_7", "name": "add"},
        {"type": "function_call_output", "call_id": "call_7", "output": tool.content},
    ]
    assert result.usage.input_tokens == 42 and result.usage.output_tokens == 18


def test_two_stateless_requests_carry_reasoning_and_the_tool_call(server):
    """Each request starts from the session as JSON, as a stateless handler would; nothing is kept between."""
    server.enqueue(*tool_turn_replies())
    cfg = engine_config(server, reasoning_effort="low")
    core = make_core()
    session = core.add_message(core.create_session(), Message(role="user", content="add 1 and 2"))
    stored = json.dumps(core.request(session, cfg).session.to_dict())

    server.enqueue(Stream("resp_3").text("You're welcome.", item_id="msg_3").completed())
    handler = make_core()  # another handler, another process for all it knows
    from agent_core import Session

    session = handler.add_message(Session.from_dict(json.loads(stored)), Message(role="user", content="thanks"))
    result = handler.request(session, cfg)

    assert result.final_messages[-1].content == "You're welcome."
    sent = server.bodies[2]["input"]
    assert [(i.get("type"), i.get("role")) for i in sent] == [
        (None, "user"), ("reasoning", None), ("function_call", None), ("function_call_output", None),
        ("message", "assistant"), (None, "user"),
    ]
    assert sent[1]["encrypted_content"] == "enc-AAA" and sent[1]["id"] == "rs_1"
    assert sent[2]["call_id"] == sent[3]["call_id"] == "call_7"
    assert sent[4]["content"][0]["text"] == "The sum is 3."
    assert sent[5] == {"role": "user", "content": "thanks"}
    assert server.bodies[2]["store"] is False


def test_history_rebuilt_from_core_messages_keeps_the_encrypted_reasoning(server):
    """Another provider's record (or none) makes the engine convert core messages: the items come from metadata."""
    server.enqueue(*tool_turn_replies())
    core = make_core()
    session = core.add_message(core.create_session(), Message(role="user", content="add 1 and 2"))
    data = core.request(session, engine_config(server)).session.to_dict()
    data["metadata"] = {}  # the native record dropped
    from agent_core import Session

    server.enqueue(text_reply("ok"))
    session = core.add_message(Session.from_dict(data), Message(role="user", content="again"))
    core.request(session, engine_config(server))
    sent = server.bodies[2]["input"]
    assert [i.get("type") or i.get("role") for i in sent] == [
        "user", "reasoning", "function_call", "function_call_output", "message", "user"]
    assert sent[1]["encrypted_content"] == "enc-AAA"


def test_reasoning_without_encrypted_content_is_not_sent_back_without_store(server):
    server.enqueue(Stream().reasoning("hm", encrypted=None).text("A").completed(), text_reply("B"))
    t = turn(server)
    run_turn(OpenAIResponsesProvider(), [], [{"role": "user", "content": "more"}], config(server),
             history=t.native)
    assert [i.get("type") or i.get("role") for i in server.bodies[1]["input"]] == ["user", "message", "user"]


def test_tool_choice_in_either_form(server):
    server.enqueue(text_reply("a"), text_reply("b"))
    tools = [{"type": "function", "function": {"name": "add", "parameters": ADD_PARAMS, "strict": True}}]
    turn(server, tools=tools, tool_choice={"type": "function", "function": {"name": "add"}})
    turn(server, tools=tools, tool_choice="required")
    assert server.bodies[0]["tools"] == [{"type": "function", "name": "add", "parameters": ADD_PARAMS,
                                          "strict": True}]
    assert server.bodies[0]["tool_choice"] == {"type": "function", "name": "add"}
    assert server.bodies[1]["tool_choice"] == "required"


# -- not streamed ----------------------------------------------------------------------------------------


def response_object(output: list, status: str = "completed", **extra: Any) -> dict:
    return {"id": "resp_9", "object": "response", "created_at": 1, "status": status, "model": "m",
            "output": output, "usage": USAGE, "error": None, "incomplete_details": None, **extra}


CALL_ITEM = {"id": "fc_1", "type": "function_call", "status": "completed", "arguments": '{"a": 2, "b": 3}',
             "call_id": "call_1", "name": "add"}
REASONING_ITEM = {"id": "rs_1", "type": "reasoning", "encrypted_content": "enc-B",
                  "summary": [{"type": "summary_text", "text": "Add them."}]}
MESSAGE_ITEM = {"id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": "Five.", "annotations": []}]}


def test_not_streamed(server):
    server.enqueue(json_reply(response_object([REASONING_ITEM, MESSAGE_ITEM, CALL_ITEM])))
    t = run_turn(OpenAIResponsesProvider(), [], USER, config(server), stream=False)

    assert server.requests[0].body["stream"] is False
    (final,) = thaw(t.finals)
    assert final["content"] == "Five."
    assert final["metadata"]["reasoning"] == "Add them."
    assert final["metadata"]["tool_calls"] == [
        {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}}]
    assert final["metadata"]["finish_reason"] == "tool_calls"
    assert final["metadata"]["usage"]["input_tokens"] == 21
    assert thaw(t.native)[-1]["items"] == [REASONING_ITEM, MESSAGE_ITEM, CALL_ITEM]


def test_sync_and_async_agree_not_streamed(server):
    server.enqueue(json_reply(response_object([REASONING_ITEM, MESSAGE_ITEM])))
    sync_turn = run_turn(OpenAIResponsesProvider(), [], USER, config(server), stream=False)
    server.enqueue(json_reply(response_object([REASONING_ITEM, MESSAGE_ITEM])))
    async_turn = run_async(arun_turn, OpenAIResponsesProvider(), [], USER, config(server), stream=False)
    assert thaw(async_turn.finals) == thaw(sync_turn.finals)
    assert thaw(async_turn.native) == thaw(sync_turn.native)


def test_a_json_answer_to_a_streaming_request_is_replayed_as_its_stream(server):
    server.enqueue(json_reply(response_object([REASONING_ITEM, MESSAGE_ITEM])))
    t = turn(server)
    assert [p["content"] for p in thaw(t.partials) if p["content"]] == ["Five."]
    assert [p["metadata"]["reasoning"] for p in thaw(t.partials) if (p.get("metadata") or {}).get("reasoning")] == ["Add them."]
    assert thaw(t.finals)[0]["content"] == "Five." and len(server.requests) == 1


def test_not_streamed_failed_response_raises_its_typed_error(server):
    failed = response_object([], "failed", error={"code": "server_error", "message": "The server had an error"})
    server.enqueue(json_reply(failed))
    with pytest.raises(ProviderUnavailableError, match="The server had an error"):
        run_turn(OpenAIResponsesProvider(), [], USER, config(server), stream=False)


# -- how an answer ends: incomplete, failed, error events ------------------------------------------------


def test_incomplete_at_the_token_limit_ends_with_length(server):
    server.enqueue(Stream().text("Once upon a", close=False).incomplete("max_output_tokens"))
    t = turn(server, max_tokens=3)
    (final,) = thaw(t.finals)
    assert final["content"] == "Once upon a"
    assert final["metadata"]["finish_reason"] == "length"
    assert final["metadata"]["status"] == "incomplete"
    assert final["metadata"]["incomplete_reason"] == "max_output_tokens"
    assert server.requests[0].body["max_output_tokens"] == 3


def test_incomplete_by_content_filter(server):
    server.enqueue(Stream().text("I can", close=False).incomplete("content_filter"))
    (final,) = thaw(turn(server).finals)
    assert final["metadata"]["finish_reason"] == "content_filter"
    assert final["metadata"]["incomplete_reason"] == "content_filter"


def test_a_call_cut_by_the_token_limit_stops_the_request_as_truncated(server):
    server.enqueue(Stream().call("add", '{"a": 1, "b', close=False).incomplete("max_output_tokens"))
    core = make_core()
    session = core.add_message(core.create_session(), Message(role="user", content="add"))
    events = list(core.stream_request(session, engine_config(server)))
    done = events[-1]
    assert done.outcome.status == "stopped" and done.outcome.reason == "truncated"
    (answer,) = done.final_messages
    assert thaw(answer.metadata["tool_calls"]) == [{"id": "call_1", "type": "function", "incomplete": True,
                                                   "function": {"name": "add", "arguments": '{"a": 1, "b'}}]
    assert not [e for e in events if e.type == "tool_call"] and len(server.requests) == 1
    # the next request never sends the cut call back
    server.enqueue(text_reply("ok"))
    core.request(core.add_message(done.session, Message(role="user", content="again")), engine_config(server))
    assert [i.get("type") or i.get("role") for i in server.bodies[1]["input"]] == ["user", "user"]


@pytest.mark.parametrize(("code", "error"), [
    ("server_error", ProviderUnavailableError),
    ("rate_limit_exceeded", RateLimitError),
    ("invalid_prompt", InvalidRequestError),
])
def test_response_failed_is_a_typed_error(server, code, error):
    server.enqueue(Stream().text("Hal", close=False).failed(code, f"failed: {code}"))
    with pytest.raises(error) as caught:
        turn(server)
    assert caught.value.message == f"failed: {code}"
    assert caught.value.upstream.code == code and caught.value.upstream.status is None


@pytest.mark.parametrize(("event", "error"), [
    ({"code": "rate_limit_exceeded", "message": "slow down", "param": None}, RateLimitError),
    ({"code": "context_length_exceeded", "message": "too long", "param": "input"}, Exception),
    ({"error": {"type": "invalid_request_error", "code": None, "message": "bad tool"}}, InvalidRequestError),
    ({"code": None, "message": "flagged by the content filter", "param": None}, ContentFilterError),
])
def test_error_event_is_a_typed_error(server, event, error):
    from agent_core import ContextLengthError

    error = ContextLengthError if error is Exception else error
    server.enqueue(Stream().raw(sse({"type": "error", "sequence_number": 2, **event}, event="error")).reply())
    with pytest.raises(error):
        turn(server)


def test_malformed_event_is_reported_not_crashed(server):
    from agent_core import MalformedResponseError

    server.enqueue(Stream().event("response.output_text.delta", output_index=0, delta=7).completed())
    with pytest.raises(MalformedResponseError, match="has no text delta"):
        turn(server)


def test_a_stream_without_its_terminal_event_is_an_error(server):
    server.enqueue(Stream().text("Hi").reply())
    with pytest.raises(ProviderUnavailableError, match="before the API marked it complete"):
        turn(server)


# -- retries ---------------------------------------------------------------------------------------------


def test_429_is_retried(server):
    server.enqueue(json_reply({"error": {"message": "Rate limit reached", "type": "requests",
                                         "code": "rate_limit_exceeded"}}, status=429, headers={"retry-after": "0"}),
                   text_reply("after the wait"))
    t = turn(server, max_retries=2)
    assert thaw(t.finals)[0]["content"] == "after the wait"
    assert len(server.requests) == 2 and server.requests[0].raw == server.requests[1].raw


def test_response_failed_with_server_error_is_retried_after_output_with_a_retract(server):
    broken = Stream().text("Hal", close=False).failed("server_error", "try again")
    server.enqueue(broken, text_reply("Whole"))
    core = make_core()
    session = core.add_message(core.create_session(), Message(role="user", content="hi"))
    events = list(core.stream_request(session, engine_config(server, max_retries=1, max_retry_wait_s=0)))
    kinds = [e.type for e in events]
    assert kinds.index("retract") > kinds.index("partial")
    assert events[-1].final_messages[-1].content == "Whole"


def test_a_stream_cut_mid_answer_is_retried_with_a_retract(server):
    server.enqueue(Stream().text("Half an", close=False).raw(CUT).reply(), text_reply("Whole answer"))
    core = make_core()
    session = core.add_message(core.create_session(), Message(role="user", content="hi"))
    events = list(core.stream_request(session, engine_config(server, max_retries=2, max_retry_wait_s=0)))
    (retract,) = [e for e in events if isinstance(e, RetractEvent)]
    at = events.index(retract)
    before = "".join(e.message.content for e in events[:at] if e.type == "partial")
    after = "".join(e.message.content for e in events[at:] if e.type == "partial")
    assert before == "Half an" and after == "Whole answer"
    done = events[-1]
    assert done.outcome.status == "finished" and done.final_messages[-1].content == "Whole answer"
    assert len(server.requests) == 2


def test_a_cut_before_any_output_is_retried_without_a_retract(server):
    server.enqueue(Stream().raw(CUT).reply(), text_reply("ok"))
    core = make_core()
    session = core.add_message(core.create_session(), Message(role="user", content="hi"))
    events = list(core.stream_request(session, engine_config(server, max_retries=1, max_retry_wait_s=0)))
    assert "retract" not in [e.type for e in events] and "retrying" in [e.type for e in events]
    assert events[-1].final_messages[-1].content == "ok"


def test_a_server_side_tool_makes_the_answer_unrepeatable(server):
    search = {"id": "ws_1", "type": "web_search_call", "status": "completed", "action": {"type": "search"}}
    broken = Stream().event("response.output_item.added", output_index=0, item=search).text("Found", close=False)
    server.enqueue(broken.raw(CUT).reply())
    with pytest.raises(ProviderUnavailableError):
        turn(server, max_retries=2, max_retry_wait_s=0)
    assert len(server.requests) == 1


# -- the command line ------------------------------------------------------------------------------------


def test_agent_core_run_streams_from_the_responses_api(server, capsys):
    from agent_core.cli import main

    server.enqueue(text_reply("Hi ", "there"))
    code = main(["run", "--provider", "openai_responses", "--base-url", f"{server.url}/v1", "--api-key", "k",
                 "--model", "m", "hi"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert out.out == "Hi there\n"
    request = server.requests[0]
    assert request.path == "/v1/responses" and request.headers["authorization"] == "Bearer k"
    assert request.body["input"] == [{"role": "user", "content": "hi"}] and request.body["stream"] is True


# -- bodies recorded from the real API (responses_recordings/README.md says where from) -------------------

RECORDINGS = Path(__file__).parent / "responses_recordings"


def recorded_events(name: str) -> list[bytes]:
    return [line for line in (RECORDINGS / name).read_bytes().splitlines() if line.strip()]


def recorded_stream(lines: list[bytes]) -> Any:
    """The recorded events framed as the API sends them: ``event: <type>`` then the line as it was."""
    return sse_reply(*(b"event: %s\ndata: %s\n\n" % (json.loads(line)["type"].encode(), line) for line in lines))


def recorded_responses(name: str) -> list[list[bytes]]:
    """A recording that holds several responses one after the other, cut at each ``response.created``."""
    out: list[list[bytes]] = []
    for line in recorded_events(name):
        if json.loads(line)["type"] == "response.created":
            out.append([])
        out[-1].append(line)
    return out


class RecordedCalculator:
    name = "recorded_calculator"
    version = "1.0.0"

    def get_tool_schemas(self, state: Any) -> list:
        params = {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"},
                                                   "op": {"type": "string"}}}
        return [{"type": "function", "function": {"name": "calculator", "parameters": params}}]

    def execute_tool(self, tool_name: str, payload: Any, state: Any) -> dict:
        a, b = payload["a"], payload["b"]
        return {"success": True, "result": a + b if payload["op"] == "add" else a * b}


def test_every_recording_has_a_case_and_a_source():
    files = {p.name for p in RECORDINGS.iterdir() if p.name != "README.md"}
    cases = {"responses-reasoning-tool-loop.chunks.txt", "responses-reasoning.json",
             "responses-error-quota.chunks.txt", "responses-web-search.chunks.txt"}
    assert files == cases
    readme = (RECORDINGS / "README.md").read_text()
    assert all(f"| `{name}` |" in readme for name in cases)


def test_recorded_tool_loop_with_encrypted_reasoning(server):
    """The four recorded responses answer the four provider calls of one request, as they did live."""
    responses = recorded_responses("responses-reasoning-tool-loop.chunks.txt")
    assert len(responses) == 4
    server.enqueue(*(recorded_stream(r) for r in responses))
    core = AgentCore(providers=[OpenAIResponsesProvider], tools=[RecordedCalculator])
    session = core.add_message(core.create_session(), Message(role="user", content="(12 + 7) * 3 * 10?"))
    result = core.request(session, engine_config(server, reasoning_effort="high", reasoning_summary="detailed"))

    assert result.outcome.status == "finished"
    messages = result.final_messages
    assert [m.role for m in messages] == ["assistant", "tool"] * 3 + ["assistant"]
    assert [json.loads(m.metadata["tool_calls"][0]["function"]["arguments"]) for m in messages[0:6:2]] == [
        {"a": 12, "b": 7, "op": "add"}, {"a": 19, "b": 3, "op": "multiply"}, {"a": 57, "b": 10, "op": "multiply"}]
    assert [m.content for m in messages[1:6:2]] == ["Result: 19", "Result: 57", "Result: 570"]
    assert messages[-1].content == "The final result is **570**."
    first = messages[0].metadata
    assert first["reasoning"].startswith("**Calculating step-by-step using calculator**\n\nI'll compute 12 plus 7")
    assert first["finish_reason"] == "tool_calls"
    assert thaw(first["usage"])["input_tokens"] == 134 and thaw(first["usage"])["output_tokens"] == 28
    assert result.usage.input_tokens == 134 + 221 + 260 + 299
    # the recorded reasoning item goes back, encrypted content and all, before its call and the call's output
    recorded_item = json.loads(responses[0][[json.loads(x)["type"] for x in responses[0]].index(
        "response.output_item.done")])["item"]
    sent = server.bodies[1]["input"]
    assert sent[1] == recorded_item and sent[1]["encrypted_content"].startswith("gAAAAABpPDIV")
    assert [i.get("type") for i in sent[2:]] == ["function_call", "function_call_output"]
    assert sent[3] == {"type": "function_call_output", "call_id": "call_AB6AaRZ1FYZB2RwS6A5vbdqn",
                       "output": "Result: 19"}
    assert [len(b["input"]) for b in server.bodies] == [1, 4, 6, 8]


def test_recorded_non_streamed_reasoning(server):
    server.enqueue(json_reply(json.loads((RECORDINGS / "responses-reasoning.json").read_bytes())))
    (final,) = thaw(run_turn(OpenAIResponsesProvider(), [], USER, config(server), stream=False).finals)
    assert final["content"] == "12 + 7 = 19\n19 \u00d7 3 = 57\n57 \u00d7 10 = 570\n\nFinal result: 570"
    assert final["metadata"]["reasoning"].startswith("**Reporting final result**")
    assert final["metadata"]["reasoning_items"][0]["encrypted_content"].startswith("gAAAAABpPMlc")
    assert final["metadata"]["usage"]["reasoning_tokens"] == 128
    assert final["metadata"]["usage"]["input_tokens"] == 865 and final["metadata"]["finish_reason"] == "stop"


def test_recorded_error_event_is_a_spent_quota(server):
    from agent_core import QuotaExceededError

    server.enqueue(recorded_stream(recorded_events("responses-error-quota.chunks.txt")))
    with pytest.raises(QuotaExceededError, match="You exceeded your current quota") as caught:
        turn(server, max_retries=2)
    assert caught.value.upstream.code == "insufficient_quota" and len(server.requests) == 1


def test_recorded_web_search_is_the_api_s_own_tool(server):
    lines = recorded_events("responses-web-search.chunks.txt")
    server.enqueue(recorded_stream(lines))
    t = turn(server)
    (final,) = thaw(t.finals)
    assert final["content"].startswith("I checked today\u2019s tech headlines (today = December 5, 2025)")
    assert len(final["content"]) == 3645
    assert "".join(p["content"] for p in thaw(t.partials)) == final["content"]
    assert [s["type"] for s in final["metadata"]["server_tools"]] == ["web_search_call"] * 6
    assert "tool_calls" not in final["metadata"]
    assert final["metadata"]["usage"]["cache_read_tokens"] == 3712
    assert final["metadata"]["usage"]["input_tokens"] == 31073
    annotations = [a for i in thaw(t.native)[-1]["items"] if i["type"] == "message"
                   for part in i["content"] for a in part["annotations"]]
    assert len(annotations) == 12 and annotations[0]["type"] == "url_citation"


@pytest.mark.parametrize("name", ["responses-web-search.chunks.txt", "responses-reasoning-tool-loop.chunks.txt"])
def test_recorded_async_replay_matches_sync(server, name):
    lines = recorded_responses(name)[0]
    server.enqueue(recorded_stream(lines))
    sync_turn = turn(server)
    server.enqueue(recorded_stream(lines))
    async_turn = run_async(arun_turn, OpenAIResponsesProvider(), [], USER, config(server))
    assert thaw(async_turn.finals) == thaw(sync_turn.finals)
    assert thaw(async_turn.native) == thaw(sync_turn.native)


# -- cancel and secrets ------------------------------------------------------------------------------


def test_cancel_through_the_engine_closes_the_stream(server):
    import threading
    import time

    from ._server import Delay

    tick = Stream().text("tick ", close=False)
    for _ in range(50):
        tick.raw(Delay(0.1)).event("response.output_text.delta", item_id="msg_1", output_index=0,
                                   content_index=0, delta="tick ")
    server.enqueue(tick.reply())
    core = make_core()
    session = core.add_message(core.create_session(), Message(role="user", content="count"))
    started = time.monotonic()
    events = []
    for event in core.stream_request(session, engine_config(server), request_id="rq-7"):
        events.append(event)
        if event.type == "partial" and len([e for e in events if e.type == "partial"]) == 2:
            threading.Thread(target=core.cancel_request, args=("rq-7",)).start()
    assert time.monotonic() - started < 3.0  # the stream would run 5 s
    assert events[-1].outcome.status == "stopped" and events[-1].outcome.reason == "cancelled"


def test_the_key_never_reaches_an_error(server):
    echo = {"type": "error", "code": "invalid_api_key", "message": f"Incorrect API key provided: {KEY}"}
    server.enqueue(Stream().raw(sse(echo, event="error")).reply())
    from agent_core import AuthenticationError

    with pytest.raises(AuthenticationError) as caught:
        turn(server)
    assert KEY not in str(caught.value) and KEY not in caught.value.upstream.message


# -- against another Responses implementation: agent-core's own /v1/responses facade ------------------


def test_against_agent_core_s_own_responses_facade(server, tmp_path):
    """Our provider talks to ``agent-core serve``'s Responses facade, which speaks Chat Completions upstream.

    Two implementations written apart (the facade is checked with the official ``openai`` SDK) must agree
    on the wire: streamed text, a function call and its output sent back, usage.
    """
    from agent_core.server import create_app
    from agent_core.store import open_store
    from server._live import running

    from ._wire import OA_DONE, oa_chunk, oa_text

    call = {"index": 0, "id": "call_up", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}
    server.enqueue(
        sse_reply(oa_chunk({"role": "assistant", "tool_calls": [call]}), oa_chunk({}, "tool_calls"),
                  oa_chunk(usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}, choices=False),
                  OA_DONE),
        oa_text("The sum ", "is 3."),
    )
    store = open_store(f"sqlite:///{tmp_path / 'sessions.db'}")
    upstream = {"provider": "openai", "base_url": f"{server.url}/v1", "api_key": "sk-up-0123456789", "max_retries": 0}
    try:
        with running(create_app(store=store, config=upstream)) as facade:
            core = make_core()
            session = core.add_message(core.create_session(), Message(role="user", content="add 1 and 2"))
            cfg = {"provider": "openai_responses", "stream": True, "base_url": f"{facade}/v1", "api_key": "unused",
                   "model": "m", "max_retries": 0}
            result = core.request(session, cfg)
    finally:
        store.close()

    assert result.outcome.status == "finished"
    asking, tool, answer = result.final_messages
    assert asking.metadata["tool_calls"][0]["function"]["name"] == "add"
    assert json.loads(asking.metadata["tool_calls"][0]["function"]["arguments"]) == {"a": 1, "b": 2}
    assert tool.content == "Result: 3" and answer.content == "The sum is 3."
    assert asking.metadata["usage"]["input_tokens"] == 10
    # what reached the Chat Completions upstream on the second call: the call and its result, in order
    sent = server.bodies[1]["messages"]
    assert sent[-2]["tool_calls"][0]["function"]["name"] == "add"
    assert sent[-1]["role"] == "tool" and sent[-1]["content"] == "Result: 3"


def test_an_item_closed_emptier_than_it_streamed_keeps_the_streamed_pieces(server):
    """A compatible server may close items without repeating what it streamed."""
    s = Stream()
    s.event("response.output_item.added", output_index=0, item={"id": "m", "type": "message", "role": "assistant"})
    s.event("response.output_text.delta", output_index=0, item_id="m", content_index=0, delta="Hi")
    s.event("response.output_item.done", output_index=0,
            item={"id": "m", "type": "message", "role": "assistant", "content": []})
    s.event("response.output_item.added", output_index=1,
            item={"id": "f", "type": "function_call", "call_id": "c", "name": "add"})
    s.event("response.function_call_arguments.delta", output_index=1, item_id="f", delta='{"a": 1}')
    s.event("response.output_item.done", output_index=1,
            item={"id": "f", "type": "function_call", "call_id": "c", "name": "add", "arguments": ""})
    server.enqueue(s.end("response.completed", s.response("completed", [], usage=USAGE)))
    (final,) = thaw(turn(server).finals)
    assert final["content"] == "Hi"
    assert final["metadata"]["tool_calls"] == [
        {"id": "c", "type": "function", "function": {"name": "add", "arguments": '{"a": 1}'}}]
