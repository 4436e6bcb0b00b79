"""The planted-secret scan: a key echoed by a server never surfaces, whole or in pieces.

Each case below plants the API key in what a hostile or echoing server sends
back (a proxy that reflects ``Authorization: Bearer sk-...`` into a broken
stream line, an invalid JSON body, an answer without ``choices[0].message``,
an Anthropic error event that is not JSON, an HTML error page, a stream cut
inside a line), placed so that a cut at 200 or 500 characters would fall in
the middle of the key. The request then runs through the engine twice,
streamed and not, and everything a caller, a log or a UI could see is
scanned for the key and for every 8-character piece of it: the exception
text, its repr and traceback, every event as ``encode_event`` JSON, the
outcome's detail, the session JSON, and every log record at DEBUG
(httpx and httpcore included).
"""

from __future__ import annotations

import logging
import traceback
from typing import Any

import pytest
from agent_core import AgentCore, DoneEvent, ErrorEvent, LLMError, Message, encode_event
from agent_core_plugins.anthropic_tools import AnthropicToolsExtension
from agent_core_plugins.openai_tools import OpenAIToolsExtension
from agent_core_providers.anthropic import AnthropicProvider
from agent_core_providers.openai import OpenAIProvider

from ._server import CUT, Reply, json_reply, sse_reply
from ._wire import an_start, oa_chunk

KEY = "sk-Zq9wX4vT7pL2mN8rB5yC1dF6gH3jK0aSeU"
PIECES = [KEY[i : i + 8] for i in range(len(KEY) - 7)]
ECHO = f"Authorization: Bearer {KEY}"


def leaks(text: str) -> list[str]:
    return [piece for piece in PIECES if piece in text]


def pad(n: int) -> str:
    """Filler sized so the key starts about 15 characters before a 200 (or 500) character cut."""
    return "x" * n


OA_OPEN = oa_chunk({"role": "assistant", "content": ""})
AN_OPEN = an_start()

def raw(status: int, content_type: str, body: str) -> Reply:
    return Reply(status, {"content-type": content_type}, [body.encode()], chunked=False)


AUTH_ERROR = {"type": "error", "error": {"type": "authentication_error", "message": f"bad key {KEY}"}}

# (case id, provider, stream?, reply)
CASES: list[tuple[str, str, bool, Reply]] = [
    # A proxy reflects the request header into the stream: not an SSE line.
    ("malformed-sse-line", "openai", True, sse_reply(OA_OPEN, f"{pad(163)}{ECHO}\n\n".encode())),
    # Invalid JSON in a data line, the key across the 200-character cut.
    ("invalid-json-event", "openai", True, sse_reply(OA_OPEN, f"data: {{{pad(162)}{ECHO}\n\n".encode())),
    # Anthropic error event whose data is not JSON.
    (
        "anthropic-non-json-error",
        "anthropic",
        True,
        sse_reply(AN_OPEN, f"event: error\ndata: {pad(163)}{ECHO}\n\n".encode()),
    ),
    # A stream event that is JSON but not an object, quoting the key near the cut.
    ("event-not-an-object", "openai", True, sse_reply(OA_OPEN, f'data: ["{pad(161)}{ECHO}"]\n\n'.encode())),
    # The body breaks off inside a line that echoes the key.
    ("cut-mid-line", "anthropic", True, sse_reply(AN_OPEN, f'data: {{"echo": "{pad(147)}{ECHO}'.encode(), CUT)),
    # A non-streamed answer that is not JSON.
    ("invalid-json-body", "openai", False, raw(200, "application/json", f"{pad(163)}{ECHO}")),
    # A non-streamed answer without choices[0].message (the wire module quotes it, cut at 200).
    ("no-choices", "openai", False, json_reply({"echo": f"{pad(153)}{ECHO}"})),
    ("no-content-list", "anthropic", False, json_reply({"echo": f"{pad(153)}{ECHO}"})),
    # An HTML error page echoing the header, the key across the 500-character cut.
    ("html-error-page", "openai", True, raw(502, "text/html", f"<html>{pad(457)}{ECHO}</html>")),
    # A JSON error object whose message echoes the key.
    ("json-error-message", "anthropic", False, json_reply(AUTH_ERROR, status=401)),
    # A 200 error object to a streaming request.
    (
        "json-error-200-to-stream",
        "openai",
        True,
        json_reply({"error": {"message": f"{pad(190)}{ECHO}", "type": "server_error"}}),
    ),
]


def make_core() -> AgentCore:
    return AgentCore(
        providers=[OpenAIProvider, AnthropicProvider], extensions=[OpenAIToolsExtension, AnthropicToolsExtension]
    )


def config(server: Any, provider: str, stream: bool) -> dict[str, Any]:
    base = f"{server.url}/v1" if provider == "openai" else server.url
    return {"provider": provider, "base_url": base, "api_key": KEY, "model": "m", "stream": stream, "max_retries": 0}


@pytest.mark.parametrize(("case", "provider", "stream", "reply"), CASES, ids=[c[0] for c in CASES])
def test_planted_key_leaks_nowhere(server, caplog, case, provider, stream, reply):
    core = make_core()
    session = core.add_message(core.create_session(), Message(role="user", content="hi"))
    seen: list[str] = []
    caplog.set_level(logging.DEBUG)  # every logger: agent_core*, httpx, httpcore

    # 1. As a stream of events: every event encoded, the outcome, the session.
    server.enqueue(reply)
    events = list(core.stream_request(session, config(server, provider, stream)))
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    done = events[-1]
    assert errors and isinstance(done, DoneEvent) and done.outcome.status == "stopped", events
    seen += [encode_event(e).decode() for e in events]
    seen += [str(done.outcome.detail), done.session.to_json().decode(), errors[0].error.message]

    # 2. As a call that raises: the exception, its repr, its whole traceback (causes included).
    server.enqueue(reply)
    with pytest.raises(LLMError) as info:
        core.request(session, config(server, provider, stream))
    exc = info.value
    seen += [str(exc), repr(exc), repr(exc.args), "".join(traceback.format_exception(exc))]

    # 3. Every log record, formatted and raw.
    seen += [caplog.text, *(r.getMessage() for r in caplog.records), *(repr(r.args) for r in caplog.records)]
    assert [r for r in caplog.records if r.name.startswith(("httpx", "httpcore"))]  # DEBUG logs were on

    assert server.requests and all(r.headers.get("authorization", r.headers.get("x-api-key")) for r in server.requests)
    found = {piece for text in seen for piece in leaks(text)}
    assert not found, f"{case}: pieces of the key leaked: {sorted(found)[:5]}"
    assert "Bearer" in " ".join(seen) or "bad key" in " ".join(seen)  # the echo did reach the texts scanned


def test_the_scan_would_catch_a_half_key():
    # The scanner itself: half a key (what cutting before scrubbing left) is found.
    assert leaks(f"...{KEY[: len(KEY) // 2]}")
    assert leaks(KEY[-8:]) and not leaks(KEY[:7])
