"""A stream that breaks after it has shown text is tried again, and what it showed is taken back.

Each test runs a whole request through the engine (``AgentCore.discover()``, the
bundled extensions loaded by entry point) against a scripted loopback server
speaking each API's exact wire format: a connection dropped after some chunks,
Anthropic's ``overloaded_error`` event in the middle of an answer, a stream that
goes silent past ``chunk_timeout_s``. What must hold: the ``retract`` event comes
after the broken attempt's partials and before the new attempt's, the answer is
exactly the successful attempt's, extension state does not leak from one attempt
into the next, usage counts both attempts as documented, and what must not be
retried (a client error, no retries left, a tool the API already ran) is not.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from agent_core import AgentCore, Message, RetractEvent
from agent_core_plugins.openai_tools import OpenAIToolsExtension
from agent_core_providers.openai import OpenAIProvider

from ._server import CUT, Delay, Reply, sse, sse_reply
from ._wire import (
    OA_DONE,
    OA_USAGE,
    an_block,
    an_event,
    an_start,
    an_text,
    oa_chunk,
    oa_text,
)

KEY = "sk-test-0123456789abcdef"


@dataclass
class Kit:
    name: str
    base_path: str
    opening: Callable[[], list[bytes]]  # what comes before the first text
    piece: Callable[[str], bytes]  # one event carrying text
    text: Callable[..., Reply]  # a whole answer
    overloaded: bytes  # the API's mid-stream "overloaded" error event

    def config(self, server: Any, **extra: Any) -> dict:
        return {"provider": self.name, "base_url": f"{server.url}{self.base_path}", "api_key": KEY, "model": "m",
                "max_retries": 2, "max_retry_wait_s": 0, **extra}


OPENAI = Kit(
    "openai", "/v1",
    lambda: [oa_chunk({"role": "assistant", "content": ""})],
    lambda text: oa_chunk({"content": text}),
    oa_text,
    sse({"error": {"message": "The server is overloaded", "type": "server_error", "code": None}}),
)
ANTHROPIC = Kit(
    "anthropic", "",
    lambda: [an_start(), an_event("content_block_start", index=0, content_block={"type": "text", "text": ""})],
    lambda text: an_event("content_block_delta", index=0, delta={"type": "text_delta", "text": text}),
    an_text,
    an_event("error", error={"type": "overloaded_error", "message": "Overloaded"}),
)
KITS = pytest.mark.parametrize("kit", [OPENAI, ANTHROPIC], ids=lambda k: k.name)
MODES = pytest.mark.parametrize("mode", ["sync", "async"])


def broken(kit: Kit, *pieces: str, end: Any = CUT) -> Reply:
    """An answer that streams ``pieces`` and then breaks with ``end`` (a dropped connection by default)."""
    return sse_reply(*kit.opening(), *(kit.piece(p) for p in pieces), end)


def events_of(config: dict, mode: str = "sync", text: str = "hi") -> list[Any]:
    core = AgentCore.discover()
    session = core.add_message(core.create_session(), Message(role="user", content=text))
    if mode == "sync":
        return list(core.stream_request(session, config, request_id="r1"))

    async def collect() -> list[Any]:
        return [e async for e in core.astream_request(session, config, request_id="r1")]

    return asyncio.run(collect())


def split(events: list[Any]) -> tuple[list[str], list[str], list[RetractEvent]]:
    """The partial texts before the first retract, those after the last, and the retracts."""
    retracts = [e for e in events if e.type == "retract"]
    kinds = [e.type for e in events]
    first = kinds.index("retract") if retracts else len(events)
    last = len(kinds) - 1 - kinds[::-1].index("retract") if retracts else -1
    before = [e.message.content for e in events[:first] if e.type == "partial"]
    after = [e.message.content for e in events[last + 1:] if e.type == "partial"]
    return before, after, retracts


# -- retried, and taken back ---------------------------------------------------------------


@KITS
@MODES
def test_a_connection_dropped_after_some_chunks_is_retried_and_taken_back(server, kit, mode):
    server.enqueue(broken(kit, "The answer ", "is fo", "rty"), kit.text("Forty-", "two."))
    events = events_of(kit.config(server), mode)
    before, after, retracts = split(events)
    assert [e.type for e in events].count("retract") == 1
    assert "".join(before) == "The answer is forty"
    retract = retracts[0]
    assert (retract.request_id, retract.iteration, retract.attempt) == ("r1", 1, 2)
    assert retract.error.type == "ProviderUnavailableError"
    # the retract comes before the new attempt's first partial, and the answer is that attempt's alone
    assert "".join(after) == "Forty-two."
    assert events[-1].type == "done" and events[-1].outcome.status == "finished"
    assert events[-1].session.messages[-1].content == "Forty-two."
    assert [e.type for e in events].count("final") == 1
    assert len(server.requests) == 2 and server.requests[0].raw == server.requests[1].raw  # the same request again


@MODES
def test_an_anthropic_overloaded_event_mid_stream_is_retried(server, mode):
    server.enqueue(broken(ANTHROPIC, "Half an ", "answer", end=ANTHROPIC.overloaded), an_text("Whole."))
    events = events_of(ANTHROPIC.config(server), mode)
    before, after, (retract,) = split(events)
    assert "".join(before) == "Half an answer" and "".join(after) == "Whole."
    assert retract.error.type == "ProviderUnavailableError"
    assert retract.error.upstream.type == "overloaded_error"
    assert events[-1].final_messages[-1].content == "Whole."


@KITS
def test_an_openai_style_error_event_mid_stream_is_retried(server, kit):
    server.enqueue(broken(kit, "Some ", end=kit.overloaded), kit.text("Fine."))
    events = events_of(kit.config(server))
    _, after, retracts = split(events)
    assert len(retracts) == 1 and "".join(after) == "Fine."


@KITS
def test_each_broken_attempt_is_taken_back_within_max_retries(server, kit):
    server.enqueue(broken(kit, "one"), broken(kit, "two"), kit.text("three"))
    events = events_of(kit.config(server, max_retries=2))
    _, after, retracts = split(events)
    assert [r.attempt for r in retracts] == [2, 3]
    assert "".join(after) == "three" and events[-1].final_messages[-1].content == "three"


def test_when_max_retries_is_spent_the_last_failure_ends_the_request(server):
    server.enqueue(broken(OPENAI, "one"), broken(OPENAI, "two"), broken(OPENAI, "three"), oa_text("never"))
    events = events_of(OPENAI.config(server, max_retries=2))
    kinds = [e.type for e in events]
    assert kinds.count("retract") == 2 and kinds[-2:] == ["error", "done"]
    assert events[-1].outcome.reason == "provider_error" and len(server.requests) == 3
    assert events[-1].session.messages[-1].role == "user"  # nothing of any attempt was kept


def test_retries_after_output_stay_within_deadline_s(server):
    slow_cut = sse_reply(*OPENAI.opening(), OPENAI.piece("one"), Delay(0.25), CUT)
    server.enqueue(slow_cut, slow_cut, slow_cut, oa_text("too late"))
    began = time.monotonic()
    events = events_of(OPENAI.config(server, max_retries=5, deadline_s=0.6))
    assert time.monotonic() - began < 1.0
    assert events[-2].type == "error" and events[-2].error.type == "LLMTimeoutError"
    assert "deadline_s" in events[-2].error.message and len(server.requests) < 4


@KITS
def test_a_stream_silent_past_chunk_timeout_is_retried_as_a_timeout(server, kit):
    stalled = sse_reply(*kit.opening(), kit.piece("Thinking"), Delay(1.0), kit.piece(" too late"), CUT)
    server.enqueue(stalled, kit.text("Quick."))
    began = time.monotonic()
    events = events_of(kit.config(server, chunk_timeout_s=0.3))
    took = time.monotonic() - began
    before, after, (retract,) = split(events)
    assert before == ["Thinking"] and "".join(after) == "Quick."
    assert retract.error.type == "LLMTimeoutError" and "chunk_timeout_s" in retract.error.message
    assert took < 0.9  # it did not wait for the stalled chunk (1 s), let alone the 120 s read timeout


@KITS
def test_a_stall_before_any_output_is_retried_without_a_retract(server, kit):
    stalled = sse_reply(*kit.opening()[:1], Delay(1.0), kit.piece("late"), CUT)  # the role chunk / message_start
    server.enqueue(stalled, kit.text("On time."))
    events = events_of(kit.config(server, chunk_timeout_s=0.3))
    assert "retract" not in [e.type for e in events]
    assert events[-1].final_messages[-1].content == "On time." and len(server.requests) == 2


@KITS
@MODES
def test_every_retry_is_announced_with_its_wait_and_place(server, kit, mode):
    """A 429 before any output: a retrying event (no retract) says who, why, how long and which attempt."""
    from ._server import json_reply

    server.enqueue(json_reply({"error": {"message": "slow down", "type": "rate_limit_error"}}, 429,
                              {"retry-after": "0"}),
                   broken(kit, "Half"), kit.text("Whole."))
    events = events_of(kit.config(server), mode)
    kinds = [e.type for e in events]
    assert kinds.count("retrying") == 2 and kinds.count("retract") == 1
    first, second = [e for e in events if e.type == "retrying"]
    assert kinds.index("retrying") < kinds.index("partial")  # said before anything was shown
    assert (first.attempt, first.attempts, first.delay_s) == (2, 3, 0.0)
    assert first.error.type == "RateLimitError" and first.error.plugin == kit.name
    assert kinds.index("retract") < kinds.index("retrying", kinds.index("retract"))  # forget, then wait
    assert (second.attempt, second.attempts) == (3, 3) and second.error.type != "RateLimitError"
    assert events[-1].final_messages[-1].content == "Whole." and len(server.requests) == 3


def test_without_chunk_timeout_a_short_pause_is_waited_out(server):
    server.enqueue(sse_reply(*OPENAI.opening(), OPENAI.piece("slow "), Delay(0.4), OPENAI.piece("but fine"),
                             oa_chunk({}, "stop"), OA_DONE))
    events = events_of(OPENAI.config(server))
    assert events[-1].final_messages[-1].content == "slow but fine" and len(server.requests) == 1


# -- extensions see a clean run ------------------------------------------------------------


@MODES
def test_a_key_split_across_the_failure_point_leaves_nothing_in_the_masking_extension(server, mode):
    # redact holds back "sk-proj-9fQ2" (it may be the start of a key) when the connection drops
    server.enqueue(broken(OPENAI, "Your key is s", "k-proj-9fQ2"), oa_text("Q2xLmN4pR7tV1wY3zA", " is not a key."))
    config = OPENAI.config(server, enabled_plugins=["redact"])
    events = events_of(config, mode)
    before, after, retracts = split(events)
    assert len(retracts) == 1
    assert "".join(before) == "Your key is "  # the half key was held back, never shown
    assert "".join(after) == "Q2xLmN4pR7tV1wY3zA is not a key."  # nothing of attempt one was carried over
    final = events[-1].session.messages[-1]
    assert final.content == "Q2xLmN4pR7tV1wY3zA is not a key."
    assert "REDACTED" not in final.content


def test_a_client_tool_call_cut_midway_is_retried_and_only_the_new_call_is_run(server):
    calls = []

    class Adder:
        name = "adder"

        def get_tool_schemas(self, state):
            return [{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}]

        def execute_tool(self, tool_name, arguments, state):
            calls.append(arguments)
            return {"sum": arguments["a"] + arguments["b"]}

    def tc(**fields: Any) -> dict:
        return {"tool_calls": [{"index": 0, **fields}]}

    cut_call = sse_reply(oa_chunk({"role": "assistant", "content": None}), oa_chunk({"content": "Adding. "}),
                         oa_chunk(tc(id="call_1", type="function", function={"name": "add", "arguments": '{"a": 1'})),
                         CUT)
    whole_call = sse_reply(oa_chunk({"role": "assistant", "content": None}),
                           oa_chunk(tc(id="call_2", type="function", function={"name": "add", "arguments": ""})),
                           oa_chunk(tc(function={"arguments": '{"a": 2, "b": 3}'})), oa_chunk({}, "tool_calls"),
                           OA_DONE)
    server.enqueue(cut_call, whole_call, oa_text("Five."))
    core = AgentCore(providers=[OpenAIProvider], extensions=[OpenAIToolsExtension], tools=[Adder])
    session = core.add_message(core.create_session(), Message(role="user", content="add"))
    events = list(core.stream_request(session, OPENAI.config(server)))
    assert [e.type for e in events].count("retract") == 1
    assert calls == [{"a": 2, "b": 3}]  # the cut call of attempt one never ran
    assert [e.call_id for e in events if e.type == "tool_call"] == ["call_2"]
    assert events[-1].final_messages[-1].content == "Five."


# -- usage ------------------------------------------------------------------------------------


def test_usage_counts_the_broken_attempt_where_the_api_reported_it(server):
    # Anthropic reports the input (and a first output token) in message_start, before any text
    server.enqueue(broken(ANTHROPIC, "Lost"), an_text("Kept"))
    events = events_of(ANTHROPIC.config(server))
    _, _, (retract,) = split(events)
    assert (retract.usage.input_tokens, retract.usage.output_tokens) == (12, 1)
    done = events[-1]
    assert (done.usage.input_tokens, done.usage.output_tokens) == (12 + 12, 1 + 15)
    assert done.usage.provider_calls == 1
    assert done.final_messages[-1].metadata["usage"]["output_tokens"] == 15  # the answer's own usage


def test_an_attempt_broken_before_the_api_reported_usage_adds_nothing(server):
    # OpenAI reports usage in the last chunk: a stream cut before it has nothing to count
    server.enqueue(broken(OPENAI, "Lost"), oa_text("Kept"))
    events = events_of(OPENAI.config(server))
    _, _, (retract,) = split(events)
    assert retract.usage is None
    done = events[-1]
    assert (done.usage.input_tokens, done.usage.output_tokens) == (OA_USAGE["prompt_tokens"],
                                                                    OA_USAGE["completion_tokens"])


# -- still failing as before ------------------------------------------------------------------


@KITS
def test_without_retries_a_mid_stream_failure_fails_as_before(server, kit):
    server.enqueue(broken(kit, "Half", end=kit.overloaded), kit.text("never"))
    events = events_of(kit.config(server, max_retries=0))
    kinds = [e.type for e in events]
    assert "retract" not in kinds and kinds[-2:] == ["error", "done"]
    assert events[-2].error.type == "ProviderUnavailableError"
    assert len(server.requests) == 1


@KITS
def test_a_client_error_mid_stream_is_not_retried(server, kit):
    if kit is OPENAI:
        bad = sse({"error": {"message": "bad request", "type": "invalid_request_error", "code": None}})
    else:
        bad = an_event("error", error={"type": "invalid_request_error", "message": "bad request"})
    server.enqueue(broken(kit, "Half", end=bad), kit.text("never"))
    events = events_of(kit.config(server))
    kinds = [e.type for e in events]
    assert "retract" not in kinds and kinds[-2:] == ["error", "done"]
    assert events[-2].error.type == "InvalidRequestError"
    assert len(server.requests) == 1


def test_an_answer_in_which_the_api_ran_a_tool_is_not_repeated(server):
    search = [
        *an_block(0, {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
                  [{"type": "input_json_delta", "partial_json": '{"query": "news"}'}]),
        *an_block(1, {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}, []),
        an_event("content_block_start", index=2, content_block={"type": "text", "text": ""}),
        an_event("content_block_delta", index=2, delta={"type": "text_delta", "text": "According to"}),
    ]
    server.enqueue(sse_reply(an_start(), *search, ANTHROPIC.overloaded), an_text("never"))
    events = events_of(ANTHROPIC.config(server))
    kinds = [e.type for e in events]
    assert "retract" not in kinds and kinds[-2:] == ["error", "done"]
    assert events[-2].error.upstream.type == "overloaded_error"
    assert len(server.requests) == 1  # the search ran (and was billed) once; a repeat would run it again


def test_a_failure_after_the_end_marker_is_not_a_retry(server):
    server.enqueue(sse_reply(*an_text("All", " here").parts, CUT), an_text("never"))
    events = events_of(ANTHROPIC.config(server))
    assert "retract" not in [e.type for e in events]
    assert events[-1].final_messages[-1].content == "All here" and len(server.requests) == 1

