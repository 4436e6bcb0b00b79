"""The closing step: each extension's process_chunk(None, ...) once, handed what the one before returned.

Partials an extension flushes at the end of the stream go through every
extension after it, as partials do during the stream, so none can slip text
past a later one, and the partials of a call join to its final text.
"""

from __future__ import annotations

from typing import Any

import pytest
from agent_core import AgentCore, Message, PluginError

calls: list[tuple[str, Any, list[str], list[str]]] = []


@pytest.fixture(autouse=True)
def _clear() -> None:
    calls.clear()


def texts(messages: Any) -> list[str]:
    return [m.get("content") or "" for m in messages]


def provider(chunks: list[str], *, call_partials: list[str] | None = None) -> type:
    """Streams ``chunks`` (or, with ``call_partials``, answers through call_api with those partials)."""

    class Provider:
        name = "p"

        def init(self, config):
            return {"config": config}

        def process_chunk(self, chunk, native_messages, state):
            return [{"role": "assistant", "content": chunk}], [], native_messages, state

        def finalize(self, native_messages, state, *, context=None):
            if call_partials is not None:
                return [], native_messages, state
            final = {"role": "assistant", "content": "".join(chunks)}
            return [final], [*native_messages, final], state

    if call_partials is None:
        def stream_api(self, native_messages, state, *, request_id=None):
            yield from chunks

        Provider.stream_api = stream_api  # type: ignore[attr-defined]
    else:
        def call_api(self, native_messages, state, *, request_id=None):
            final = {"role": "assistant", "content": "".join(call_partials)}
            partials = [{"role": "assistant", "content": c} for c in call_partials]
            return partials, [final], [*native_messages, final], state

        Provider.call_api = call_api  # type: ignore[attr-defined]
    return Provider


class Buffering:
    """Holds every partial it is given and releases them all at the closing step."""

    name = "buffering"
    priority = 10

    def process_chunk(self, chunk, partials, finals, native_messages, state):
        calls.append((self.name, chunk, texts(partials), texts(finals)))
        held = [*(state.get("buffering") or ()), *partials]
        if chunk is None:
            return held, finals, native_messages, {**state, "buffering": None}
        return [], finals, native_messages, {**state, "buffering": held}


class Upper:
    """Upper-cases every partial and final it sees (stands in for redact: it must see all text)."""

    name = "upper"
    priority = 50

    def process_chunk(self, chunk, partials, finals, native_messages, state):
        calls.append((self.name, chunk, texts(partials), texts(finals)))
        return ([{**p, "content": p["content"].upper()} for p in partials],
                [{**f, "content": f["content"].upper()} for f in finals], native_messages, state)


class HoldsLastChar:
    """Holds back the last character of the stream and flushes it at the end (a marker scanner's habit)."""

    name = "holds_last"
    priority = 30

    def process_chunk(self, chunk, partials, finals, native_messages, state):
        calls.append((self.name, chunk, texts(partials), texts(finals)))
        text = (state.get("holds_last") or "") + "".join(texts(partials))
        if chunk is None:
            return ([{"role": "assistant", "content": text}] if text else []), finals, native_messages, {
                **state, "holds_last": None}
        return ([{"role": "assistant", "content": text[:-1]}] if text[:-1] else []), finals, native_messages, {
            **state, "holds_last": text[-1:]}


def run(chunks: list[str], *extensions: type, **kw: Any) -> tuple[list[str], str]:
    core = AgentCore(providers=[provider(chunks, **kw)], extensions=list(extensions))
    session = core.add_message(core.create_session(), Message(role="user", content="hi"))
    events = list(core.stream_request(session, {}))
    assert events[-1].type == "done", events
    partials = [e.message.content for e in events if e.type == "partial"]
    (final,) = [e.message.content for e in events if e.type == "final"]
    return partials, final


def test_what_an_extension_flushes_at_the_end_passes_the_extensions_after_it() -> None:
    partials, final = run(["a secret ", "in two"], Buffering, Upper)
    assert partials == ["A SECRET ", "IN TWO"]  # upper-cased: Upper saw them
    assert "".join(partials) == final == "A SECRET IN TWO"
    closing = [(name, parts, finals) for name, chunk, parts, finals in calls if chunk is None]
    # call order unchanged (chain order, once each); the second is handed what the first flushed
    assert closing == [("buffering", [], ["a secret in two"]), ("upper", ["a secret ", "in two"], ["a secret in two"])]


def test_flushes_of_several_extensions_keep_stream_order() -> None:
    # HoldsLastChar holds "o" while the buffer holds everything; at the end the buffer's flush
    # must go through HoldsLastChar, or "o" would come out before "tw" ("... in tow").
    partials, final = run(["a secret ", "in two"], Buffering, HoldsLastChar, Upper)
    assert "".join(partials) == final == "A SECRET IN TWO"


def test_call_api_partials_go_through_the_extensions_too() -> None:
    partials, final = run([], HoldsLastChar, Upper, call_partials=["not ", "streamed"])
    assert "".join(partials) == final == "NOT STREAMED"
    assert [(n, c, p) for n, c, p, _ in calls] == [
        ("holds_last", None, ["not ", "streamed"]), ("upper", None, ["not streamed"])]


def test_call_api_partials_without_extensions_are_shown_as_they_are() -> None:
    partials, final = run([], call_partials=["one ", "two"])
    assert partials == ["one ", "two"] and final == "one two"


def test_an_invalid_flushed_partial_is_blamed_on_the_extension_that_flushed_it() -> None:
    class Robot:
        name = "robot"
        priority = 10

        def process_chunk(self, chunk, partials, finals, native_messages, state):
            if chunk is None:
                return [*partials, {"role": "robot", "content": "x"}], finals, native_messages, state
            return partials, finals, native_messages, state

    class Pass:
        name = "pass"
        priority = 20

        def process_chunk(self, chunk, partials, finals, native_messages, state):
            return partials, finals, native_messages, state

    core = AgentCore(providers=[provider(["a"])], extensions=[Robot, Pass])
    session = core.add_message(core.create_session(), Message(role="user", content="hi"))
    with pytest.raises(PluginError, match="invalid partial") as info:
        core.request(session, {"stream": True})
    assert (info.value.plugin, info.value.hook) == ("robot", "process_chunk")
