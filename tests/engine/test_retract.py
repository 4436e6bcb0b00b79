"""A stream that starts over: the engine's side of a provider retrying after it had shown output.

The provider here yields a :class:`StreamRetry` between chunks, as the HTTP
providers do when a stream breaks mid-answer. The engine must then give every
plugin the state the call began with, tell the caller with a ``retract`` event
in the right place, produce the finals of the successful attempt only, and
count the broken attempt's usage. Sync and async must agree event for event.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from agent_core import (
    AgentCore,
    Message,
    ProviderUnavailableError,
    RetractEvent,
    StreamRetry,
    decode_event,
    encode_event,
)
from agent_core.plugin_kit import rewrite_finals

SCHEMA = json.loads((Path(__file__).parents[2] / "schemas" / "event.schema.json").read_text())
BROKEN = ProviderUnavailableError("Overloaded", provider="p", status_code=529)


def provider(items: list[Any]) -> type:
    """Streams ``items``: text chunks and StreamRetry markers; its buffer lives in ``state["text"]``."""

    class Provider:
        name = "p"

        def init(self, config):
            return {"config": config, "text": "", "usage": None}

        def stream_api(self, native_messages, state, *, request_id=None):
            yield from items

        def process_chunk(self, chunk, native_messages, state):
            if isinstance(chunk, dict):  # a usage report
                return [], [], native_messages, {**state, "usage": chunk}
            return [{"role": "assistant", "content": chunk}], [], native_messages, {**state, "text": state["text"] + chunk}

        def finalize(self, native_messages, state, *, context=None):
            final = {"role": "assistant", "content": state["text"], "metadata": {"usage": state["usage"] or {}}}
            return [final], [*native_messages, final], state

        def from_native_messages(self, native_messages, state, *, context=None):
            return list(native_messages)

    return Provider


class Counting:
    """An extension that counts the chunks it saw and keeps the text it saw, in the shared state."""

    name = "counting"

    def process_chunk(self, chunk, partials, finals, native_messages, state):
        if chunk is None:
            seen = state.get("counting") or ("", 0)
            finals, native_messages = rewrite_finals(finals, native_messages, lambda f: {
                **f, "metadata": {**f.get("metadata", {}), "seen": seen[0], "chunks": seen[1]}})
            return partials, finals, native_messages, state
        seen = state.get("counting") or ("", 0)
        text = "".join(p.get("content") or "" for p in partials)
        return partials, finals, native_messages, {**state, "counting": (seen[0] + text, seen[1] + 1)}


ITEMS = ["Hel", "lo wor", StreamRetry(2, BROKEN, {"input_tokens": 9, "output_tokens": 2}),
         "Good", "bye", {"input_tokens": 9, "output_tokens": 3}]


def core(items: list[Any] = ITEMS) -> AgentCore:
    return AgentCore(providers=[provider(items)], extensions=[Counting])


def session(c: AgentCore):
    return c.add_message(c.create_session(), Message(role="user", content="hi"))


def test_the_retract_comes_between_the_attempts_and_voids_the_first_ones_partials():
    c = core()
    events = list(c.stream_request(session(c), request_id="r"))
    kinds = [e.type for e in events]
    assert kinds == ["start", "partial", "partial", "retract", "retrying", "partial", "partial", "final", "done"]
    retract, retrying = events[3], events[4]
    assert (retrying.request_id, retrying.iteration, retrying.attempt) == ("r", 1, 2)
    assert retrying.error == retract.error  # the same failure, said once to forget and once to wait
    assert isinstance(retract, RetractEvent)
    assert (retract.request_id, retract.iteration, retract.attempt) == ("r", 1, 2)
    assert retract.error.type == "ProviderUnavailableError" and retract.error.status_code == 529
    assert (retract.usage.input_tokens, retract.usage.output_tokens) == (9, 2)
    after = [e.message.content for e in events[5:] if e.type == "partial"]
    assert "".join(after) == "Goodbye" == events[-2].message.content


def test_every_plugin_starts_the_new_attempt_from_the_state_the_call_began_with():
    c = core()
    final = c.request(session(c)).final_messages[-1]
    assert final.content == "Goodbye"  # the provider's own buffer was reset
    assert final.metadata["seen"] == "Goodbye"  # so was the extension's: it saw two chunks, not five
    assert final.metadata["chunks"] == 3  # "Good", "bye", the usage report


def test_the_broken_attempts_usage_is_counted_once_with_the_successful_ones():
    c = core()
    result = c.request(session(c))
    assert (result.usage.input_tokens, result.usage.output_tokens) == (9 + 9, 2 + 3)
    assert result.usage.provider_calls == 1
    assert result.final_messages[-1].metadata["usage"] == {"input_tokens": 9, "output_tokens": 3}


def test_a_retry_without_a_usage_report_counts_nothing_for_it():
    c = core(["a", StreamRetry(2, BROKEN), "b", {"input_tokens": 1, "output_tokens": 1}])
    events = list(c.stream_request(session(c)))
    retract = next(e for e in events if e.type == "retract")
    assert retract.usage is None
    assert (events[-1].usage.input_tokens, events[-1].usage.output_tokens) == (1, 1)


def test_the_retract_event_validates_and_decodes_back():
    c = core()
    retract = next(e for e in c.stream_request(session(c), request_id="r") if e.type == "retract")
    data = json.loads(encode_event(retract))
    jsonschema.validate(data, SCHEMA)
    assert data["type"] == "retract" and "Overloaded" in data["error"]["message"]
    assert decode_event(encode_event(retract)) == retract


@pytest.mark.parametrize("items", [ITEMS, ["x", StreamRetry(2), "y", StreamRetry(3), "z"]], ids=["one", "two"])
def test_sync_and_async_streams_are_identical(items):
    c = core(items)
    s = session(c)
    sync = [encode_event(e) for e in c.stream_request(s, request_id="r")]

    async def collect():
        return [encode_event(e) async for e in c.astream_request(s, request_id="r")]

    assert sync == asyncio.run(collect())
    assert [json.loads(line)["type"] for line in sync].count("retract") == sum(isinstance(i, StreamRetry)
                                                                             for i in items)
