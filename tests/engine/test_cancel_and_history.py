"""Cancellation by request id, and the native history kept inside the session."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from agent_core import NATIVE_KEY, AgentCore, Message, ProviderRequestCancelled, Session
from agent_core.testing import scripted_provider


class SlowProvider:
    """Streams 200 chunks, 10 ms apart, and records cancel_request calls."""

    name = "slow"
    started = threading.Event()
    cancelled: list[str] = []
    chunks_made = 0

    def init(self, config):
        return {"config": config, "text": ""}

    def stream_api(self, native_messages, state, *, request_id=None):
        SlowProvider.started.set()
        for i in range(200):
            SlowProvider.chunks_made += 1
            time.sleep(0.01)
            yield {"delta": f"w{i} "}

    def process_chunk(self, chunk, native_messages, state):
        return [{"role": "assistant", "content": chunk["delta"]}], [], native_messages, state

    def cancel_request(self, request_id):
        SlowProvider.cancelled.append(request_id)
        return True


@pytest.fixture(autouse=True)
def _reset():
    SlowProvider.started.clear()
    SlowProvider.cancelled.clear()
    SlowProvider.chunks_made = 0


def session() -> Session:
    return Session("s", [Message("user", "talk")])


def test_cancel_stops_a_stream_at_the_next_chunk():
    core = AgentCore(providers=[SlowProvider])
    events = []
    for ev in core.stream_request(session(), request_id="r1"):
        events.append(ev)
        if ev.type == "partial" and len(events) == 3:
            assert core.cancel_request("r1") is True
    assert SlowProvider.cancelled == ["r1"]
    assert events[-1].type == "done"
    assert events[-1].outcome.status == "stopped" and events[-1].outcome.reason == "cancelled"
    assert events[-1].session == session()  # nothing half-applied
    assert sum(e.type == "partial" for e in events) == 2
    assert SlowProvider.chunks_made < 10
    assert core.cancel_request("r1") is False  # no longer in flight


def test_cancel_from_another_thread_makes_request_raise():
    core = AgentCore(providers=[SlowProvider])
    outcome: dict[str, BaseException] = {}

    def worker():
        try:
            core.request(session(), {"stream": True}, request_id="r2")
        except BaseException as exc:  # noqa: BLE001
            outcome["exc"] = exc

    t = threading.Thread(target=worker)
    t.start()
    assert SlowProvider.started.wait(5)
    assert core.cancel_request("r2") is True
    t.join(5)
    assert not t.is_alive()
    assert isinstance(outcome["exc"], ProviderRequestCancelled)
    assert outcome["exc"].request_id == "r2"
    assert SlowProvider.chunks_made < 200


def test_cancel_async_stream():
    core = AgentCore(providers=[SlowProvider])

    async def main():
        seen = []
        async for ev in core.astream_request(session(), request_id="r3"):
            seen.append(ev)
            if ev.type == "partial":
                core.cancel_request("r3")
        return seen

    seen = asyncio.run(main())
    assert seen[-1].outcome.reason == "cancelled"
    assert SlowProvider.cancelled == ["r3"]


def test_unknown_request_id_is_not_cancelled():
    assert AgentCore(providers=[SlowProvider]).cancel_request("nope") is False


# -- native history ----------------------------------------------------------------


class CountingProvider:
    """Records how many core messages each to_native_messages call converts."""

    name = "counting"
    converted: list[int] = []

    def to_native_messages(self, messages, state, *, context=None):
        CountingProvider.converted.append(len(messages))
        return [{"role": m["role"], "content": m["content"], "n": True} for m in messages]

    def call_api(self, native_messages, state, *, request_id=None):
        msg = {"role": "assistant", "content": f"seen {len(native_messages)}"}
        return [], [msg], [*native_messages, msg], state


def test_native_history_is_reused_and_survives_a_round_trip():
    CountingProvider.converted.clear()
    core = AgentCore(providers=[CountingProvider])
    s1 = core.request(session(), {}).session
    assert NATIVE_KEY in s1.metadata
    # a stateless handler: serialize, deserialize, add a message, ask again
    s1 = Session.from_dict(s1.to_dict())
    s2 = core.request(s1.with_message(Message("user", "more")), {}).session
    assert CountingProvider.converted == [1, 1]  # only the new message was converted
    assert s2.messages[-1].content == "seen 3"
    record = s2.metadata[NATIVE_KEY]["counting"]
    assert record["core_count"] == 4 and len(record["messages"]) == 4


def test_native_history_is_rebuilt_when_messages_were_edited():
    CountingProvider.converted.clear()
    core = AgentCore(providers=[CountingProvider])
    s1 = core.request(session(), {}).session
    edited = s1.replace_messages([Message("user", "a different start"), Message("assistant", "ok"),
                                  Message("user", "go")])
    core.request(edited, {})
    assert CountingProvider.converted == [1, 3]


def test_native_history_is_rebuilt_for_another_provider():
    CountingProvider.converted.clear()
    other = scripted_provider("from the other provider", name="other")
    core = AgentCore(providers=[CountingProvider, other])
    s1 = core.request(session(), {"provider": "counting"}).session
    s2 = core.request(s1.with_message(Message("user", "switch")), {"provider": "other"}).session
    assert set(s2.metadata[NATIVE_KEY]) == {"other"}
    s3 = core.request(s2.with_message(Message("user", "back")), {"provider": "counting"}).session
    assert CountingProvider.converted == [1, 5]  # rebuilt from all five core messages
    assert s3.messages[-1].content == "seen 5"


class QuietOnCancel:
    """Streams one chunk, then ends its stream without a word once its call is cancelled."""

    name = "quiet"

    def __init__(self):
        self.stop = threading.Event()

    def stream_api(self, native_messages, state, *, request_id=None):
        yield {"delta": "half an ans"}
        assert self.stop.wait(5)

    def process_chunk(self, chunk, native_messages, state):
        return [{"role": "assistant", "content": chunk["delta"]}], [], native_messages, state

    def finalize(self, native_messages, state):
        final = {"role": "assistant", "content": "half an ans"}
        return [final], [*native_messages, final], state

    def cancel_request(self, request_id):
        self.stop.set()
        return True


@pytest.mark.parametrize("via", ["stream_request", "request"])
def test_a_stream_that_ends_quietly_after_a_cancel_is_cancelled_not_finished(via):
    core = AgentCore(providers=[QuietOnCancel])
    if via == "stream_request":
        events = []
        for ev in core.stream_request(session(), request_id="q1"):
            events.append(ev)
            if ev.type == "partial":
                assert core.cancel_request("q1") is True
        assert not [e for e in events if e.type == "final"]
        assert (events[-1].outcome.status, events[-1].outcome.reason) == ("stopped", "cancelled")
        assert events[-1].session == session()
    else:
        result: dict[str, BaseException] = {}

        def worker():
            try:
                core.request(session(), {"stream": True}, request_id="q2")
            except BaseException as exc:  # noqa: BLE001
                result["exc"] = exc

        t = threading.Thread(target=worker)
        t.start()
        deadline = time.monotonic() + 5
        while not core.cancel_request("q2"):
            assert time.monotonic() < deadline
            time.sleep(0.005)
        t.join(5)
        assert isinstance(result.get("exc"), ProviderRequestCancelled)
