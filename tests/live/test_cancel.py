"""Cancelling live requests: mid-stream, and while the server is still working on a non-streamed answer.

A deadline is the behaviour here, so these tests time the cancel, generously:
the requests would otherwise run for a long time (``max_tokens`` in the
thousands on a model that rarely stops by itself).
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from agent_core import ProviderRequestCancelled

from ._kit import make_core, run_async, session_with

pytestmark = pytest.mark.live

PROVIDERS = ["openai", "anthropic"]
#: Far more than the model writes in the time a cancel may take, even on an idle machine
#: (about 100 tokens/s): a cancel that waits for the answer cannot pass.
LONG = 2000
PROMPT = "Tell me a very long story about a lighthouse keeper and his cat, chapter by chapter."
#: A cancel lands well under a second; the bound leaves room for a loaded machine (the
#: requests would run for tens of seconds otherwise).
WITHIN = 3.0


@pytest.mark.parametrize("provider", PROVIDERS)
def test_cancel_mid_stream_sync(llama, provider):
    core = make_core()
    session = session_with(core, PROMPT)
    events = []
    cancelled_at = None
    for event in core.stream_request(session, llama.config(provider, max_tokens=LONG), request_id="live-cancel"):
        events.append(event)
        if cancelled_at is None and event.type == "partial" and sum(e.type == "partial" for e in events) == 3:
            cancelled_at = time.monotonic()
            threading.Thread(target=core.cancel_request, args=("live-cancel",)).start()
    assert cancelled_at is not None, "the stream ended before three chunks arrived"
    assert time.monotonic() - cancelled_at < WITHIN
    done = events[-1]
    assert done.type == "done" and done.outcome.status == "stopped" and done.outcome.reason == "cancelled"
    assert done.session == session  # a cancelled request leaves the caller's session as it was


@pytest.mark.parametrize("provider", PROVIDERS)
def test_cancel_mid_stream_async(llama, provider):
    core = make_core()
    session = session_with(core, PROMPT)

    async def main():
        events = []
        cancelled_at = None
        async for event in core.astream_request(session, llama.config(provider, max_tokens=LONG), request_id="a"):
            events.append(event)
            if cancelled_at is None and sum(e.type == "partial" for e in events) == 3:
                cancelled_at = time.monotonic()
                asyncio.get_running_loop().call_soon(core.cancel_request, "a")
        return events, cancelled_at

    events, cancelled_at = run_async(main)
    assert cancelled_at is not None, "the stream ended before three chunks arrived"
    assert time.monotonic() - cancelled_at < WITHIN
    assert events[-1].type == "done" and events[-1].outcome.reason == "cancelled"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_cancel_non_streamed_request_sync(own_llama, provider):
    """Item 3: a non-streamed request stops at once, not when the generation is done."""
    core = make_core()
    session = session_with(core, PROMPT)
    config = own_llama.config(provider, max_tokens=LONG, stream=False)
    cancelled_at: list[float] = []

    def cancel_once_generating() -> None:
        if own_llama.wait_until_generating():  # the request is in the server's hands
            cancelled_at.append(time.monotonic())
            core.cancel_request("live-call")

    canceller = threading.Thread(target=cancel_once_generating)
    canceller.start()
    try:
        with pytest.raises(ProviderRequestCancelled):
            core.request(session, config, request_id="live-call")
        returned_at = time.monotonic()
    finally:
        canceller.join()
    assert cancelled_at, "the server never started generating"
    assert returned_at - cancelled_at[0] < WITHIN, f"returned {returned_at - cancelled_at[0]:.2f} s after the cancel"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_cancel_non_streamed_request_async(own_llama, provider):
    core = make_core()
    session = session_with(core, PROMPT)
    config = own_llama.config(provider, max_tokens=LONG, stream=False)

    async def main():
        async def cancel_once_generating():
            assert await asyncio.to_thread(own_llama.wait_until_generating), "the server never started generating"
            core.cancel_request("live-acall")
            return time.monotonic()

        canceller = asyncio.create_task(cancel_once_generating())
        with pytest.raises(ProviderRequestCancelled):
            await core.arequest(session, config, request_id="live-acall")
        returned_at = time.monotonic()
        return returned_at - await canceller

    assert run_async(main) < WITHIN
