"""Every bundled extension and feature with a provider written here: its own chunk and message shapes,
a state holding nothing the bundled providers keep there, finals made only in ``finalize``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from agent_core import AgentCore

ANSWER = "Hello <think>weighing it</think> your key sk-abcdefghijklmnopqrstuvwxyz123456 is out"


class Lines:
    """A JSON-lines style API: chunks ``{"piece"}`` then ``{"done"}``, native messages ``{"r", "t"}``."""

    name = "lines"

    def init(self, config: Any) -> Any:
        return {"opaque": True}

    def to_native_messages(self, messages: Any, state: Any, context: Any = None) -> Any:
        return [{"r": m["role"], "t": m["content"]} for m in messages]

    def stream_api(self, native: Any, state: Any, request_id: Any = None) -> Any:
        for word in ANSWER.split(" "):
            yield {"piece": word + " "}
        yield {"done": True}

    def call_api(self, native: Any, state: Any, request_id: Any = None) -> Any:
        final = {"r": "assistant", "t": ANSWER + " "}
        return [], [], [*native, final], {**state, "final": final}

    def process_chunk(self, chunk: Any, native: Any, state: Any) -> Any:
        if "piece" in chunk:
            return [{"role": "assistant", "content": chunk["piece"]}], [], native, {
                **state, "text": state.get("text", "") + chunk["piece"]}
        return [], [], native, state

    def finalize(self, native: Any, state: Any, context: Any = None) -> Any:
        final = state.get("final") or {"r": "assistant", "t": state.get("text", "")}
        if state.get("final"):
            return [final], native, state
        return [final], [*native, final], state

    def from_native_messages(self, native: Any, state: Any, context: Any = None) -> Any:
        return [{"role": n["r"], "content": n["t"]} for n in native]


EVERY_OPT_IN = ["redact", "timestamps", "title", "file_mentions", "calculator", "files"]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "call"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_every_bundled_plugin_runs_and_does_its_job(stream: bool, mode: str) -> None:
    core = AgentCore.discover(providers=[Lines])
    session = core.add_message(core.create_session(), "user", "hi")
    config = {"provider": "lines", "stream": stream, "enabled_plugins": EVERY_OPT_IN}
    result = core.request(session, config) if mode == "sync" else asyncio.run(core.arequest(session, config))
    assert result.outcome.status == "finished", result.outcome
    answer = result.session.messages[-1]
    assert "sk-abc" not in answer.content and "[REDACTED]" in answer.content  # redact
    assert "<think>" not in answer.content and answer.metadata["reasoning"] == "weighing it"  # think_tags
    assert "timestamp" in answer.metadata  # timestamps
    stored = result.session.metadata["agent_core.native_history"]  # the provider's own shape, stored and sent again
    assert "sk-abc" not in str(stored) and "[REDACTED]" in str(stored)
    if stream:
        events = list(core.stream_request(session, config))
        shown = "".join(e.message.content for e in events if e.type == "partial")
        assert "sk-abc" not in shown and "<think>" not in shown and "weighing" not in shown


def test_the_next_request_sends_the_masked_answer_back() -> None:
    sent: list[Any] = []

    class Listening(Lines):
        def stream_api(self, native: Any, state: Any, request_id: Any = None) -> Any:
            sent.append(list(native))
            yield from super().stream_api(native, state, request_id)

    core = AgentCore.discover(providers=[Listening])
    config = {"provider": "lines", "stream": True, "enabled_plugins": ["redact"]}
    first = core.request(core.add_message(core.create_session(), "user", "hi"), config)
    core.request(core.add_message(first.session, "user", "again"), config)
    assert len(sent) == 2 and "sk-abc" not in str(sent[1]) and "[REDACTED]" in str(sent[1])


def test_values_only_the_api_reads_are_left_alone_in_a_shape_without_content() -> None:
    """The Responses API's native finals carry ``items`` and no ``content``: the text in them is masked, but an
    encrypted reasoning blob, an id or a signature is handed back to the API verbatim, even when a run in it looks
    like a key (urlsafe base64 holds ``sk-`` followed by key characters now and then)."""
    from agent_core.testing import PluginHarness
    from agent_core_plugins.redact import RedactExtension

    blob = "gAAAAABsk-proj-Ab3dE5gH7jK9mN1pQ3rS5tU7vW9xY1zA3bC5dE7_x"  # a key pattern matches inside it
    final = {"role": "assistant", "items": [
        {"id": "rs_1", "type": "reasoning", "encrypted_content": blob, "summary": []},
        {"id": "msg_1", "type": "message", "content": [
            {"type": "output_text", "text": "key sk-abcdefghijklmnopqrstuvwxyz123456 here"}]},
        {"type": "function_call", "call_id": "call_sk-proj-Ab3dE5gH7jK9mN1pQ3rS5tU7vW9", "name": "f",
         "arguments": '{"token": "sk-abcdefghijklmnopqrstuvwxyz123456"}'},
    ]}
    record = PluginHarness(RedactExtension).stream([{}], partials=[""], finals=[final])
    (masked,) = record.finals
    reasoning, message, call = masked["items"]
    assert reasoning["encrypted_content"] == blob and call["call_id"] == "call_sk-proj-Ab3dE5gH7jK9mN1pQ3rS5tU7vW9"
    assert message["content"][0]["text"] == "key [REDACTED] here"
    assert "sk-abc" not in call["arguments"] and "[REDACTED]" in call["arguments"]
