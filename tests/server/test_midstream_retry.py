"""An upstream stream that breaks midway and is retried, seen through each of the server's routes.

The operator allows retries (``max_retries: 2``; the facades' own default is none) and
the scripted upstream drops its first connection after part of an answer. Over real
HTTP: the sessions API passes the engine's ``retract`` event on as a frame and saves
the successful attempt; the OpenAI and Anthropic facades, whose wires cannot take
text back, end the stream with the failure in their own error shape once text was
sent, and let a retry through unseen when none was (``docs/server.md``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from agent_core.server import ServeSettings, create_app
from providers._server import CUT, ScriptedServer, sse_reply
from providers._wire import oa_chunk, oa_text

from ._live import running

KEY = "sk-upstream-secret-789"
HI = [{"role": "user", "content": "hi"}]
MODEL = "openai/gpt-4o-mini"


@pytest.fixture
def url(server: ScriptedServer, store: Any) -> Iterator[str]:
    config = {"base_url": server.url + "/v1", "api_key": KEY, "max_retries": 2, "max_retry_wait_s": 0}
    with running(create_app(store=store, config=config, settings=ServeSettings())) as base:
        yield base


def text_then_cut() -> Any:
    return sse_reply(oa_chunk({"role": "assistant", "content": ""}), oa_chunk({"content": "Half an "}),
                     oa_chunk({"content": "answer"}), CUT)


def tool_call_then_cut() -> Any:
    """Output the facades do not stream (a tool call's first delta), then a dropped connection."""
    call = {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": ""}}]}
    return sse_reply(oa_chunk({"role": "assistant", "content": None}), oa_chunk(call), CUT)


def data_frames(text: str) -> list[Any]:
    out = []
    for line in text.splitlines():
        if line.startswith("data: "):
            payload = line[6:]
            out.append(payload if payload == "[DONE]" else json.loads(payload))
    return out


def named_events(text: str) -> list[tuple[str, Any]]:
    """The Messages API's ``event:`` / ``data:`` pairs."""
    out, name = [], None
    for line in text.splitlines():
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            out.append((name, json.loads(line[6:])))
    return out


# -- the sessions API: the retract goes out as a frame ------------------------------------------


def test_the_sessions_api_sends_the_retract_frame_and_saves_the_successful_attempt(url, server):
    server.enqueue(text_then_cut(), oa_text("The whole ", "answer."))
    r = httpx.post(f"{url}/v1/sessions/s1/turns", json={"message": "hi", "config": {"provider": "openai"}},
                   timeout=10)
    assert r.status_code == 200, r.text
    frames = data_frames(r.text)
    kinds = [f["type"] for f in frames]
    assert kinds.count("retract") == 1
    cut = kinds.index("retract")
    assert "".join(f["message"]["content"] for f in frames[:cut] if f["type"] == "partial") == "Half an answer"
    assert "".join(f["message"]["content"] for f in frames[cut:] if f["type"] == "partial") == "The whole answer."
    retract = frames[cut]
    assert (retract["iteration"], retract["attempt"]) == (1, 2)
    assert retract["error"]["type"] == "ProviderUnavailableError"
    assert kinds[-2:] == ["done", "saved"]
    saved = httpx.get(f"{url}/v1/sessions/s1").json()["messages"]
    assert [m["content"] for m in saved] == ["hi", "The whole answer."]
    assert len(server.requests) == 2


# -- the OpenAI facade ---------------------------------------------------------------------------


def chat(url: str) -> httpx.Response:
    return httpx.post(f"{url}/v1/chat/completions", json={"model": MODEL, "messages": HI, "stream": True},
                      timeout=10)


def test_openai_facade_ends_the_stream_with_an_error_once_text_was_sent(url, server):
    server.enqueue(text_then_cut(), oa_text("never shown"))
    r = chat(url)
    assert r.status_code == 200
    frames = data_frames(r.text)
    assert frames[-1] == "[DONE]"
    error = frames[-2]["error"]
    assert error["type"] == "server_error" and error["message"]
    sent = "".join(c["delta"].get("content") or "" for f in frames[:-2] if isinstance(f, dict)
                   for c in f.get("choices", ()))
    assert sent == "Half an answer"  # what the client has, not followed by a second answer
    assert not any(c.get("finish_reason") for f in frames[:-2] if isinstance(f, dict) for c in f.get("choices", ()))


def test_openai_facade_lets_a_retry_through_unseen_when_no_text_was_sent(url, server):
    server.enqueue(tool_call_then_cut(), oa_text("Fine", " then."))
    r = chat(url)
    frames = data_frames(r.text)
    assert not any(isinstance(f, dict) and "error" in f for f in frames)
    sent = "".join(c["delta"].get("content") or "" for f in frames if isinstance(f, dict) for c in f["choices"])
    assert sent == "Fine then." and frames[-1] == "[DONE]"
    assert [c["finish_reason"] for f in frames if isinstance(f, dict) for c in f["choices"]][-1] == "stop"
    assert len(server.requests) == 2


# -- the Anthropic facade ------------------------------------------------------------------------


def messages(url: str) -> httpx.Response:
    return httpx.post(f"{url}/v1/messages", json={"model": MODEL, "messages": HI, "max_tokens": 64, "stream": True},
                      timeout=10)


def test_anthropic_facade_ends_the_stream_with_an_error_event_once_text_was_sent(url, server):
    server.enqueue(text_then_cut(), oa_text("never shown"))
    r = messages(url)
    assert r.status_code == 200
    events = named_events(r.text)
    names = [n for n, _ in events]
    assert names[-1] == "error" and "message_stop" not in names
    assert events[-1][1]["type"] == "error" and events[-1][1]["error"]["type"] == "overloaded_error"  # a 503, as the facade writes it
    text = "".join(d["delta"].get("text", "") for n, d in events if n == "content_block_delta")
    assert text == "Half an answer"


def test_anthropic_facade_lets_a_retry_through_unseen_when_no_text_was_sent(url, server):
    server.enqueue(tool_call_then_cut(), oa_text("Fine", " then."))
    r = messages(url)
    events = named_events(r.text)
    names = [n for n, _ in events]
    assert "error" not in names and names[-1] == "message_stop"
    text = "".join(d["delta"].get("text", "") for n, d in events if n == "content_block_delta")
    assert text == "Fine then."
    assert len(server.requests) == 2
