"""One flow, two drivers: the HTTP attempts give the same wire, results and errors sync and async.

The streamed and the one-shot call are each written once, as a generator of
effects (:mod:`agent_core_providers._streaming`, :mod:`agent_core_providers._oneshot`),
and run by the plugin kit's ``drive_sync`` or ``drive_async``. Each scenario
below is scripted byte for byte on a loopback server and run in both modes on
a server of its own; the two runs must put the same requests on the wire
(method, path, headers that matter, body bytes, which connection), end with
the same events or answer, or raise the same typed error with the same
message. Each scenario also states what that outcome is, so a bug both modes
share still fails.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from agent_core import StreamRetry
from agent_core.errors import LLMError, ProviderRequestCancelled
from agent_core.plugin_kit import drive_async, drive_sync
from agent_core_providers._call import HTTPCall
from agent_core_providers._exchange import Exchange
from agent_core_providers._inflight import InFlightTable
from agent_core_providers._oneshot import answer_flow
from agent_core_providers._pool import async_client_for, sync_client_for
from agent_core_providers._sse import JSONEventReader
from agent_core_providers._streaming import stream_flow
from agent_core_providers.clients import aclose_clients, close_clients

from ._server import CUT, DROP, Delay, Reply, ScriptedServer, json_reply, sse_reply
from ._wire import OA_DONE, oa_chunk, oa_text

KEY = "sk-parity-0123456789abcdef"
BUSY = {"error": {"message": "slow down", "type": "rate_limit_error", "code": None}}
DOWN = {"error": {"message": f"upstream is down (key {KEY})", "type": "server_error", "code": None}}


def _answer(text: str) -> Reply:
    message = {"role": "assistant", "content": text}
    return json_reply({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})


def _stall() -> Reply:
    return Reply(stall=30.0, parts=[b"{}"], chunked=False)  # no status line for 30 s


@dataclass
class Outcome:
    results: list[Any]  # per call: the events, the answer, or (error class, message, retry_after)
    wire: list[tuple[Any, ...]]  # per request: method, path, headers that matter, body bytes
    connections: tuple[int, ...]  # per request: which connection (numbered as first seen)


@dataclass(frozen=True)
class Scenario:
    stream: list[Reply]  # the server's replies to the streamed call(s)
    answer: list[Reply]  # ... and to the one-shot call(s)
    calls: int = 1  # calls made one after the other, on one pool
    max_retries: int = 0
    deadline: float | None = None
    chunk_timeout: float | None = None
    cancel: bool = False  # cancel each call once the server has its request
    expect: Callable[[Outcome], bool] = field(default=lambda outcome: True)  # what the outcome must be


def _texts(outcome: Outcome) -> list[str | None]:
    """Per call: the text of the streamed events or of the one-shot answer (None for an error)."""
    out: list[str | None] = []
    for result in outcome.results:
        if isinstance(result, tuple):
            out.append(None)
        elif isinstance(result, dict):
            out.append(result["choices"][0]["message"]["content"])
        else:
            last = max((i for i, e in enumerate(result) if isinstance(e, tuple)), default=-1)  # after a retry
            out.append("".join(e["choices"][0]["delta"].get("content") or "" for e in result[last + 1:]
                               if e["choices"]))
    return out


def _retries(outcome: Outcome) -> list[Any]:
    """Per call: the StreamRetry markers its events held, as plain tuples."""
    return [[e for e in r if isinstance(e, tuple)] if isinstance(r, list) else [] for r in outcome.results]


def _retried(outcome: Outcome, kind: str) -> bool:
    """A stream retried once after output, after a ``kind`` failure; a one-shot call never says so."""
    streamed = isinstance(outcome.results[0], list)
    return [[r[:3] for r in rs] for rs in _retries(outcome)] == ([[("retry", 2, kind)]] if streamed else [[]])


def _plain(event: Any) -> Any:
    """An event as a value two runs can compare (a StreamRetry has no equality of its own)."""
    if isinstance(event, StreamRetry):
        return ("retry", event.attempt, type(event.error).__name__, str(event.error), event.usage)
    return event


def _error(name: str, *words: str) -> Callable[[Outcome], bool]:
    return lambda outcome: all(r[0] == name and all(w in r[1] for w in words) for r in outcome.results)


SCENARIOS = {
    "success": Scenario(
        [oa_text("hel", "lo")], [_answer("hello")], expect=lambda o: _texts(o) == ["hello"] and len(o.wire) == 1
    ),
    "429 then success after retry-after": Scenario(
        [json_reply(BUSY, 429, {"retry-after": "0"}), oa_text("hello")],
        [json_reply(BUSY, 429, {"retry-after": "0"}), _answer("hello")],
        max_retries=1,
        expect=lambda o: _texts(o) == ["hello"] and len(o.wire) == 2,
    ),
    "5xx": Scenario(
        [json_reply(DOWN, 503)], [json_reply(DOWN, 503)],
        expect=_error("ProviderUnavailableError", "upstream is down"),
    ),
    "pooled connection dropped after the request was read, retried": Scenario(
        [oa_text("one"), DROP, oa_text("two")], [_answer("one"), DROP, _answer("two")],
        calls=2, max_retries=1,  # the second call's request is read on the first one's connection, then dropped
        expect=lambda o: _texts(o) == ["one", "two"] and o.connections == (0, 0, 1),
    ),
    "pooled connection dropped after the request was read, not retried": Scenario(
        [oa_text("one"), DROP, oa_text("two")], [_answer("one"), DROP, _answer("two")],
        calls=2,
        expect=lambda o: _texts(o) == ["one", None] and o.connections == (0, 0),
    ),
    "cut after output, retried with a StreamRetry first": Scenario(
        [sse_reply(oa_chunk({"role": "assistant", "content": ""}), oa_chunk({"content": "hel"}), CUT), oa_text("hello")],
        [Reply(200, {"content-type": "application/json"}, [b'{"choi', CUT]), _answer("hello")],
        max_retries=1,
        expect=lambda o: _texts(o) == ["hello"] and len(o.wire) == 2 and _retried(o, "ProviderUnavailableError"),
    ),
    "silent past chunk_timeout, retried": Scenario(
        [sse_reply(oa_chunk({"role": "assistant", "content": ""}), oa_chunk({"content": "hel"}), Delay(1.0),
                   oa_chunk({"content": "p"}), CUT), oa_text("hello")],
        [_answer("hello")],  # a one-shot answer is not a stream: chunk_timeout_s does not apply
        max_retries=1, chunk_timeout=0.3,
        expect=lambda o: _texts(o) == ["hello"] and _retried(o, "LLMTimeoutError"),
    ),
    "cancel before the answer": Scenario(
        [_stall()], [_stall()], cancel=True, expect=_error("ProviderRequestCancelled", "req-parity")
    ),
    "deadline": Scenario(
        [_stall()], [_stall()], deadline=0.3, expect=_error("LLMTimeoutError", "deadline_s of 0.3s")
    ),
}


def _reader() -> JSONEventReader:
    def classify(event: str, value: Any) -> Any:
        return None

    def no_text_yet(value: Any) -> bool:
        return not (value["choices"] and value["choices"][0]["delta"].get("content"))

    return JSONEventReader("openai", classify, done_data=b"[DONE]", is_preamble=no_text_yet)


def _call(server: ScriptedServer, scenario: Scenario, stream: bool) -> HTTPCall:
    return HTTPCall(
        provider="openai",
        url=f"{server.url}/v1/chat/completions",
        body=b'{"model":"m","stream":%s}' % (b"true" if stream else b"false"),
        headers={"content-type": "application/json", "authorization": f"Bearer {KEY}"},
        max_retries=scenario.max_retries,
        secrets=(KEY,),
        deadline=scenario.deadline,
        chunk_timeout=scenario.chunk_timeout,
        max_retry_wait=0,
    )


def _canceller(server: ScriptedServer, table: InFlightTable, seen: int) -> threading.Thread:
    def cancel_once_the_server_has_the_request() -> None:
        for _ in range(500):
            if len(server.requests) > seen:
                break
            time.sleep(0.01)
        table.cancel("req-parity")

    thread = threading.Thread(target=cancel_once_the_server_has_the_request, daemon=True)
    thread.start()
    return thread


def _failed(exc: Exception) -> tuple[str, str, Any]:
    return (type(exc).__name__, str(exc), getattr(exc, "retry_after", None))


def _outcome(server: ScriptedServer, results: list[Any]) -> Outcome:
    ports: dict[int, int] = {}
    connections = tuple(ports.setdefault(r.client_port, len(ports)) for r in server.requests)
    wire = [
        (r.method, r.path, r.headers.get("authorization"), r.headers.get("content-type"), r.raw)
        for r in server.requests
    ]
    return Outcome(results, wire, connections)


def run_sync(server: ScriptedServer, scenario: Scenario, stream: bool) -> Outcome:
    results: list[Any] = []
    for _ in range(scenario.calls):
        table = InFlightTable()
        canceller = _canceller(server, table, len(server.requests)) if scenario.cancel else None
        call = _call(server, scenario, stream)
        with Exchange(sync_client_for(server.url, 10.0), call, table.open("req-parity"), table.close) as exchange:
            try:
                if stream:
                    results.append([_plain(e) for e in drive_sync(stream_flow(exchange, _reader))])
                else:
                    [answer] = drive_sync(answer_flow(exchange))
                    results.append(answer)
            except (LLMError, ProviderRequestCancelled) as exc:
                results.append(_failed(exc))
        if canceller is not None:
            canceller.join()
    close_clients()
    return _outcome(server, results)


def run_async(server: ScriptedServer, scenario: Scenario, stream: bool) -> Outcome:
    async def calls() -> list[Any]:
        results: list[Any] = []
        for _ in range(scenario.calls):
            table = InFlightTable()
            canceller = _canceller(server, table, len(server.requests)) if scenario.cancel else None
            call = _call(server, scenario, stream)
            async with Exchange(async_client_for(server.url, 10.0), call, table.open("req-parity"), table.close) as ex:
                try:
                    if stream:
                        results.append([_plain(event) async for event in drive_async(stream_flow(ex, _reader))])
                    else:
                        [answer] = [answer async for answer in drive_async(answer_flow(ex))]
                        results.append(answer)
                except (LLMError, ProviderRequestCancelled) as exc:
                    results.append(_failed(exc))
            if canceller is not None:
                await asyncio.to_thread(canceller.join)
        await aclose_clients()
        return results

    return _outcome(server, asyncio.run(calls()))


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "one-shot"])
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_sync_and_async_drive_the_same_attempts(name: str, stream: bool) -> None:
    scenario = SCENARIOS[name]
    outcomes = []
    for run in (run_sync, run_async):
        server = ScriptedServer()
        try:
            server.enqueue(*(scenario.stream if stream else scenario.answer))
            outcomes.append(run(server, scenario, stream))
        finally:
            server.close()
    sync, async_ = outcomes
    assert sync.results == async_.results
    assert sync.wire == async_.wire
    assert sync.connections == async_.connections
    assert scenario.expect(sync), sync
    assert KEY not in repr(sync.results)  # every error is scrubbed of the call's secrets



@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_consumer_that_stops_early_leaves_no_response_open(server: ScriptedServer, use_async: bool) -> None:
    # A closed flow can no longer ask for I/O; the exchange, closed by whoever drives it, lets the response go.
    server.enqueue(sse_reply(oa_chunk({"role": "assistant", "content": "first"}), Delay(5.0), OA_DONE))
    table = InFlightTable()
    scenario = Scenario([], [])
    seen: list[Any] = []

    def sync_run() -> httpx.Response:
        client = sync_client_for(server.url, 10.0)
        with Exchange(client, _call(server, scenario, True), table.open("r"), table.close) as ex:
            events = drive_sync(stream_flow(ex, _reader))
            seen.append(next(events))
            response = ex.response
            events.close()
        return response

    async def async_run() -> httpx.Response:
        client = async_client_for(server.url, 10.0)
        async with Exchange(client, _call(server, scenario, True), table.open("r"), table.close) as ex:
            async with aclosing(drive_async(stream_flow(ex, _reader))) as events:
                seen.append(await anext(events))
                response = ex.response
        await aclose_clients()
        return response

    started = time.monotonic()
    response = asyncio.run(async_run()) if use_async else sync_run()
    assert time.monotonic() - started < 3.0  # not waiting for the 5 s rest of the body
    assert [e["choices"][0]["delta"]["content"] for e in seen] == ["first"]
    assert response is not None and response.is_closed
    assert table.cancel("r") is False  # the call left the table of calls in flight
