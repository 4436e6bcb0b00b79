"""One call, one request: an empty stream is never followed by a second, billable call_api.

A provider whose ``stream_api`` is only a stub (the seed's EchoProvider) is answered
through ``call_api`` from the start; a provider that really streams and sends nothing
ends the request with ``EmptyResponseError``.
"""

from __future__ import annotations

import asyncio

import pytest
from agent_core import AgentCore, Message, Session
from agent_core.errors import EmptyResponseError
from agent_core.plugins.stubs import streams_for_real
from seed_plugins import EchoProvider


def session() -> Session:
    return Session("s", [Message("user", "hi")])


def test_the_seed_echo_provider_answers_a_streaming_request_with_one_call_api():
    calls: list[str] = []

    class CountingEcho(EchoProvider):
        def call_api(self, native_messages, state):
            calls.append("call_api")
            return super().call_api(native_messages, state)

        # the stub, inherited unchanged in spirit: written again so a call would show
        def stream_api(self, native_messages, state):
            calls.append("stream_api")
            yield from []

    assert streams_for_real(CountingEcho) is True  # it records, so it is not a stub...

    class StubEcho(EchoProvider):
        def call_api(self, native_messages, state):
            calls.append("call_api")
            return super().call_api(native_messages, state)

    assert streams_for_real(StubEcho) is False  # ...while the seed's inherited stub is
    events = list(AgentCore(providers=[StubEcho]).stream_request(session()))
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


def test_a_class_without_readable_source_is_taken_at_its_word():
    ns: dict = {}
    exec("class P:\n    def stream_api(self, native_messages, state):\n        yield from []\n", ns)
    assert streams_for_real(ns["P"]) is True


def test_stub_detection_reads_the_source():
    class Stub:
        def stream_api(self, native_messages, state):
            """Nothing to stream."""
            return iter([])

    class Passes:
        def stream_api(self, native_messages, state):
            pass

    class Ellipsis_:
        def stream_api(self, native_messages, state): ...

    class EmptyTuple:
        def stream_api(self, native_messages, state):
            return
            yield from ()

    class Real:
        def stream_api(self, native_messages, state):
            yield {"delta": "x"}

    class Delegates:
        def stream_api(self, native_messages, state):
            return iter(native_messages)

    assert [streams_for_real(c) for c in (Stub, Passes, Ellipsis_, EmptyTuple)] == [False] * 4
    assert streams_for_real(Real) is True and streams_for_real(Delegates) is True
