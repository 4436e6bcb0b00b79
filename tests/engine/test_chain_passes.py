"""The closing chains do no work for a plugin that leaves their hook out, nor build a message twice.

``finalize`` and the two tool-format hooks are skipped for a plugin that does
not define them (their defaults hand everything back, or offer no format), and
``from_native_messages`` builds one :class:`Message` per core dict however
many plugins hand the same dict on; the turn keeps the messages built there.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest
from agent_core import AgentCore, Message, PluginError
from agent_core_providers.echo import EchoProvider


class PassOn:
    """Hands the core messages on in a new list, the dicts themselves unchanged."""

    name = "pass_on"
    priority = 10

    def from_native_messages(self, finals: Any, core: Any, state: Any, *, context: Any = None) -> Any:
        return list(core)


class PassOnToo(PassOn):
    name = "pass_on_too"
    priority = 20


class Shout:
    """Replaces the answer's text: a new dict, which must be built (and checked) again."""

    name = "shout"
    priority = 30

    def from_native_messages(self, finals: Any, core: Any, state: Any, *, context: Any = None) -> Any:
        return [{**m, "content": str(m["content"]).upper()} for m in core]


class Broken:
    """Returns a core message without a role."""

    name = "broken"
    priority = 40

    def from_native_messages(self, finals: Any, core: Any, state: Any, *, context: Any = None) -> Any:
        return [{"content": "no role"}]


class Quiet:
    """Defines no closing hook at all."""

    name = "quiet"
    priority = 5

    def process_chunk(self, native_chunk: Any, partials: Any, finals: Any, native: Any, state: Any) -> Any:
        return partials, finals, native, state


def _request(*extensions: Any) -> Any:
    core = AgentCore(providers=[EchoProvider], extensions=list(extensions))
    session = core.add_message(core.create_session(), "user", "hello")
    return core, session, core.request(session, {"provider": "echo"})


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Each core dict a Message is built from, in order."""
    seen: list[Any] = []
    original = Message.from_dict.__func__  # type: ignore[attr-defined]

    def counting(cls: type, data: Any) -> Any:
        seen.append(data)
        return original(cls, data)

    monkeypatch.setattr(Message, "from_dict", classmethod(counting))
    return seen


def _answer_builds(seen: list[Any], text: str) -> int:
    return sum(1 for d in seen if d.get("role") == "assistant" and d.get("content") == text)


def test_a_dict_handed_on_by_every_plugin_is_built_once(built: list[Any]) -> None:
    _, _, result = _request(PassOn, PassOnToo)
    assert result.session.messages[-1].content == "Echo: hello"
    assert _answer_builds(built, "Echo: hello") == 1


def test_a_changed_dict_is_built_and_is_what_the_session_keeps(built: list[Any]) -> None:
    _, _, result = _request(PassOn, Shout, PassOnToo)
    answer = result.session.messages[-1]
    assert answer.role == "assistant" and answer.content == "ECHO: HELLO"
    assert _answer_builds(built, "Echo: hello") == 1
    assert _answer_builds(built, "ECHO: HELLO") == 1


def test_a_bad_message_late_in_the_chain_is_still_refused_by_name() -> None:
    core = AgentCore(providers=[EchoProvider], extensions=[PassOn, Broken])
    session = core.add_message(core.create_session(), "user", "hello")
    with pytest.raises(PluginError) as caught:
        core.request(session, {"provider": "echo"})
    assert caught.value.plugin == "broken" and caught.value.hook == "from_native_messages"
    assert len(session.messages) == 1  # the caller's session is untouched


def test_closing_hooks_a_plugin_leaves_out_are_not_called() -> None:
    called: list[str] = []
    watched = {"finalize", "accepted_tool_schema_formats", "emitted_tool_call_formats"}

    def spy(frame: Any, event: str, arg: Any) -> None:
        code = frame.f_code
        if event == "call" and code.co_name in watched and code.co_filename.endswith("protocols.py"):
            called.append(code.co_name)

    core = AgentCore(providers=[EchoProvider], extensions=[Quiet])
    session = core.add_message(core.create_session(), "user", "hello")
    sys.setprofile(spy)
    try:
        result = core.request(session, {"provider": "echo"})
    finally:
        sys.setprofile(None)
    assert result.session.messages[-1].content == "Echo: hello"
    assert called == []
