"""Text answers from the live server: streaming, usage, finish reasons, load, connection reuse."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest

from ._kit import MODES, backoff_retries, collect, make_core, run_async, session_with

pytestmark = pytest.mark.live

PROVIDERS = ["openai", "anthropic"]
CUT = {"openai": ("finish_reason", "length"), "anthropic": ("stop_reason", "max_tokens")}


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_streams_text_in_pieces_with_usage(llama, provider, use_async):
    core = make_core()
    session = session_with(core, "Tell me about the sea.")
    events = collect(core, session, llama.config(provider, max_tokens=12), use_async=use_async)

    kinds = [e.type for e in events]
    assert kinds[0] == "start" and kinds[-1] == "done", kinds
    assert "error" not in kinds, [e for e in events if e.type == "error"]
    pieces = [e.message.content for e in events if e.type == "partial" and e.message.content]
    assert len(pieces) >= 2, "the answer should arrive in several chunks"
    (final,) = [e.message for e in events if e.type == "final"]
    assert final.role == "assistant"
    assert final.content == "".join(pieces)  # partials carry only new text, and add up to the final

    usage = final.metadata["usage"]
    assert isinstance(usage["input_tokens"], int) and usage["input_tokens"] > 0
    assert isinstance(usage["output_tokens"], int) and 0 < usage["output_tokens"] <= 12
    done = events[-1]
    assert done.outcome.status == "finished"
    assert done.usage.provider_calls == 1
    assert (done.usage.input_tokens, done.usage.output_tokens) == (usage["input_tokens"], usage["output_tokens"])
    assert list(done.session.messages)[-1] == final


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(("use_async", "stream"), MODES)
def test_finish_reason_length(llama, provider, use_async, stream):
    core = make_core()
    session = session_with(core, "Write a long poem about mountains.")
    config = llama.config(provider, max_tokens=3, stream=stream)
    result = run_async(core.arequest, session, config) if use_async else core.request(session, config)

    key, value = CUT[provider]
    (message,) = result.final_messages
    assert message.metadata[key] == value
    assert message.metadata["usage"]["output_tokens"] == 3
    assert isinstance(message.content, str)
    assert result.outcome.status == "finished"


#: The model (Gemma 3 270M, a base model) hardly ever ends a turn by itself, so
#: "stop" comes from stop strings, sent with each provider's own key.
STOPS = {"openai": {"stop": [".", "\n"]}, "anthropic": {"stop_sequences": [".", "\n"]}}


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(("use_async", "stream"), MODES)
def test_finish_reason_stop(llama, provider, use_async, stream):
    core = make_core()
    session = session_with(core, "Say hi.")
    config = llama.config(provider, max_tokens=64, stream=stream, **STOPS[provider])
    result = run_async(core.arequest, session, config) if use_async else core.request(session, config)

    (message,) = result.final_messages
    key, value = {"openai": ("finish_reason", "stop"), "anthropic": ("stop_reason", "end_turn")}[provider]
    assert message.metadata[key] == value
    assert message.metadata["usage"]["output_tokens"] < 64
    assert isinstance(message.content, str)
    assert result.outcome.status == "finished"


def test_eight_concurrent_requests_sync(llama):
    core = make_core()
    configs = [llama.config(provider, max_tokens=6) for provider in PROVIDERS * 4]

    def one(i: int):
        session = session_with(core, f"Count to {i + 2}.")
        return core.request(session, configs[i], request_id=f"concurrent-{i}")

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(one, range(8)))
    assert [r.request_id for r in results] == [f"concurrent-{i}" for i in range(8)]
    for result in results:
        assert result.outcome.status == "finished"
        (message,) = result.final_messages
        assert message.role == "assistant" and isinstance(message.content, str)
        assert 0 < message.metadata["usage"]["output_tokens"] <= 6


def test_eight_concurrent_requests_async(llama):
    core = make_core()

    async def main():
        tasks = [
            core.arequest(session_with(core, f"Count to {i + 2}."), llama.config(provider, max_tokens=6, stream=True))
            for i, provider in enumerate(PROVIDERS * 4)
        ]
        return await asyncio.gather(*tasks)

    results = run_async(main)
    assert len({r.request_id for r in results}) == 8
    for result in results:
        assert result.outcome.status == "finished"
        assert 0 < result.usage.output_tokens <= 6


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_twenty_back_to_back_streams_never_back_off(llama, provider, use_async, provider_log):
    """The server closes a connection after a streamed answer; reusing it must not cost a retry delay."""
    core = make_core()
    config = llama.config(provider, max_tokens=2)  # default max_retries: a failed reuse would be retried

    def run_sync():
        return [list(core.stream_request(session_with(core, f"Hi {i}"), config))[-1] for i in range(20)]

    async def run_async_():
        out = []
        for i in range(20):
            out.append([e async for e in core.astream_request(session_with(core, f"Hi {i}"), config)][-1])
        return out

    dones = run_async(run_async_) if use_async else run_sync()
    assert [d.outcome.status for d in dones] == ["finished"] * 20, [d.outcome for d in dones]
    assert all(d.usage.provider_calls == 1 for d in dones)
    assert backoff_retries(provider_log.records) == []
