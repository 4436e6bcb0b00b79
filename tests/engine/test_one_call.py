"""One call, one request: an empty stream is never followed by a second, billable call_api.

A provider that declares ``streams = False`` (the seed's EchoProvider, whose ``stream_api``
is a placeholder) is answered through ``call_api`` from the start; a provider that streams
and sends nothing ends the request with ``EmptyResponseError``. Whether a provider streams
is its declaration, never read from its code (:mod:`agent_core.plugins.stubs`).
"""

from __future__ import annotations

import asyncio

import pytest
from agent_core import AgentCore, BaseProvider, ConfigError, Message, Session
from agent_core.errors import EmptyResponseError
from agent_core.plugins.hooks import spec_for
from agent_core.plugins.stubs import provider_streams
from seed_plugins import EchoProvider


def session() -> Session:
    return Session("s", [Message("user", "hi")])


def streams(cls: type) -> bool:
    return provider_streams(spec_for("provider", cls))


def test_the_seed_echo_provider_answers_a_streaming_request_with_one_call_api():
    calls: list[str] = []

    class CountingEcho(EchoProvider):  # declares streams = False, so its stream_api is never called
        def call_api(self, native_messages, state):
            calls.append("call_api")
            return super().call_api(native_messages, state)

        def stream_api(self, native_messages, state):
            calls.append("stream_api")
            yield from []

    assert streams(CountingEcho) is False
    events = list(AgentCore(providers=[CountingEcho]).stream_request(session()))
    assert events[-1].outcome.ok
    assert events[-1].session.messages[-1].content == "Echo: hi"
    assert calls == ["call_api"]


def _streamer(calls: list[str], chunks: list[dict], finals_from_finalize: bool = False) -> type:
    class Streamer:
        name = "streamer"

        def init(self, config):
            return {"text": ""}

        def stream_api(self, native_messages, state, *, request_id=None):
            calls.append("stream_api")
            yield from chunks  # a real stream that may send nothing

        def process_chunk(self, chunk, native_messages, state):
            return [], [], native_messages, state

        def finalize(self, native_messages, state, *, context=None):
            if finals_from_finalize:
                final = {"role": "assistant", "content": "assembled"}
                return [final], [*native_messages, final], state
            return [], native_messages, state

        def call_api(self, native_messages, state, *, request_id=None):
            calls.append("call_api")
            final = {"role": "assistant", "content": "second request"}
            return [], [final], [*native_messages, final], state

    return Streamer


def test_an_empty_real_stream_is_a_typed_error_and_never_a_second_request():
    calls: list[str] = []
    core = AgentCore(providers=[_streamer(calls, [])])
    with pytest.raises(EmptyResponseError) as info:
        core.request(session(), {"stream": True})
    assert info.value.provider == "streamer" and "not repeated" in str(info.value)
    assert calls == ["stream_api"]


def test_an_empty_stream_arrives_as_error_then_done_in_a_stream_sync_and_async():
    calls: list[str] = []
    core = AgentCore(providers=[_streamer(calls, [])])
    events = list(core.stream_request(session()))
    assert [e.type for e in events] == ["start", "error", "done"]
    assert events[1].error.type == "EmptyResponseError" and events[1].error.plugin == "streamer"
    assert events[-1].outcome.reason == "provider_error"
    assert events[-1].session == session()

    async def collect():
        return [e async for e in core.astream_request(session())]

    assert [e.type for e in asyncio.run(collect())] == ["start", "error", "done"]
    assert calls == ["stream_api", "stream_api"]


def test_a_stream_without_chunks_whose_finalize_answers_is_fine():
    calls: list[str] = []
    core = AgentCore(providers=[_streamer(calls, [], finals_from_finalize=True)])
    result = core.request(session(), {"stream": True})
    assert result.final_messages[-1].content == "assembled"
    assert calls == ["stream_api"]


def test_a_non_streaming_request_uses_call_api_once():
    calls: list[str] = []
    result = AgentCore(providers=[_streamer(calls, [{"x": 1}])]).request(session(), {"stream": False})
    assert result.final_messages[-1].content == "second request"
    assert calls == ["call_api"]


def test_the_same_placeholder_without_the_declaration_is_taken_at_its_word():
    calls: list[str] = []

    class Undeclared:  # the seed's EchoProvider, less its streams = False
        name = "undeclared"

        def call_api(self, native_messages, state):
            calls.append("call_api")
            reply = {"role": "assistant", "content": "echo"}
            return [], [reply], [*native_messages, reply], state

        def stream_api(self, native_messages, state):
            calls.append("stream_api")
            yield from []

    assert streams(Undeclared) is True
    with pytest.raises(EmptyResponseError, match="streams = False"):
        AgentCore(providers=[Undeclared]).request(session(), {"stream": True})
    assert calls == ["stream_api"]  # never a second call: the message says how to declare it instead


def test_undeclared_streaming_follows_the_hooks_the_provider_defines_itself():
    class Inherits(BaseProvider):  # the protocol base's stream_api yields nothing: it is the default, not a stream
        def call_api(self, native_messages, state, *, request_id=None):
            return [], [{"role": "assistant", "content": "whole"}], native_messages, state

    class Streams(BaseProvider):
        def stream_api(self, native_messages, state, *, request_id=None):
            yield {"x": 1}

    class AsyncOnly:
        async def astream_api(self, native_messages, state, *, request_id=None):
            yield {"x": 1}

    class CallsOnly:
        def call_api(self, native_messages, state, *, request_id=None):
            return [], [], native_messages, state

    assert [streams(c) for c in (Inherits, Streams, AsyncOnly, CallsOnly)] == [False, True, True, False]
    result = AgentCore(providers=[Inherits]).request(session(), {"stream": True})
    assert result.final_messages[-1].content == "whole"


def test_a_declaration_wins_over_the_hooks_and_is_checked():
    class Says(BaseProvider):
        streams = True

        def stream_api(self, native_messages, state, *, request_id=None):
            yield {"x": 1}

        def call_api(self, native_messages, state, *, request_id=None):
            return [], [], native_messages, state

    class Refuses(Says):
        streams = False

    assert streams(Says) is True and streams(Refuses) is False
    for bad, words in (
        (type("Truthy", (Says,), {"streams": 1}), "must be True or False"),
        (type("NoStream", (BaseProvider,), {"streams": True, "call_api": Says.call_api}), "none of stream_api"),
        (type("NoCall", (BaseProvider,), {"streams": False, "stream_api": Says.stream_api}), "none of call_api"),
    ):
        with pytest.raises(ConfigError, match=words):
            streams(bad)
        with pytest.raises(ConfigError, match=words):
            AgentCore(providers=[bad]).request(session(), {"stream": True})
