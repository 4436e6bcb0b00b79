"""Every refusal is a JSON ``{"error": {...}}`` naming the problem; the token guards every route.

The server's own routes name the problem in ``type``; the OpenAI facade writes OpenAI's
``type`` and puts the server's short name in ``code`` (its class in ``agent_core_type``).
"""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest
from agent_core.server import create_app

from ._live import running

HI = [{"role": "user", "content": "hi"}]


def _error(r: httpx.Response, status: int, kind: str, *words: str) -> None:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    error = r.json()["error"]
    assert kind in (error["type"], error.get("code"), error.get("agent_core_type")), error
    if r.url.path.startswith("/v1/chat/"):
        assert {"message", "type", "param", "code"} <= error.keys()
    for word in words:
        assert word in error["message"]
    assert "Traceback" not in r.text


def test_bad_json_is_400(base_url: str) -> None:
    r = httpx.post(f"{base_url}/v1/chat/completions", content=b"{not json",
                   headers={"content-type": "application/json"})
    _error(r, 400, "invalid_json", "not JSON")
    r = httpx.post(f"{base_url}/v1/chat/completions", json=[1, 2])
    _error(r, 400, "invalid_json", "JSON object", "list")


@pytest.mark.parametrize(("body", "words"), [
    ({"messages": HI}, ("missing required field `model`",)),
    ({"model": 3, "messages": HI}, ("`$.model`",)),
    ({"model": "echo"}, ("messages",)),
    ({"model": "echo", "messages": [{"role": "robot", "content": "x"}]}, ("messages[0].role", "robot")),
    ({"model": "echo", "messages": [{"role": "tool", "content": "3"}]}, ("messages[0]", "tool_call_id")),
    ({"model": "echo", "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]},
     ("messages[0].content[0]", "image_url")),
    ({"model": "echo", "messages": [{"role": "assistant", "content": "", "tool_calls": [{"function": {}}]}]},
     ("messages[0].tool_calls[0]",)),
    ({"model": "echo", "messages": HI, "tools": [{"type": "retrieval"}]}, ("tools",)),
])
def test_bad_params_are_400_naming_the_field(base_url: str, body: Any, words: tuple[str, ...]) -> None:
    _error(httpx.post(f"{base_url}/v1/chat/completions", json=body), 400, "invalid_request_error", *words)


def test_unknown_provider_is_404_naming_it_and_the_installed_ones(base_url: str) -> None:
    r = httpx.post(f"{base_url}/v1/chat/completions", json={"model": "nosuch/m", "messages": HI})
    _error(r, 404, "model_not_found", "'nosuch'", "echo")


def test_a_bad_config_value_is_400_naming_the_key(base_url: str) -> None:
    r = httpx.post(f"{base_url}/v1/chat/completions",
                   json={"model": "openai/m", "messages": HI, "temperature": "hot"})
    _error(r, 400, "invalid_request_error", "$.temperature")
    assert r.json()["error"]["param"] == "temperature"


def test_unknown_route_and_wrong_method_are_json(base_url: str) -> None:
    _error(httpx.get(f"{base_url}/v1/nothing"), 404, "not_found", "/v1/nothing")
    _error(httpx.get(f"{base_url}/v1/chat/completions"), 405, "method_not_allowed", "GET")


def test_cancel_of_an_unknown_request_is_404(base_url: str) -> None:
    _error(httpx.delete(f"{base_url}/v1/requests/abc"), 404, "request_not_found", "'abc'")


@pytest.fixture
def guarded(store: Any) -> Any:
    with running(create_app(store=store, token="s3cret-token")) as url:
        yield url


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/healthz"), ("GET", "/v1/models"), ("POST", "/v1/chat/completions"), ("GET", "/v1/sessions"),
    ("DELETE", "/v1/requests/x"), ("GET", "/v1/nowhere"),
])
@pytest.mark.parametrize("auth", [None, "Bearer wrong", "s3cret-token", "Bearer s3cret-token-and-more"])
def test_every_route_wants_the_token(guarded: str, method: str, path: str, auth: str | None) -> None:
    headers = {"authorization": auth} if auth else {}
    r = httpx.request(method, f"{guarded}{path}", headers=headers, json={})
    _error(r, 401, "authentication_error", "bearer token")
    assert "s3cret" not in r.text
    assert r.headers["www-authenticate"] == "Bearer"


def test_the_right_token_passes(guarded: str) -> None:
    assert httpx.get(f"{guarded}/healthz", headers={"authorization": "Bearer s3cret-token"}).status_code == 200
    client = openai.OpenAI(base_url=f"{guarded}/v1", api_key="s3cret-token", max_retries=0)
    assert client.chat.completions.create(model="echo", messages=HI).choices[0].message.content == "Echo: hi"
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=f"{guarded}/v1", api_key="nope", max_retries=0).models.list()


@pytest.mark.parametrize("route", ["chat", "chat stream", "messages", "sessions turn"])
def test_a_provider_without_a_key_is_the_servers_fault_not_the_clients(
        route: str, store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """No key for the operator's provider: a 500 saying who sets it, not the CLI's advice as a 400."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with running(create_app(store=store, config={"provider": "openai", "model": "gpt-4o-mini"})) as url:
        if route.startswith("chat"):
            r = httpx.post(f"{url}/v1/chat/completions",
                           json={"model": "gpt-4o-mini", "messages": HI, "stream": route == "chat stream"})
        elif route == "messages":
            r = httpx.post(f"{url}/v1/messages", json={"model": "gpt-4o-mini", "max_tokens": 9, "messages": HI})
        else:
            r = httpx.post(f"{url}/v1/sessions/k/turns", json={"message": "hi"})
    kind = "api_error" if route == "messages" else "MissingAPIKeyError"  # Anthropic's shape has its type only
    _error(r, 500, kind, "openai has no API key on this server",
           "$OPENAI_API_KEY in the server's environment")
    message = r.json()["error"]["message"]
    assert "--api-key" not in message and "--base-url" not in message  # no flag a client cannot pass


def test_the_cli_still_gets_its_own_advice(monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_core import AgentCore, Message, MissingAPIKeyError, Session

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(MissingAPIKeyError) as caught:
        AgentCore.discover().request(Session("s").with_message(Message("user", "hi")),
                                     {"provider": "openai", "model": "m"})
    assert caught.value.env == "OPENAI_API_KEY" and caught.value.key == "api_key"
    assert "--api-key" in str(caught.value) and caught.value.plugins == ("openai",)
