"""The request flow: hook order, the hot path, finals seen once, seed examples end to end."""

from __future__ import annotations

import asyncio

import pytest
from agent_core import AgentCore, Message, Session, UnknownHookWarning
from agent_core.testing import reply, scripted_provider, tool_call
from seed_plugins import DummyCalc, EchoProvider, PrefixExt, TagFeature


def user_session(text: str = "hi") -> Session:
    return Session(session_id="s1", messages=[Message(role="user", content=text)])


MODES = [("sync", False), ("sync", True), ("async", False), ("async", True)]


def run(core: AgentCore, session: Session, config: dict, mode: str):
    if mode == "sync":
        return core.request(session, config)
    return asyncio.run(core.arequest(session, config))


@pytest.mark.parametrize("mode,stream", MODES)
def test_seed_examples_end_to_end(mode, stream):
    core = AgentCore(providers=[EchoProvider], extensions=[PrefixExt], features=[TagFeature], tools=[DummyCalc])
    session = user_session("hi")
    result = run(core, session, {"stream": stream}, mode)
    assert result.outcome.status == "finished"
    [final] = result.final_messages
    assert final.role == "assistant"
    assert final.content == "[EXT] Echo: hi"  # PrefixExt ran exactly once in both modes
    assert final.metadata["tag"] is True
    assert [m.content for m in result.session.messages] == ["hi", "[EXT] Echo: hi"]
    assert session.messages == [Message("user", "hi")]  # the input is untouched


@pytest.mark.parametrize("mode,stream", MODES)
def test_seed_plugins_in_a_tool_loop(mode, stream):
    provider = scripted_provider(
        reply("adding", tool_calls=[tool_call("add", {"a": 2, "b": 3}, id="c1")]),
        reply("it is 5"),
    )
    core = AgentCore(providers=[provider], extensions=[PrefixExt], features=[TagFeature], tools=[DummyCalc])
    result = run(core, user_session("2+3?"), {"stream": stream}, mode)
    roles = [m.role for m in result.session.messages]
    assert roles == ["user", "assistant", "tool", "assistant"]
    tool_msg = result.session.messages[2]
    assert tool_msg.content == "Result: 5"
    assert tool_msg.metadata["tool_call_id"] == "c1"
    assert result.final_messages[-1].content == "[EXT] it is 5"
    assert result.usage.provider_calls == 2


# -- the recorded call order -----------------------------------------------------

LOG: list[tuple] = []


def _short(v):
    return None if v is None else "chunk"


class RecProvider:
    name = "rec"

    def init(self, config):
        LOG.append(("provider", "init"))
        return {"config": config, "buf": ""}

    def to_native_messages(self, messages, state, *, context=None):
        LOG.append(("provider", "to_native_messages", len(messages)))
        return [{"role": m["role"], "content": m["content"]} for m in messages]

    def initialize_request(self, native_messages, state, *, request_id=None, context=None):
        LOG.append(("provider", "initialize_request"))
        return native_messages, state

    def stream_api(self, native_messages, state, *, request_id=None):
        LOG.append(("provider", "stream_api"))
        yield {"t": "a"}
        yield {"t": "b", "final": True}

    def process_chunk(self, chunk, native_messages, state):
        LOG.append(("provider", "process_chunk", chunk["t"]))
        finals = []
        if chunk.get("final"):
            finals = [{"role": "assistant", "content": "from-chunk"}]
            native_messages = [*native_messages, finals[0]]
        return [{"role": "assistant", "content": chunk["t"]}], finals, native_messages, state

    def call_api(self, native_messages, state, *, request_id=None):
        LOG.append(("provider", "call_api"))
        msg = {"role": "assistant", "content": "from-call"}
        return [], [msg], [*native_messages, msg], state

    def finalize(self, native_messages, state, *, context=None):
        LOG.append(("provider", "finalize"))
        msg = {"role": "assistant", "content": "from-finalize"}
        return [msg], [*native_messages, msg], state

    def from_native_messages(self, native_messages, state, *, context=None):
        LOG.append(("provider", "from_native_messages", len(native_messages)))
        return [{"role": m["role"], "content": m["content"]} for m in native_messages]


def _rec_ext(label, prio):
    class Ext:
        name = label
        priority = prio

        def init(self, config, state):
            LOG.append((label, "init"))
            return state

        def to_native_messages(self, messages, native_messages, state=None, *, context=None):
            LOG.append((label, "to_native_messages"))
            return native_messages

        def initialize_request(self, native_messages, state, *, context=None):
            LOG.append((label, "initialize_request"))
            return native_messages, state

        def process_chunk(self, chunk, partials, finals, native_messages, state):
            LOG.append((label, "process_chunk", _short(chunk), tuple(m["content"] for m in finals)))
            return partials, finals, native_messages, state

        def finalize(self, finals, native_messages, state, *, context=None):
            LOG.append((label, "finalize", len(finals)))
            return finals, native_messages, state

        def from_native_messages(self, native_messages, messages, state=None, *, context=None):
            LOG.append((label, "from_native_messages"))
            return messages

    return Ext


class RecFeature:
    name = "feat"

    def init(self, config, state):
        LOG.append(("feat", "init"))
        return state

    def to_native_messages(self, messages, native_messages, state=None, *, context=None):
        LOG.append(("feat", "to_native_messages"))
        return native_messages

    def initialize_request(self, native_messages, state, *, context=None):
        LOG.append(("feat", "initialize_request"))
        return native_messages, state

    def finalize(self, finals, native_messages, state, *, context=None):
        LOG.append(("feat", "finalize", len(finals)))
        return finals, native_messages, state

    def from_native_messages(self, native_messages, messages, state=None, *, context=None):
        LOG.append(("feat", "from_native_messages"))
        return messages

    def process_chunk(self, *args):  # a feature must never be called per chunk
        LOG.append(("feat", "process_chunk!"))
        raise AssertionError("features never run on the hot path")


@pytest.fixture
def rec_core():
    LOG.clear()
    # registered out of priority order on purpose; the feature's process_chunk is said to be never called
    with pytest.warns(UnknownHookWarning, match="'process_chunk', which is no feature hook"):
        return AgentCore(providers=[RecProvider], extensions=[_rec_ext("B", 20), _rec_ext("A", 10)],
                         features=[RecFeature])


def test_streaming_call_order(rec_core):
    result = rec_core.request(user_session(), {"stream": True})
    assert LOG == [
        ("provider", "init"), ("A", "init"), ("B", "init"), ("feat", "init"),
        ("provider", "to_native_messages", 1), ("A", "to_native_messages"), ("B", "to_native_messages"),
        ("feat", "to_native_messages"),
        ("provider", "initialize_request"), ("A", "initialize_request"), ("B", "initialize_request"),
        ("feat", "initialize_request"),
        ("provider", "stream_api"),
        ("provider", "process_chunk", "a"), ("A", "process_chunk", "chunk", ()), ("B", "process_chunk", "chunk", ()),
        ("provider", "process_chunk", "b"),
        ("A", "process_chunk", "chunk", ("from-chunk",)), ("B", "process_chunk", "chunk", ("from-chunk",)),
        ("provider", "finalize"),
        # the closing call carries only the finals the extensions have not seen
        ("A", "process_chunk", None, ("from-finalize",)), ("B", "process_chunk", None, ("from-finalize",)),
        ("A", "finalize", 2), ("B", "finalize", 2), ("feat", "finalize", 2),
        ("provider", "from_native_messages", 2), ("A", "from_native_messages"), ("B", "from_native_messages"),
        ("feat", "from_native_messages"),
    ]
    assert [m.content for m in result.final_messages] == ["from-chunk", "from-finalize"]
    assert ("feat", "process_chunk!") not in LOG


def test_non_streaming_call_order(rec_core):
    rec_core.request(user_session(), {"stream": False})
    middle = LOG[LOG.index(("feat", "initialize_request")) + 1:LOG.index(("A", "finalize", 2))]
    assert middle == [
        ("provider", "call_api"),
        ("provider", "finalize"),
        ("A", "process_chunk", None, ("from-call", "from-finalize")),
        ("B", "process_chunk", None, ("from-call", "from-finalize")),
    ]


def test_stream_events_carry_partials_then_finals(rec_core):
    events = list(rec_core.stream_request(user_session(), request_id="r"))
    assert [e.type for e in events] == ["start", "partial", "partial", "final", "final", "done"]
    assert [e.message.content for e in events if e.type == "partial"] == ["a", "b"]
    assert all(e.request_id == "r" for e in events)
    assert events[-1].outcome.status == "finished"


# -- the hot path does not copy the history --------------------------------------


class IdentityProvider:
    """Streams many chunks; checks it always gets back the exact history object it returned."""

    name = "ident"
    seen: list[bool] = []

    def init(self, config):
        return {"config": config, "n": 0}

    def stream_api(self, native_messages, state, *, request_id=None):
        for i in range(50):
            yield {"i": i}

    def process_chunk(self, chunk, native_messages, state):
        last = state.get("last")
        IdentityProvider.seen.append(last is None or last is native_messages)
        return [{"role": "assistant", "content": "x"}], [], native_messages, {**state, "last": native_messages}

    def finalize(self, native_messages, state, *, context=None):
        final = {"role": "assistant", "content": "done"}
        return [final], [*native_messages, final], state


class IdentityExt:
    name = "ident_ext"
    ids: set[int] = set()

    def process_chunk(self, chunk, partials, finals, native_messages, state):
        if chunk is not None:
            IdentityExt.ids.add(id(native_messages))
        return partials, finals, native_messages, state


def test_history_is_passed_by_reference_on_every_chunk():
    IdentityProvider.seen.clear()
    IdentityExt.ids.clear()
    history = [Message("user" if i % 2 == 0 else "assistant", f"m{i}") for i in range(2000)]
    session = Session("s", history)
    core = AgentCore(providers=[IdentityProvider], extensions=[IdentityExt])
    result = core.request(session, {"stream": True})
    assert result.outcome.ok
    assert len(IdentityProvider.seen) == 50 and all(IdentityProvider.seen)
    assert len(IdentityExt.ids) == 1  # one history object for all 50 chunks


def test_state_is_frozen_for_plugins():
    class Mutator:
        name = "mutator"

        def process_chunk(self, chunk, partials, finals, native_messages, state):
            state["oops"] = 1  # the honest mistake the frozen state catches
            return partials, finals, native_messages, state

    core = AgentCore(providers=[RecProvider], extensions=[Mutator])
    session = user_session()
    before = session.to_dict()
    events = list(core.stream_request(session))
    assert [e.type for e in events][-2:] == ["error", "done"]
    err = events[-2].error
    assert (err.plugin, err.hook) == ("mutator", "process_chunk")
    assert "immutable" in err.message
    assert events[-1].outcome.reason == "plugin_error"
    assert events[-1].session == session and session.to_dict() == before


def test_native_messages_append_is_refused_with_a_hint():
    class Appender:
        name = "appender"

        def to_native_messages(self, messages, native_messages):
            native_messages.append({"role": "system", "content": "x"})
            return native_messages

    core = AgentCore(providers=[RecProvider], features=[Appender])
    from agent_core import PluginError

    with pytest.raises(PluginError) as info:
        core.request(user_session())
    assert info.value.plugin == "appender" and info.value.hook == "to_native_messages"
    assert isinstance(info.value.original, TypeError)
    assert "[*native_messages, msg]" in str(info.value.original)
