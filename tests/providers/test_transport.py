"""Errors, retries, cancellation, timeouts and pooling, for both HTTP providers.

Every test runs against a real loopback server replaying each API's exact
wire format; the same behaviour is required of both providers.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

import httpx
import pytest
from agent_core.errors import (
    AuthenticationError,
    ContentFilterError,
    ContextLengthError,
    InvalidRequestError,
    LLMError,
    LLMTimeoutError,
    MalformedResponseError,
    ProviderRequestCancelled,
    ProviderUnavailableError,
    RateLimitError,
)
from agent_core_plugins.anthropic_thinking import AnthropicThinkingExtension
from agent_core_plugins.anthropic_tools import AnthropicToolsExtension
from agent_core_plugins.openai_reasoning import OpenAIReasoningExtension
from agent_core_plugins.openai_tools import OpenAIToolsExtension
from agent_core_providers.anthropic import AnthropicProvider
from agent_core_providers.openai import OpenAIProvider

from ._driver import arun_turn, run_turn
from ._server import CUT, Delay, Reply, json_reply, sse, sse_reply
from ._wire import OA_DONE, an_end, an_event, an_start, an_text, oa_chunk, oa_text
from .conftest import run_async

KEY = "sk-test-0123456789abcdef"
USER = [{"role": "user", "content": "hi"}]


@dataclass
class Kit:
    """What differs between the two APIs, for the shared tests below."""

    name: str
    provider: type
    extensions: Callable[[], list]
    base_path: str
    text: Callable[..., Reply]
    first_event: bytes  # one event that carries text
    done: list[bytes]  # what ends a stream
    error_body: Callable[[str, str], Any]  # (type/code, message) -> body
    error_event: bytes  # a mid-stream "overloaded" error

    def config(self, server: Any, **extra: Any) -> dict:
        return {"base_url": f"{server.url}{self.base_path}", "api_key": KEY, "model": "m", "max_retries": 0, **extra}

    def slow(self, n: int = 40, pause: float = 0.1) -> Reply:
        parts: list[Any] = [self.first_event]
        for _ in range(n):
            parts += [Delay(pause), self.first_event]
        return sse_reply(*parts, *self.done)


OPENAI = Kit(
    "openai",
    OpenAIProvider,
    lambda: [OpenAIToolsExtension(), OpenAIReasoningExtension()],
    "/v1",
    oa_text,
    oa_chunk({"content": "tick "}),
    [oa_chunk({}, "stop"), OA_DONE],
    lambda code, msg: {"error": {"message": msg, "type": "invalid_request_error", "param": None, "code": code}},
    sse({"error": {"message": "The server is overloaded", "type": "server_error", "code": None}}),
)
ANTHROPIC = Kit(
    "anthropic",
    AnthropicProvider,
    lambda: [AnthropicToolsExtension(), AnthropicThinkingExtension()],
    "",
    an_text,
    an_event("content_block_delta", index=0, delta={"type": "text_delta", "text": "tick "}),
    an_end(),
    lambda kind, msg: {"type": "error", "error": {"type": kind, "message": msg}},
    an_event("error", error={"type": "overloaded_error", "message": "Overloaded"}),
)
KITS = pytest.mark.parametrize("kit", [OPENAI, ANTHROPIC], ids=lambda k: k.name)


def _opening(kit: Kit) -> list[bytes]:
    if kit is ANTHROPIC:
        return [an_start(), an_event("content_block_start", index=0, content_block={"type": "text", "text": ""})]
    return [oa_chunk({"role": "assistant", "content": ""})]


# -- error statuses ---------------------------------------------------------------------

STATUS_CASES = [
    (401, "invalid_api_key", "Incorrect API key provided", AuthenticationError),
    (403, "permission_error", "Your key may not use this model", AuthenticationError),
    (400, "context_length_exceeded", "This model's maximum context length is 8192 tokens", ContextLengthError),
    (400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum", ContextLengthError),
    (
        400,
        "content_filter",
        "The response was filtered due to the prompt triggering content management policy",
        ContentFilterError,
    ),
    (404, "model_not_found", "The model `nope` does not exist", InvalidRequestError),
    (422, "invalid_request_error", "temperature: must be <= 2", InvalidRequestError),
    (500, "server_error", "Internal error", ProviderUnavailableError),
    (503, "server_error", "Service unavailable", ProviderUnavailableError),
    (529, "overloaded_error", "Overloaded", ProviderUnavailableError),
]


@KITS
@pytest.mark.parametrize(("status", "code", "message", "expected"), STATUS_CASES, ids=lambda v: str(v)[:20])
def test_error_status_maps_to_typed_error(server, kit, status, code, message, expected):
    server.enqueue(json_reply(kit.error_body(code, message), status=status))
    with pytest.raises(expected) as info:
        run_turn(kit.provider(), kit.extensions(), USER, kit.config(server))
    err = info.value
    assert err.provider == kit.name and err.status_code == status
    if status == 404:  # a 404 also names the URL that was tried
        assert err.message.startswith(message) and server.requests[0].path in err.message
    else:
        assert err.message == message


@KITS
def test_rate_limit_carries_retry_after(server, kit):
    server.enqueue(
        json_reply(kit.error_body("rate_limit_exceeded", "Slow down"), status=429, headers={"retry-after": "7"})
    )
    with pytest.raises(RateLimitError) as info:
        run_turn(kit.provider(), [], USER, kit.config(server))
    assert info.value.retry_after == 7.0 and info.value.status_code == 429


@KITS
def test_non_json_error_body_keeps_its_text(server, kit):
    server.enqueue(Reply(502, {"content-type": "text/html"}, [b"<html>Bad gateway</html>"], chunked=False))
    with pytest.raises(ProviderUnavailableError, match="Bad gateway"):
        run_turn(kit.provider(), [], USER, kit.config(server))


@KITS
def test_api_key_is_scrubbed_from_errors(server, kit):
    server.enqueue(json_reply(kit.error_body("invalid_api_key", f"Incorrect API key provided: {KEY}"), status=401))
    with pytest.raises(AuthenticationError) as info:
        run_turn(kit.provider(), kit.extensions(), USER, kit.config(server))
    assert KEY not in str(info.value) and KEY not in repr(info.value.args)
    assert "***" in info.value.message


# -- broken streams ------------------------------------------------------------------------


@KITS
def test_mid_stream_error_event(server, kit):
    server.enqueue(sse_reply(*_opening(kit), kit.first_event, kit.error_event))
    with pytest.raises(ProviderUnavailableError, match="verloaded") as info:
        run_turn(kit.provider(), kit.extensions(), USER, kit.config(server, max_retries=0))
    assert info.value.provider == kit.name
    assert len(server.requests) == 1  # no retry left (test_midstream_retry.py: with retries, it is repeated)


@KITS
def test_error_right_after_the_preamble_is_retried(server, kit):
    server.enqueue(sse_reply(*_opening(kit)[:1], kit.error_event), kit.text("second try"))
    turn = run_turn(kit.provider(), kit.extensions(), USER, kit.config(server, max_retries=1))
    assert turn.finals[0]["content"] == "second try"
    assert len(server.requests) == 2


@KITS
def test_stream_cut_mid_json_is_an_error_quoting_the_line(server, kit):
    server.enqueue(sse_reply(*_opening(kit), kit.first_event, b'data: {"type": "content_block_delta", "ind', CUT))
    with pytest.raises(LLMError, match=r"partial line: 'data: \{\"type\": \"content_block_delta\", \"ind'"):
        run_turn(kit.provider(), kit.extensions(), USER, kit.config(server))


@KITS
def test_connection_dropped_after_the_end_marker_is_fine(server, kit):
    server.enqueue(sse_reply(*kit.text("all", " here").parts, CUT))
    turn = run_turn(kit.provider(), kit.extensions(), USER, kit.config(server))
    assert turn.finals[0]["content"] == "all here"


@KITS
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_compressed_event_stream_is_decoded(server, kit, mode):
    # identity streams are read raw (no decoder layer per read); a gzip one must still be decoded
    import gzip

    body = gzip.compress(b"".join(kit.text("packed", " tight").parts))
    half = len(body) // 2
    server.enqueue(sse_reply(body[:half], body[half:], headers={"content-encoding": "gzip"}))
    args = (kit.provider(), kit.extensions(), USER, kit.config(server))
    turn = run_turn(*args) if mode == "sync" else run_async(arun_turn, *args)
    assert turn.finals[0]["content"] == "packed tight"


@KITS
def test_stream_closing_without_end_marker_is_an_error(server, kit):
    server.enqueue(sse_reply(*_opening(kit), kit.first_event))  # body ends cleanly, but too early
    with pytest.raises(ProviderUnavailableError, match="before the API marked it complete"):
        run_turn(kit.provider(), kit.extensions(), USER, kit.config(server))


@KITS
def test_malformed_sse_line_and_json(server, kit):
    server.enqueue(sse_reply(*_opening(kit), b'{"raw": "json line"}\n\n'))
    with pytest.raises(LLMError, match=r"malformed server-sent event line: '\{\"raw\": \"json line\"\}'"):
        run_turn(kit.provider(), [], USER, kit.config(server))
    server.enqueue(sse_reply(*_opening(kit), b"data: {not json}\n\n"))
    with pytest.raises(LLMError, match=r"malformed JSON in server-sent event: '\{not json\}'"):
        run_turn(kit.provider(), [], USER, kit.config(server))


# -- retries -----------------------------------------------------------------------------------


@KITS
def test_retry_after_429_then_success(server, kit):
    server.enqueue(
        json_reply(kit.error_body("rate_limit_exceeded", "Slow down"), status=429, headers={"retry-after": "0.05"}),
        json_reply(kit.error_body("overloaded_error", "busy"), status=529, headers={"retry-after": "0.01"}),
        kit.text("fine"),
    )
    turn = run_turn(kit.provider(), kit.extensions(), USER, kit.config(server, max_retries=2))
    assert turn.finals[0]["content"] == "fine"
    assert len(server.requests) == 3 and server.bodies[0] == server.bodies[2]


@KITS
def test_retries_are_bounded(server, kit):
    limited = lambda: json_reply(kit.error_body("rate_limit_exceeded", "no"), status=429, headers={"retry-after": "0"})
    server.enqueue(limited(), limited(), limited(), limited())
    with pytest.raises(RateLimitError):
        run_turn(kit.provider(), [], USER, kit.config(server, max_retries=2))
    assert len(server.requests) == 3


@KITS
def test_a_cut_after_partial_output_is_retried_and_the_partials_retracted(server, kit):
    server.enqueue(sse_reply(*_opening(kit), kit.first_event, CUT), kit.text("second"))
    turn = run_turn(kit.provider(), [], USER, kit.config(server, max_retries=3))
    assert len(server.requests) == 2
    assert [type(p).__name__ for p in turn.partials][:2] == ["FrozenDict", "StreamRetry"]
    assert turn.finals[0]["content"] == "second"


@KITS
def test_a_cut_after_partial_output_without_retries_left_fails(server, kit):
    server.enqueue(sse_reply(*_opening(kit), kit.first_event, CUT), kit.text("second"))
    with pytest.raises(ProviderUnavailableError):
        run_turn(kit.provider(), [], USER, kit.config(server, max_retries=0))
    assert len(server.requests) == 1


@KITS
def test_client_errors_are_not_retried(server, kit):
    server.enqueue(json_reply(kit.error_body("invalid_request_error", "bad"), status=400), kit.text("never"))
    with pytest.raises(InvalidRequestError):
        run_turn(kit.provider(), [], USER, kit.config(server, max_retries=3))
    assert len(server.requests) == 1


@KITS
def test_async_retry(server, kit):
    server.enqueue(
        json_reply(kit.error_body("rate_limit_exceeded", "x"), status=429, headers={"retry-after": "0.02"}),
        kit.text("async ", "ok"),
    )
    turn = run_async(arun_turn, kit.provider(), kit.extensions(), USER, kit.config(server, max_retries=1))
    assert turn.finals[0]["content"] == "async ok" and len(server.requests) == 2


# -- timeouts and unreachable servers ------------------------------------------------------------


@KITS
def test_read_timeout(server, kit):
    server.enqueue(sse_reply(Delay(1.0), *kit.text("late").parts))
    with pytest.raises(LLMTimeoutError) as info:
        run_turn(kit.provider(), [], USER, kit.config(server, timeout=0.2))
    assert info.value.provider == kit.name


@KITS
def test_connection_refused(kit):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again before the request: nothing listens
    cfg = {"base_url": f"http://127.0.0.1:{port}{kit.base_path}", "api_key": KEY, "model": "m", "max_retries": 0}
    with pytest.raises(ProviderUnavailableError, match="could not reach"):
        run_turn(kit.provider(), [], USER, cfg)


# -- cancellation -----------------------------------------------------------------------------------


@KITS
def test_cancel_from_another_thread_stops_the_stream(server, kit):
    server.enqueue(kit.slow())
    provider = kit.provider()
    from ._driver import prepare

    native, state, _ = prepare(provider, [], USER, kit.config(server), request_id="req-c")
    seen: list[Any] = []
    found: list[bool] = []
    canceller = threading.Thread(target=lambda: found.append(provider.cancel_request("req-c")))
    started = time.monotonic()
    with pytest.raises(ProviderRequestCancelled) as info:
        for chunk in provider.stream_api(native, state, request_id="req-c"):
            seen.append(chunk)
            if len(seen) == 2:
                canceller.start()
    assert time.monotonic() - started < 2.0  # the whole stream would take 4 s
    canceller.join()
    assert info.value.request_id == "req-c"
    assert found == [True] and len(seen) < 10
    assert provider.cancel_request("req-c") is False  # nothing in flight any more


@KITS
@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_cancel_a_non_streamed_call(server, kit, use_async):
    server.enqueue(Reply(200, {"content-type": "application/json"}, [Delay(5.0), b"{}"], chunked=False))
    provider = kit.provider()
    timer = threading.Timer(0.2, provider.cancel_request, args=("req-n",))
    timer.start()
    started = time.monotonic()
    with pytest.raises(ProviderRequestCancelled):
        if use_async:
            run_async(arun_turn, provider, [], USER, kit.config(server), stream=False, request_id="req-n")
        else:
            run_turn(provider, [], USER, kit.config(server), stream=False, request_id="req-n")
    assert time.monotonic() - started < 3.0
    timer.join()


@KITS
def test_cancel_during_retry_sleep(server, kit):
    server.enqueue(json_reply(kit.error_body("rate_limit_exceeded", "x"), status=429, headers={"retry-after": "30"}))
    provider = kit.provider()
    timer = threading.Timer(0.2, provider.cancel_request, args=("req-s",))
    timer.start()
    started = time.monotonic()
    with pytest.raises(ProviderRequestCancelled):
        run_turn(provider, [], USER, kit.config(server, max_retries=1), request_id="req-s")
    assert time.monotonic() - started < 5.0
    timer.join()


@KITS
def test_async_cancel_from_thread_and_from_task(server, kit):
    server.enqueue(kit.slow(), kit.slow())
    from ._driver import prepare

    async def consume(provider: Any, request_id: str, cancel: Callable[[], Any]) -> int:
        native, state, _ = prepare(provider, [], USER, kit.config(server), request_id=request_id)
        n = 0
        with pytest.raises(ProviderRequestCancelled):
            async for _ in provider.astream_api(native, state, request_id=request_id):
                n += 1
                if n == 2:
                    cancel()
        return n

    async def main() -> tuple[int, int]:
        p1 = kit.provider()
        t1 = time.monotonic()
        n1 = await consume(p1, "a1", lambda: threading.Thread(target=p1.cancel_request, args=("a1",)).start())
        p2 = kit.provider()

        async def cancel_soon() -> None:
            await asyncio.sleep(0.05)
            assert p2.cancel_request("a2") is True

        n2 = await consume(p2, "a2", lambda: asyncio.get_running_loop().create_task(cancel_soon()))
        assert time.monotonic() - t1 < 4.0
        return n1, n2

    n1, n2 = run_async(main)
    assert n1 < 10 and n2 < 10


# -- connections -----------------------------------------------------------------------------------


@KITS
def test_connections_are_reused_across_requests(server, kit):
    server.enqueue(kit.text("one"), kit.text("two"))
    run_turn(kit.provider(), [], USER, kit.config(server))
    run_turn(kit.provider(), [], USER, kit.config(server))  # a new instance, as the engine makes
    assert server.requests[0].client_port == server.requests[1].client_port


@KITS
def test_injected_clients_are_used(server, kit):
    sent: list[str] = []
    server.enqueue(kit.text("a"), kit.text("b"))
    with httpx.Client(event_hooks={"request": [lambda r: sent.append("sync")]}) as client:
        cls = kit.provider.using(client=client)
        assert cls.name == kit.name
        run_turn(cls(), [], USER, kit.config(server))

        async def main() -> None:
            async def hook(request: httpx.Request) -> None:
                sent.append("async")

            async with httpx.AsyncClient(event_hooks={"request": [hook]}) as aclient:
                await arun_turn(cls.using(async_client=aclient)(), [], USER, kit.config(server))

        asyncio.run(main())
    assert sent == ["sync", "async"]


@KITS
@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("encoding", ["gzip", "identity"])
def test_a_non_streamed_answer_past_the_cap_is_refused_as_it_is_read(server, kit, mode, encoding, monkeypatch):
    """A hostile upstream's gzip bomb (a small body that inflates without bound), or a plain huge body."""
    import gzip

    import agent_core_providers._exchange as exchange

    monkeypatch.setattr(exchange, "MAX_ANSWER_BYTES", 1 << 20)  # 1 MiB here; 64 MiB by default
    big = b'{"pad": "' + b"0" * (3 << 20) + b'"}'
    data = gzip.compress(big) if encoding == "gzip" else big
    headers = {"content-encoding": "gzip"} if encoding == "gzip" else {}
    server.enqueue(Reply(200, {"content-type": "application/json", **headers}, [data], chunked=False))
    args = (kit.provider(), [], USER, kit.config(server))
    with pytest.raises(MalformedResponseError, match="larger than 1 MiB once decoded; refused") as caught:
        if mode == "sync":
            run_turn(*args, stream=False)
        else:
            run_async(arun_turn, *args, stream=False)
    assert caught.value.status_code == 200 and KEY not in str(caught.value)
    server.enqueue(json_reply(kit.error_body("invalid_request_error", "small")))  # the next call is read as usual
    with pytest.raises(LLMError, match="small"):
        run_turn(*args, stream=False)


@KITS
@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("encoding", ["gzip", "identity"])
def test_a_stream_that_never_ends_is_refused_past_the_cap(server, kit, mode, encoding, monkeypatch):
    """A hostile upstream streams text without end: the call fails once the body passes the cap, not never."""
    import gzip

    import agent_core_providers._streaming as streaming

    monkeypatch.setattr(streaming, "MAX_STREAM_BYTES", 1 << 20)  # 1 MiB here; 256 MiB by default
    body = b"".join(_opening(kit)) + kit.first_event * ((3 << 20) // len(kit.first_event))  # 3 MiB, no end marker
    data = gzip.compress(body) if encoding == "gzip" else body
    headers = {"content-encoding": "gzip"} if encoding == "gzip" else {}
    server.enqueue(sse_reply(data, headers=headers))
    args = (kit.provider(), kit.extensions(), USER, kit.config(server))
    with pytest.raises(MalformedResponseError, match="passed 1 MiB without ending; refused") as caught:
        if mode == "sync":
            run_turn(*args)
        else:
            run_async(arun_turn, *args)
    assert caught.value.status_code == 200 and KEY not in str(caught.value)
    assert len(server.requests) == 1  # not retried: the same server would send the same again
    server.enqueue(kit.text("after"))  # a stream under the cap is read as usual
    assert "after" in str(run_turn(*args).finals)
