"""The OpenAI-compatible facade, spoken to by the official openai client over real HTTP."""

from __future__ import annotations

from typing import Any

import httpx


def test_non_streaming_echo_answers_the_openai_client(client: Any) -> None:
    reply = client.chat.completions.create(model="echo", messages=[{"role": "user", "content": "hello there"}])
    assert reply.object == "chat.completion"
    assert reply.model == "echo"
    assert reply.choices[0].message.role == "assistant"
    assert reply.choices[0].message.content == "Echo: hello there"
    assert reply.choices[0].finish_reason == "stop"
    usage = reply.usage
    assert usage is not None and usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


def test_streaming_echo_arrives_in_chunks_and_ends(client: Any) -> None:
    stream = client.chat.completions.create(
        model="echo", messages=[{"role": "user", "content": "one two three"}], stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Echo: one two three"
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) >= 4  # word by word
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes == ["stop"]
    assert chunks[-1].usage is not None and not chunks[-1].choices


def test_the_sse_body_ends_with_done(base_url: str) -> None:
    body = {"model": "echo", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    r = httpx.post(f"{base_url}/v1/chat/completions", json=body)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/event-stream")
    assert r.text.rstrip().endswith("data: [DONE]")
    assert r.headers["x-request-id"] in r.text  # the chunk ids name the request, which DELETE /v1/requests takes


def test_the_whole_conversation_is_sent_each_time(client: Any) -> None:
    reply = client.chat.completions.create(model="echo", messages=[
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "Echo: first"},
        {"role": "user", "content": [{"type": "text", "text": "sec"}, {"type": "text", "text": "ond"}]},
    ])
    assert reply.choices[0].message.content == "Echo: second"


def test_models_lists_provider_slash_model(client: Any) -> None:
    ids = [m.id for m in client.models.list()]
    assert "echo/echo-1" in ids


def test_healthz(base_url: str) -> None:
    r = httpx.get(f"{base_url}/healthz")
    assert r.status_code == 200 and r.json() == {"status": "ok"}


def test_x_session_id_keeps_each_exchange_in_the_store(plugins_url: str) -> None:
    import openai

    base_url = plugins_url
    client = openai.OpenAI(base_url=f"{base_url}/v1", api_key="unused", max_retries=0)
    first = [{"role": "user", "content": "plan a trip"}]
    raw = client.chat.completions.with_raw_response.create(
        model="echo", messages=first, extra_headers={"x-session-id": "facade-1"})
    assert raw.headers["x-session-revision"] == "1"
    reply = raw.parse().choices[0].message.content
    stored = httpx.get(f"{base_url}/v1/sessions/facade-1").json()
    assert [(m["role"], m["content"]) for m in stored["messages"]] == [("user", "plan a trip"), ("assistant", reply)]

    # A title set on the stored session survives the next exchange (its metadata is carried).
    r = httpx.post(f"{base_url}/v1/sessions/facade-1/actions/set_title",
                   json={"config": {"provider": "echo", "enabled_plugins": ["title"]}})
    assert r.json()["revision"] == 2
    second = [*first, {"role": "assistant", "content": reply}, {"role": "user", "content": "by train"}]
    stream = client.chat.completions.create(model="echo", messages=second, stream=True,
                                            extra_headers={"x-session-id": "facade-1"})
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "Echo: by train"
    stored = httpx.get(f"{base_url}/v1/sessions/facade-1").json()
    assert stored["revision"] == 3 and stored["metadata"]["title"] == "plan a trip"
    assert [m["content"] for m in stored["messages"]] == ["plan a trip", reply, "by train", "Echo: by train"]


def test_without_x_session_id_nothing_is_stored(base_url: str, client: Any) -> None:
    client.chat.completions.create(model="echo", messages=[{"role": "user", "content": "hi"}])
    assert httpx.get(f"{base_url}/v1/sessions").json()["data"] == []


def test_models_leaves_out_a_provider_without_a_key_and_pairs_each_with_its_own_model(
        store: Any, monkeypatch: Any) -> None:
    """The operator's ``model`` is its provider's; a provider whose every request would lack a key is not offered."""
    from agent_core.server import create_app

    from ._live import running

    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    config = {"provider": "openai", "model": "gpt-4o-mini", "base_url": "http://127.0.0.1:9/v1"}
    with running(create_app(store=store, config=config)) as url:
        ids = [m["id"] for m in httpx.get(f"{url}/v1/models").json()["data"]]
    assert "openai/gpt-4o-mini" in ids  # a local base URL needs no key
    assert "anthropic/gpt-4o-mini" not in ids  # the operator's model is openai's
    assert any(i.startswith("anthropic/claude") for i in ids)  # anthropic has its key: its own default model
    assert not any(i.startswith("openai_responses/") for i in ids)  # the public API with no key: left out
    assert "echo/echo-1" in ids
