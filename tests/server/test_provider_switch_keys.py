"""A request that switches provider never sends that provider's key to the operator's base URL.

The operator runs ``openai`` on a base URL of its choosing; a client asks for ``anthropic/...``.
Anthropic's key (from the environment) must go to Anthropic's own URL, not to the operator's, and
the operator's key must not go to Anthropic. Two real loopback servers stand for the two hosts.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from agent_core.server import create_app
from providers._server import ScriptedServer, json_reply

from ._live import running

ANTHROPIC_KEY = "sk-ant-env-0123456789abcdef"
OPERATOR_KEY = "sk-op-0123456789abcdef"


def test_the_other_providers_key_goes_to_its_own_url_never_to_the_operators(
        server: ScriptedServer, store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    anthropic_host = ScriptedServer()
    try:
        monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_host.url)  # the operator's environment: its own host
        anthropic_host.enqueue(json_reply({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
            "content": [{"type": "text", "text": "from anthropic"}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 1, "output_tokens": 2}}))
        config = {"provider": "openai", "base_url": server.url + "/v1", "api_key": OPERATOR_KEY, "max_retries": 0}
        with running(create_app(store=store, config=config)) as url:
            r = httpx.post(f"{url}/v1/chat/completions", timeout=30, json={
                "model": "anthropic/claude-x", "messages": [{"role": "user", "content": "hi"}]})
        assert r.status_code == 200, r.text
        assert r.json()["choices"][0]["message"]["content"] == "from anthropic"
        assert server.requests == []  # the operator's URL saw nothing
        (sent,) = anthropic_host.requests
        assert sent.headers.get("x-api-key") == ANTHROPIC_KEY
        assert OPERATOR_KEY not in repr(sent)
    finally:
        anthropic_host.close()
