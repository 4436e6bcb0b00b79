"""The stored native history never goes stale and never piles up."""

from __future__ import annotations

from typing import Any

import agent_core.values.native_history as native_history
import pytest
from agent_core import NATIVE_KEY, AgentCore, Message, Session
from agent_core.testing import reply, scripted_provider, tool_call


class RecordingProvider:
    """Converts core messages one to one and records every native list it is sent."""

    name = "recording"
    sent: list[list[dict[str, Any]]] = []

    def to_native_messages(self, messages, state, *, context=None):
        return [{"role": m["role"], "content": m["content"]} for m in messages]

    def call_api(self, native_messages, state, *, request_id=None):
        RecordingProvider.sent.append([dict(m) for m in native_messages])
        msg = {"role": "assistant", "content": f"reply {len(RecordingProvider.sent)}"}
        return [], [msg], [*native_messages, msg], state


@pytest.fixture(autouse=True)
def _reset() -> None:
    RecordingProvider.sent.clear()


def all_text(sent: list[list[dict[str, Any]]]) -> str:
    return " ".join(str(m.get("content")) for call in sent for m in call)


# -- an edit anywhere in the covered prefix is noticed ------------------------------


def test_a_redacted_first_message_never_reaches_the_provider_again() -> None:
    core = AgentCore(providers=[RecordingProvider])
    s1 = core.request(Session("s", [Message("user", "my card is 4111-1111")]), {}).session
    assert "4111" in all_text(RecordingProvider.sent)
    RecordingProvider.sent.clear()

    # the application redacts message 0 and keeps every later message object as it was
    redacted = s1.replace_messages([Message("user", "[redacted]"), *list(s1.messages)[1:]])
    s2 = core.request(redacted.with_message(Message("user", "and now?")), {}).session

    assert "4111" not in all_text(RecordingProvider.sent)
    assert RecordingProvider.sent[0][0] == {"role": "user", "content": "[redacted]"}
    assert "4111" not in str(s2.metadata[NATIVE_KEY])


def test_an_edit_in_the_middle_is_noticed_after_a_serialization_round_trip() -> None:
    core = AgentCore(providers=[RecordingProvider])
    s = Session("s", [Message("user", "one")])
    for text in ("two", "secret three", "four"):
        s = core.request(s, {}).session.with_message(Message("user", text))
    s = core.request(s, {}).session
    RecordingProvider.sent.clear()
    msgs = list(s.messages)
    idx = next(i for i, m in enumerate(msgs) if m.content == "secret three")
    edited = Session.from_dict(s.replace_messages([*msgs[:idx], Message("user", "three"), *msgs[idx + 1:]]).to_dict())
    core.request(edited.with_message(Message("user", "five")), {})
    assert "secret" not in all_text(RecordingProvider.sent)


def test_an_unchanged_history_is_reused_and_only_new_messages_are_hashed(monkeypatch: pytest.MonkeyPatch) -> None:
    converted: list[int] = []

    class Counting(RecordingProvider):
        def to_native_messages(self, messages, state, *, context=None):
            converted.append(len(messages))
            return super().to_native_messages(messages, state, context=context)

    core = AgentCore(providers=[Counting])
    s = Session("s", [Message("user", f"m{i}") for i in range(40)])
    s = core.request(s, {}).session

    hashed: list[Message] = []
    real = native_history._chain
    monkeypatch.setattr(native_history, "_chain", lambda prev, m: hashed.append(m) or real(prev, m))
    s = core.request(s.with_message(Message("user", "next")), {}).session
    assert converted == [40, 1]
    # the 41 covered messages were checked from the memo; only "next" and the reply were hashed
    assert [m.content for m in hashed] == ["next", "reply 2"]
    assert s.metadata[NATIVE_KEY]["recording"]["core_count"] == 43


# -- what initialize_request adds is for this provider call only ----------------------


class SystemPrompt:
    """A feature that puts a system message in front of every provider call."""

    name = "system_prompt"

    def initialize_request(self, native_messages, state, *, context=None):
        return [{"role": "system", "content": "be brief"}, *native_messages], state


def test_a_system_message_added_in_initialize_request_does_not_pile_up() -> None:
    seen: list[list[dict[str, Any]]] = []
    base = scripted_provider(
        reply(tool_calls=[tool_call("add", {"a": 1, "b": 2}, id="c1")]),
        reply(tool_calls=[tool_call("add", {"a": 3, "b": 4}, id="c2")]),
        reply("done"),
        reply("again"),
    )

    class Seeing(base):  # type: ignore[misc, valid-type]
        def call_api(self, native_messages, state, *, request_id=None):
            seen.append([dict(m) for m in native_messages])
            return super().call_api(native_messages, state, request_id=request_id)

    class Calc:
        name = "calc"

        def get_tool_schemas(self, state):
            return [{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}]

        def execute_tool(self, tool_name, payload, state):
            return {"success": True, "result": payload["a"] + payload["b"]}

    core = AgentCore(providers=[Seeing], features=[SystemPrompt], tools=[Calc])
    first = core.request(Session("s", [Message("user", "go")]), {})
    assert first.outcome.ok and first.final_messages[-1].content == "done"
    second = core.request(first.session.with_message(Message("user", "once more")), {})
    assert second.final_messages[-1].content == "again"

    assert len(seen) == 4
    for call in seen:
        systems = [m for m in call if m["role"] == "system"]
        assert systems == [{"role": "system", "content": "be brief"}]
        assert call[0]["role"] == "system"
    stored = second.session.metadata[NATIVE_KEY][Seeing.name]["messages"]
    assert all(m["role"] != "system" for m in stored)
    assert len(stored) == len(second.session.messages)
