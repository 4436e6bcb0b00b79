"""The upstream API's own account of a failure, kept on the error and on the stream's error event.

A gateway in front of OpenAI or Anthropic clients must repeat what the API said: its
status, ``type``, ``code``, ``param``, message and rate-limit headers. Each body below is
what the API documents (and real clients quote) for that failure, replayed byte for byte
over loopback with the headers the API sends beside it.
"""

from __future__ import annotations

import json

import pytest
from agent_core import AgentCore, ErrorEvent, Message, UpstreamDetail, decode_event, encode_event
from agent_core.errors import (
    AuthenticationError,
    ContextLengthError,
    InvalidRequestError,
    ProviderUnavailableError,
    QuotaExceededError,
    RateLimitError,
)
from agent_core_plugins.anthropic_tools import AnthropicToolsExtension
from agent_core_plugins.openai_tools import OpenAIToolsExtension
from agent_core_providers._errors import error_from_response
from agent_core_providers._upstream import MAX_HEADERS

from ._driver import arun_turn, run_turn
from ._server import json_reply, sse, sse_reply
from ._wire import an_event, an_start, oa_chunk
from .conftest import run_async
from .test_transport import ANTHROPIC, KEY, OPENAI, USER

QUOTA_MESSAGE = (
    "You exceeded your current quota, please check your plan and billing details. For more information on this "
    "error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors."
)
QUOTA = {"error": {"message": QUOTA_MESSAGE, "type": "insufficient_quota", "param": None, "code": "insufficient_quota"}}
# What OpenAI sends beside an error: rate-limit state and a request id (passed on), and the rest (not).
OPENAI_HEADERS = {
    "x-ratelimit-limit-requests": "10000",
    "x-ratelimit-limit-tokens": "2000000",
    "x-ratelimit-remaining-requests": "9999",
    "x-ratelimit-remaining-tokens": "1999985",
    "x-ratelimit-reset-requests": "6ms",
    "x-ratelimit-reset-tokens": "0s",
    "x-request-id": "req_3f1c0e8a2b",
    "openai-organization": "org-private",
    "openai-processing-ms": "12",
    "set-cookie": "__cf_bm=abc; path=/",
}
PASSED = {k: v for k, v in OPENAI_HEADERS.items() if k.startswith("x-")}
CONTEXT = {
    "error": {
        "message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 204308 "
        "tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}
OVERLOADED = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"},
              "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"}


def stream_error(server, kit, **config) -> ErrorEvent:
    """The error event of a streamed request through the engine, after a JSON round trip."""
    core = AgentCore(providers=[kit.provider], extensions=[OpenAIToolsExtension, AnthropicToolsExtension])
    session = core.add_message(core.create_session(), Message("user", "hi"))
    cfg = {"provider": kit.name, **kit.config(server, **config)}
    [event] = [e for e in core.stream_request(session, cfg) if e.type == "error"]
    again = decode_event(encode_event(event))
    assert again == event
    return event


# -- error responses ------------------------------------------------------------------------


def test_openai_quota_is_its_own_error_with_the_apis_words_and_headers(server):
    server.enqueue(json_reply(QUOTA, status=429, headers=OPENAI_HEADERS))
    with pytest.raises(QuotaExceededError) as info:
        run_turn(OPENAI.provider(), OPENAI.extensions(), USER, OPENAI.config(server, max_retries=3))
    assert len(server.requests) == 1  # never retried: waiting does not bring credit back
    err = info.value
    assert isinstance(err, RateLimitError) and not err.retryable and err.message == QUOTA_MESSAGE
    assert err.upstream == UpstreamDetail(
        status=429, type="insufficient_quota", code="insufficient_quota", param=None, message=QUOTA_MESSAGE,
        headers=PASSED,
    )


def test_the_quota_detail_reaches_the_streams_error_event(server):
    server.enqueue(json_reply(QUOTA, status=429, headers=OPENAI_HEADERS))
    info = stream_error(server, OPENAI, max_retries=3).error
    assert info.type == "QuotaExceededError" and info.status_code == 429
    assert info.upstream is not None and info.upstream.code == "insufficient_quota"
    assert info.upstream.headers == PASSED and info.upstream.message == QUOTA_MESSAGE
    assert json.loads(encode_event(ErrorEvent("r", info)))["error"]["upstream"]["headers"] == PASSED


def test_context_length_keeps_param_and_code(server):
    server.enqueue(json_reply(CONTEXT, status=400, headers={"x-request-id": "req_ctx"}))
    with pytest.raises(ContextLengthError) as info:
        run_turn(OPENAI.provider(), [], USER, OPENAI.config(server))
    up = info.value.upstream
    assert (up.status, up.type, up.code, up.param) == (400, "invalid_request_error", "context_length_exceeded",
                                                         "messages")
    assert up.message == CONTEXT["error"]["message"] and up.headers == {"x-request-id": "req_ctx"}
    server.enqueue(json_reply(CONTEXT, status=400))
    assert stream_error(server, OPENAI).error.upstream.param == "messages"


def test_an_upstream_500_keeps_its_status(server):
    body = {"error": {"message": "The server had an error while processing your request. Sorry about that!",
                      "type": "server_error", "param": None, "code": None}}
    server.enqueue(json_reply(body, status=500, headers={"x-request-id": "req_500"}))
    with pytest.raises(ProviderUnavailableError) as info:
        run_turn(OPENAI.provider(), [], USER, OPENAI.config(server))
    assert info.value.upstream == UpstreamDetail(status=500, type="server_error", message=body["error"]["message"],
                                                 headers={"x-request-id": "req_500"})


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_anthropic_529_overloaded(server, mode):
    headers = {"request-id": OVERLOADED["request_id"], "retry-after": "3", "anthropic-organization-id": "org-x"}
    server.enqueue(json_reply(OVERLOADED, status=529, headers=headers))
    args = (ANTHROPIC.provider(), ANTHROPIC.extensions(), USER, ANTHROPIC.config(server))
    with pytest.raises(ProviderUnavailableError) as info:
        run_turn(*args) if mode == "sync" else run_async(arun_turn, *args)
    assert info.value.upstream == UpstreamDetail(
        status=529, type="overloaded_error", message="Overloaded",
        headers={"request-id": OVERLOADED["request_id"], "retry-after": "3"},
    )


def test_anthropic_rate_limit_headers_are_passed_on(server):
    headers = {"anthropic-ratelimit-requests-limit": "50", "anthropic-ratelimit-requests-remaining": "0",
               "anthropic-ratelimit-requests-reset": "2026-11-25T16:00:00Z", "retry-after": "0"}
    body = {"type": "error", "error": {"type": "rate_limit_error", "message": "Number of request tokens has exceeded "
                                       "your per-minute rate limit"}}
    server.enqueue(json_reply(body, status=429, headers=headers))
    with pytest.raises(RateLimitError) as info:
        run_turn(ANTHROPIC.provider(), [], USER, ANTHROPIC.config(server))
    assert type(info.value) is RateLimitError and info.value.upstream.headers == headers


def test_anthropic_spend_limit_is_a_quota_error(server):
    body = {"type": "error", "error": {"type": "rate_limit_error", "message": "You have reached your spend limit.",
                                       "details": {"error_code": "enforced_spend_limit_reached"}}}
    server.enqueue(json_reply(body, status=429))
    with pytest.raises(QuotaExceededError) as info:
        run_turn(ANTHROPIC.provider(), [], USER, ANTHROPIC.config(server, max_retries=2))
    assert len(server.requests) == 1
    assert (info.value.upstream.type, info.value.upstream.code) == ("rate_limit_error", "enforced_spend_limit_reached")


def test_the_detail_message_is_never_prefixed_and_a_404_note_stays_on_the_error(server):
    body = {"error": {"message": "The model `nope` does not exist", "type": "invalid_request_error", "param": None,
                      "code": "model_not_found"}}
    server.enqueue(json_reply(body, status=404))
    with pytest.raises(InvalidRequestError) as info:
        run_turn(OPENAI.provider(), [], USER, OPENAI.config(server))
    assert "404 for POST" in info.value.message
    assert info.value.upstream.message == "The model `nope` does not exist"


def test_secrets_are_scrubbed_from_the_detail(server):
    body = {"error": {"message": f"Incorrect API key provided: {KEY}", "type": "invalid_request_error",
                      "param": KEY, "code": "invalid_api_key"}}
    server.enqueue(json_reply(body, status=401, headers={"x-request-id": f"echo-{KEY}"}))
    with pytest.raises(AuthenticationError) as info:
        run_turn(OPENAI.provider(), [], USER, OPENAI.config(server))
    text = repr(info.value.upstream)
    assert KEY not in text and KEY[:12] not in text and "***" in info.value.upstream.message


def test_headers_are_bounded_in_count_and_length():
    many = {"x-request-id": "r" * 5000}  # no id is that long: dropped, not cut
    many.update({f"X-RateLimit-Extra-{i:02}": str(i) for i in range(MAX_HEADERS + 8)})
    err = error_from_response("openai", 429, many, b'{"error": {"message": "slow"}}')
    assert len(err.upstream.headers) == MAX_HEADERS
    assert all(name == name.lower() for name in err.upstream.headers) and "x-request-id" not in err.upstream.headers


def test_a_vllm_top_level_error_keeps_its_type_and_code():
    body = b'{"object": "error", "message": "bad temperature", "type": "BadRequestError", "param": null, "code": 400}'
    up = error_from_response("openai", 400, {}, body).upstream
    assert (up.type, up.code, up.param, up.message) == ("BadRequestError", "400", None, "bad temperature")


# -- error events inside a stream -------------------------------------------------------------


def test_an_openai_stream_error_event_has_no_status_and_the_events_fields(server):
    event = {"error": {"message": "The server is overloaded", "type": "server_error", "param": None,
                       "code": "overloaded"}}
    server.enqueue(sse_reply(oa_chunk({"role": "assistant", "content": ""}), sse(event)))
    with pytest.raises(ProviderUnavailableError) as info:
        run_turn(OPENAI.provider(), [], USER, OPENAI.config(server))
    assert info.value.upstream == UpstreamDetail(type="server_error", code="overloaded",
                                                 message="The server is overloaded")
    server.enqueue(sse_reply(oa_chunk({"role": "assistant", "content": ""}), sse(event)))
    assert stream_error(server, OPENAI).error.upstream == info.value.upstream


def test_an_anthropic_overloaded_event_mid_stream(server):
    overloaded = an_event("error", error={"type": "overloaded_error", "message": "Overloaded"})
    server.enqueue(sse_reply(an_start(), overloaded))
    info = stream_error(server, ANTHROPIC).error
    assert info.type == "ProviderUnavailableError"
    assert info.upstream == UpstreamDetail(status=None, type="overloaded_error", message="Overloaded")
