"""Hostile and quirky servers on loopback: the transport faults real servers show, byte for byte.

Each test scripts the exact bytes a real (or misbehaving) server sends and
checks what the provider makes of them: a last event without its blank line,
a server that stalls before its headers, keeps the body open after the end
marker, answers a stream with one JSON body, sends bytes that are not UTF-8,
a line over the cap, a retry-after of an hour, one byte a second, or closes
its keep-alive connections behind the client's back.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from typing import Any

import httpx
import pytest
from agent_core import AgentCore, Message
from agent_core.errors import (
    ConfigError,
    LLMError,
    LLMTimeoutError,
    MalformedResponseError,
    ProviderRequestCancelled,
    ProviderUnavailableError,
    RateLimitError,
)
from agent_core_providers._errors import RETRY_AFTER_CEILING
from agent_core_providers._retry import Retries
from agent_core_providers._sse import MAX_LINE_BYTES
from agent_core_providers.openai import OpenAIProvider

from ._driver import arun_turn, run_turn
from ._server import DROP, Delay, Reply, json_reply, sse_reply
from ._wire import OA_DONE, an_event, an_start, oa_chunk
from .conftest import run_async
from .test_transport import ANTHROPIC, KITS, OPENAI, USER, Kit, _opening

SYNC_ASYNC = pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])


def turn(kit: Kit, server: Any, use_async: bool = False, *, stream: bool = True, request_id: str = "req-1", **cfg: Any):
    config = kit.config(server, **cfg)
    if use_async:
        return run_async(
            arun_turn, kit.provider(), kit.extensions(), USER, config, stream=stream, request_id=request_id
        )
    return run_turn(kit.provider(), kit.extensions(), USER, config, stream=stream, request_id=request_id)


def _last_event_unclosed(kit: Kit, ending: bytes) -> list[bytes]:
    """A complete answer whose final event is followed by ``ending`` instead of a blank line."""
    parts = [*_opening(kit), kit.first_event, *kit.done]
    last = parts.pop()
    assert last.endswith(b"\n\n")
    return [*parts, last[:-2] + ending]


# -- the last event without its closing blank line --------------------------------------


@KITS
@pytest.mark.parametrize("ending", [b"", b"\n", b"\r\n"], ids=["eof", "lf", "crlf"])
def test_last_event_without_blank_line_is_dispatched(server, kit, ending):
    server.enqueue(sse_reply(*_last_event_unclosed(kit, ending)))
    result = turn(kit, server, max_retries=2)
    assert result.finals[0]["content"] == "tick "
    assert len(server.requests) == 1  # complete: no retry, no error


@KITS
def test_body_cut_inside_the_last_event_is_still_truncated(server, kit):
    parts = _last_event_unclosed(kit, b"")
    parts[-1] = parts[-1][: len(parts[-1]) - 6]  # the last JSON (or [DONE]) loses its end
    server.enqueue(sse_reply(*parts))
    with pytest.raises(ProviderUnavailableError, match="ended in the middle of an event"):
        turn(kit, server)


# -- cancel before the response headers --------------------------------------------


# Each provider, sync and async, streamed and not: four combinations cover every pair once.
CANCEL_CASES = [(OPENAI, False, True), (ANTHROPIC, True, True), (ANTHROPIC, False, False), (OPENAI, True, False)]


@pytest.mark.parametrize(
    ("kit", "use_async", "stream"),
    CANCEL_CASES,
    ids=["openai-sync-stream", "anthropic-async-stream", "anthropic-sync-call", "openai-async-call"],
)
def test_cancel_bites_before_the_headers_and_closes_the_connection(server, kit, use_async, stream):
    server.enqueue(Reply(stall=30.0, parts=[b"{}"], chunked=False))  # no status line for 30 s
    provider = kit.provider()

    def cancel_once_the_server_has_the_request() -> None:
        # Cancelling before the request is written tests something else (a cancel before
        # connecting); under load an event loop may take longer than a fixed delay to get there.
        for _ in range(500):
            if server.requests:
                break
            time.sleep(0.01)
        provider.cancel_request("req-h")

    timer = threading.Thread(target=cancel_once_the_server_has_the_request)
    started = time.monotonic()
    timer.start()
    config = kit.config(server)
    with pytest.raises(ProviderRequestCancelled):
        if use_async:
            run_async(arun_turn, provider, [], USER, config, stream=stream, request_id="req-h")
        else:
            run_turn(provider, [], USER, config, stream=stream, request_id="req-h")
    assert time.monotonic() - started < 5.0  # the server would keep it waiting 30 s
    timer.join()
    for _ in range(100):  # the server sees the client hang up (it waits in select, not in sleep)
        if server.peer_closed:
            break
        time.sleep(0.02)
    assert server.peer_closed, "the cancelled request's connection was left open"


@pytest.mark.parametrize(
    ("kit", "use_async", "stream"), CANCEL_CASES,
    ids=["openai-sync-stream", "anthropic-async-stream", "anthropic-sync-call", "openai-async-call"],
)
def test_a_cancel_just_before_the_request_is_written_does_not_wait_for_an_answer(
    server, kit, use_async, stream, monkeypatch
):
    # The cancel lands after the attempt began and before its first write. The watched
    # connection refuses the write, and httpcore, which swallows a failed request write
    # to read an early answer, must not then wait out the read timeout (30 s here) for
    # an answer to a request that was never sent.
    began = Retries.begin

    def begin_then_cancel(self: Retries) -> None:
        began(self)
        self.record.cancel()

    monkeypatch.setattr(Retries, "begin", begin_then_cancel)
    server.enqueue(json_reply({"never": "sent"}))
    started = time.monotonic()
    with pytest.raises(ProviderRequestCancelled):
        turn(kit, server, use_async, stream=stream, timeout=30)
    assert time.monotonic() - started < 5.0
    assert server.requests == []


# -- a complete answer is returned at once ------------------------------------------------


@pytest.mark.parametrize(
    ("kit", "use_async"), [(OPENAI, False), (ANTHROPIC, True)], ids=["sync-openai", "async-anthropic"]
)
def test_answer_returns_at_once_when_the_body_stays_open(server, kit, use_async):
    # The end marker arrives, then the server holds the body open for 20 s.
    server.enqueue(sse_reply(*kit.text("all", " here").parts, Delay(20.0)))
    started = time.monotonic()
    result = turn(kit, server, use_async)
    assert time.monotonic() - started < 5.0
    assert result.finals[0]["content"] == "all here"


@pytest.mark.parametrize("kit", [ANTHROPIC], ids=["anthropic"])
def test_injected_client_also_returns_at_once_and_keeps_reusing(server, kit):
    # Body held open after the end marker, then a normal one: the first returns at once,
    # the second still goes back to the pool (same connection for the third).
    server.enqueue(sse_reply(*kit.text("held").parts, Delay(20.0)), kit.text("a"), kit.text("b"))
    with httpx.Client() as client:
        provider = kit.provider.using(client=client)
        started = time.monotonic()
        assert run_turn(provider(), [], USER, kit.config(server)).finals[0]["content"] == "held"
        assert time.monotonic() - started < 5.0
        assert run_turn(provider(), [], USER, kit.config(server)).finals[0]["content"] == "a"
        assert run_turn(provider(), [], USER, kit.config(server)).finals[0]["content"] == "b"
    ports = [r.client_port for r in server.requests]
    assert ports[1] == ports[2]


# -- a JSON answer to a streaming request ----------------------------------------------------

OA_COMPLETION = {
    "id": "chatcmpl-9",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "Calling it.",
                "tool_calls": [
                    {"id": "call_9", "type": "function", "function": {"name": "add", "arguments": '{"a":1}'}}
                ],
            },
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
}
AN_MESSAGE = {
    "id": "msg_9",
    "type": "message",
    "role": "assistant",
    "model": "claude-test",
    "content": [
        {"type": "text", "text": "Calling it."},
        {"type": "tool_use", "id": "toolu_9", "name": "add", "input": {"a": 1}},
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {"input_tokens": 5, "output_tokens": 3},
}


@KITS
@SYNC_ASYNC
def test_json_answer_to_a_streaming_request_is_used_not_retried(server, kit, use_async):
    server.enqueue(json_reply(OA_COMPLETION if kit is OPENAI else AN_MESSAGE))
    result = turn(kit, server, use_async, max_retries=3)
    assert len(server.requests) == 1 and server.requests[0].body["stream"] is True
    final = result.finals[0]
    assert final["content"] == "Calling it."
    call = final["metadata"]["tool_calls"][0]
    assert call["function"]["name"] == "add" and call["function"]["arguments"].replace(" ", "") == '{"a":1}'
    assert final["metadata"]["usage"]["output_tokens"] == 3


@KITS
def test_event_stream_labelled_as_json_is_still_read_as_a_stream(server, kit):
    reply = kit.text("mis", "labelled")
    server.enqueue(Reply(200, {"content-type": "application/json"}, reply.parts))
    assert turn(kit, server).finals[0]["content"] == "mislabelled"


@KITS
def test_json_error_object_with_200_to_a_streaming_request_is_typed(server, kit):
    kind = "server_error" if kit is OPENAI else "api_error"
    body = kit.error_body(kind, "upstream failed")
    server.enqueue(json_reply(body))
    with pytest.raises(ProviderUnavailableError):
        turn(kit, server)


# -- bytes that are not UTF-8 -------------------------------------------------------------------


def _bad_utf8_event(kit: Kit) -> bytes:
    if kit is ANTHROPIC:
        return (
            b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
            b'"delta":{"type":"text_delta","text":"\xff\xfe"}}\n\n'
        )
    return b'data: {"choices":[{"index":0,"delta":{"content":"\xff\xfe"}}]}\n\n'


@KITS
def test_bad_utf8_in_a_stream_is_a_malformed_response(server, kit):
    server.enqueue(sse_reply(*_opening(kit), _bad_utf8_event(kit), *kit.done))
    with pytest.raises(MalformedResponseError, match="invalid UTF-8") as info:
        turn(kit, server, max_retries=2)
    assert info.value.status_code == 200 and info.value.provider == kit.name
    assert len(server.requests) == 1


@KITS
def test_bad_utf8_in_a_5xx_error_body_keeps_the_status_type(server, kit):
    body = b'{"error": {"message": "upstream \xff broke", "type": "server_error"}}'
    server.enqueue(Reply(500, {"content-type": "application/json"}, [body], chunked=False))
    with pytest.raises(ProviderUnavailableError, match="upstream") as info:
        turn(kit, server)
    assert info.value.status_code == 500


@KITS
def test_a_429_with_a_bad_byte_is_a_rate_limit_and_is_retried(server, kit):
    body = b'{"error": {"message": "slow \xff down", "type": "rate_limit_error"}}'
    limited = Reply(429, {"content-type": "application/json", "retry-after": "0"}, [body], chunked=False)
    server.enqueue(limited, kit.text("after"))
    assert turn(kit, server, max_retries=1).finals[0]["content"] == "after"
    assert len(server.requests) == 2
    server.enqueue(limited)
    with pytest.raises(RateLimitError) as info:
        turn(kit, server, max_retries=0)
    assert info.value.status_code == 429


@KITS
def test_bad_utf8_in_a_non_streamed_answer_is_malformed(server, kit):
    server.enqueue(Reply(200, {"content-type": "application/json"}, [b'{"id": "\xff"}'], chunked=False))
    with pytest.raises(MalformedResponseError, match="not valid UTF-8") as info:
        turn(kit, server, stream=False, max_retries=2)
    assert info.value.status_code == 200 and len(server.requests) == 1


# -- a line over the cap --------------------------------------------------------------------------


def test_a_line_over_the_cap_is_refused(server):
    line = b"data: " + b"a" * (MAX_LINE_BYTES + 1024)  # never ends
    server.enqueue(sse_reply(*_opening(OPENAI), line))
    with pytest.raises(MalformedResponseError, match=f"longer than {MAX_LINE_BYTES} bytes"):
        turn(OPENAI, server, max_retries=2)
    assert len(server.requests) == 1


# -- retry-after caps, deadlines, inf and NaN -----------------------------------------------------


def _limited(kit: Kit, after: str) -> Reply:
    return json_reply(kit.error_body("rate_limit_exceeded", "Slow down"), status=429, headers={"retry-after": after})


@KITS
def test_retry_after_above_the_cap_fails_fast(server, kit):
    server.enqueue(_limited(kit, "3600"), kit.text("never"))
    started = time.monotonic()
    with pytest.raises(RateLimitError, match="max_retry_wait_s") as info:
        turn(kit, server, max_retries=2)
    assert time.monotonic() - started < 5.0
    assert info.value.retry_after == 3600.0 and len(server.requests) == 1


@KITS
def test_retry_after_within_a_raised_cap_is_waited(server, kit):
    server.enqueue(_limited(kit, "0.2"), kit.text("later"))
    result = turn(kit, server, max_retries=1, max_retry_wait_s=0.5)
    assert result.finals[0]["content"] == "later" and len(server.requests) == 2
    server.enqueue(_limited(kit, "0.2"))
    with pytest.raises(RateLimitError):  # a cap of 0.1 s: 0.2 s is too long to wait
        turn(kit, server, max_retries=1, max_retry_wait_s=0.1)


@pytest.mark.parametrize("kit", [OPENAI], ids=["openai"])  # pure header parsing: one API is enough
def test_infinite_and_nan_retry_after(server, kit):
    server.enqueue(_limited(kit, "inf"))
    with pytest.raises(RateLimitError) as info:
        turn(kit, server, max_retries=2)
    # "never", kept finite so an error event's JSON can carry it
    assert info.value.retry_after == RETRY_AFTER_CEILING and len(server.requests) == 1
    server.enqueue(_limited(kit, "nan"), kit.text("ok"))  # NaN says nothing: plain backoff
    assert turn(kit, server, max_retries=1).finals[0]["content"] == "ok"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("max_retry_wait_s", float("nan")),
        ("deadline_s", -1),
        ("timeout", "soon"),
        ("deadline_s", float("nan")),
        ("max_retries", float("inf")),
        ("max_retries", float("nan")),
    ],
)
def test_bad_second_values_are_config_errors(server, key, value):
    with pytest.raises(ConfigError) as info:
        turn(OPENAI, server, **{key: value})
    assert info.value.key == key
    assert not server.requests


@pytest.mark.parametrize(
    ("kit", "use_async"), [(OPENAI, False), (ANTHROPIC, True)], ids=["sync-openai", "async-anthropic"]
)
def test_deadline_bounds_a_server_that_drips(server, kit, use_async):
    parts: list[Any] = list(_opening(kit))
    for _ in range(60):  # one event every 0.25 s for 15 s; the read timeout never fires
        parts += [Delay(0.25), kit.first_event]
    server.enqueue(sse_reply(*parts, *kit.done))
    started = time.monotonic()
    with pytest.raises(LLMTimeoutError, match="deadline_s of 0.6s"):
        turn(kit, server, use_async, deadline_s=0.6)
    assert time.monotonic() - started < 5.0


@SYNC_ASYNC
def test_deadline_also_bounds_the_wait_for_headers(server, use_async):
    server.enqueue(Reply(stall=30.0, parts=[b"{}"], chunked=False))
    started = time.monotonic()
    with pytest.raises(LLMTimeoutError):
        turn(ANTHROPIC, server, use_async, stream=False, deadline_s=0.2)
    assert time.monotonic() - started < 5.0


@KITS
def test_infinite_timeout_and_deadline_mean_none(server, kit):
    server.enqueue(kit.text("fine"))
    assert turn(kit, server, timeout=float("inf"), deadline_s=float("inf")).finals[0]["content"] == "fine"


# -- stale pooled connections --------------------------------------------------------------------


@KITS
@SYNC_ASYNC
def test_a_pooled_connection_dropped_after_the_request_is_a_counted_retry(server, kit, use_async, caplog):
    # Request 2 reaches the pooled connection of request 1, and the server reads it and closes
    # without answering: it may have been generating, so the resend is a retry that counts.
    server.enqueue(kit.text("one"), DROP, kit.text("two"))

    async def both() -> list[Any]:
        first = await arun_turn(kit.provider(), [], USER, kit.config(server, max_retries=1))
        second = await arun_turn(kit.provider(), [], USER, kit.config(server, max_retries=1))
        return [first, second]

    with caplog.at_level(logging.DEBUG, logger="agent_core_providers"):
        if use_async:
            turns = run_async(both)
        else:
            turns = [run_turn(kit.provider(), [], USER, kit.config(server, max_retries=1)) for _ in range(2)]
    assert [t.finals[0]["content"] for t in turns] == ["one", "two"]
    ports = [r.client_port for r in server.requests]
    assert len(ports) == 3 and ports[0] == ports[1] != ports[2]
    assert [r for r in caplog.records if "retry 1/1" in r.getMessage()]


@KITS
def test_a_fresh_connection_that_drops_is_not_retried_for_free(server, kit):
    server.enqueue(DROP, kit.text("never"))
    with pytest.raises(ProviderUnavailableError):
        turn(kit, server, max_retries=0)
    assert len(server.requests) == 1


@KITS
def test_back_to_back_streams_from_a_server_that_closes_after_each(server, kit):
    for i in range(10):
        reply = kit.text(f"n{i}")
        server.enqueue(Reply(reply.status, reply.headers, reply.parts, close_after=True))
    for i in range(10):
        assert turn(kit, server, max_retries=0).finals[0]["content"] == f"n{i}"
        # The close has reached the client before its next request, as a real server's idle close
        # does: the pool sees it and opens a new connection. (A close that crosses the next request's
        # write on the wire cannot be told from a server that read the request and died, so that
        # one is a counted retry: docs/providers.md, "What is sent again".)
        time.sleep(0.05)
    assert len(server.requests) == 10


# -- pools per event loop, pool size -----------------------------------------------------------------


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts file descriptors in /proc")
def test_asyncio_run_per_request_leaks_no_client_or_socket(server):
    core = AgentCore(providers=[OpenAIProvider])
    session = core.add_message(core.create_session(), Message(role="user", content="hi"))
    config = {"provider": "openai", "base_url": f"{server.url}/v1", "api_key": "k", "model": "m", "max_retries": 0}
    answer = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}
    server.enqueue(*[json_reply(answer) for _ in range(25)])
    asyncio.run(core.arequest(session, config))  # warm up imports, the server's threads
    before = _open_fds()
    for _ in range(24):
        assert asyncio.run(core.arequest(session, config)).final_messages[-1].content == "ok"
    assert _open_fds() - before < 5  # before the fix: one client and socket per run


def test_pool_keeps_a_connection_per_concurrent_caller(server):
    threads, rounds = 30, 3
    server.enqueue(*[OPENAI.text("x") for _ in range(threads * rounds)])
    barrier = threading.Barrier(threads)
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            for _ in range(rounds):
                barrier.wait(timeout=20)
                run_turn(OpenAIProvider(), [], USER, OPENAI.config(server))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    assert not errors, errors[:3]
    # httpx's default keeps 20 idle connections: 30 callers then open new ones every round.
    assert len({r.client_port for r in server.requests}) <= threads


# -- a wrong base URL -----------------------------------------------------------------------------------


def test_anthropic_base_url_ending_in_v1_is_normalised(server):
    server.enqueue(ANTHROPIC.text("found"))
    result = run_turn(ANTHROPIC.provider(), [], USER, {**ANTHROPIC.config(server), "base_url": f"{server.url}/v1"})
    assert result.finals[0]["content"] == "found"
    assert server.requests[0].path == "/v1/messages"


def test_a_404_names_the_url_that_was_tried(server):
    server.enqueue(Reply(404, {"content-type": "text/plain"}, [b"404 page not found"], chunked=False))
    config = {**OPENAI.config(server), "base_url": server.url}  # forgot the /v1
    with pytest.raises(Exception) as info:
        run_turn(OpenAIProvider(), [], USER, config)
    assert f"POST {server.url}/chat/completions" in str(info.value)
    assert info.value.status_code == 404


def test_a_404_on_a_doubled_version_segment_says_so():
    from agent_core_providers._errors import error_from_response

    err = error_from_response("p", 404, {}, b"Not Found", url="http://h/api/v1/v1/models", method="GET")
    assert "GET http://h/api/v1/v1/models" in err.message and "repeats '/v1'" in err.message


def test_stream_and_answer_events_are_not_mixed_up(server):
    # Anthropic-shaped JSON to the OpenAI provider is not silently taken for an empty answer.
    server.enqueue(json_reply({"unexpected": True}))
    with pytest.raises(LLMError, match="no choices"):
        turn(OPENAI, server)


def test_preamble_then_server_holds_body_before_the_end_marker_is_still_bounded_by_cancel(server):
    # The end marker never comes: cancel still bites mid-body (regression guard for the drain logic).
    server.enqueue(sse_reply(an_start(), an_event("ping"), Delay(20.0)))
    provider = ANTHROPIC.provider()
    timer = threading.Timer(0.3, provider.cancel_request, args=("req-p",))
    timer.start()
    started = time.monotonic()
    with pytest.raises(ProviderRequestCancelled):
        run_turn(provider, [], USER, ANTHROPIC.config(server), request_id="req-p")
    assert time.monotonic() - started < 5.0
    timer.join()


def test_done_marker_then_more_events_are_ignored(server):
    server.enqueue(sse_reply(*_opening(OPENAI), oa_chunk({"content": "a"}), OA_DONE, oa_chunk({"content": "late"})))
    assert turn(OPENAI, server).finals[0]["content"] == "a"


@pytest.mark.parametrize(
    ("kit", "use_async", "stream"),
    CANCEL_CASES,
    ids=["openai-sync-stream", "anthropic-async-stream", "anthropic-sync-call", "openai-async-call"],
)
def test_a_cancel_that_arrives_before_the_call_opens_still_stops_it(server, kit, use_async, stream):
    # The engine attaches the provider to the request, then calls it: a cancel in between finds
    # no open call. It must not be lost, or a non-streamed call would run to its end.
    server.enqueue(Reply(stall=30.0, parts=[b"{}"], chunked=False))
    provider = kit.provider()
    assert provider.cancel_request("req-early") is False  # nothing running yet
    config = kit.config(server)
    with pytest.raises(ProviderRequestCancelled):
        if use_async:
            run_async(arun_turn, provider, [], USER, config, stream=stream, request_id="req-early")
        else:
            run_turn(provider, [], USER, config, stream=stream, request_id="req-early")
    assert server.requests == []  # never sent
