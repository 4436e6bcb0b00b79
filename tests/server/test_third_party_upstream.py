"""A third-party provider's failures reach a client of ``agent-core serve`` as the upstream said them.

The guide's ``Lines`` provider (taken from docs/writing-plugins.md) builds its
errors with ``agent_core_providers.failures``, so they carry the API's own
account: an upstream 500 is answered 500, a 429 keeps its ``retry-after``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from agent_core import AgentCore
from agent_core.server import create_app
from guide_snippets import guide_module
from providers._server import ScriptedServer, json_reply

from ._live import running

Lines = guide_module("lines_provider.py").Lines


@pytest.fixture
def facade(server: ScriptedServer, store: Any) -> Iterator[str]:
    core = AgentCore(providers=[Lines])
    with running(create_app(core, store=store, config={"provider": "lines", "lines_url": server.url})) as url:
        yield url


@pytest.mark.parametrize(("status", "headers", "kind"), [
    (500, {}, "ProviderUnavailableError"),
    (429, {"retry-after": "7"}, "RateLimitError"),
])
def test_an_upstream_failure_is_answered_with_the_upstreams_status(facade, server, status, headers, kind):
    server.enqueue(json_reply({"error": {"message": "the lines API broke", "type": "lines_error"}}, status,
                              headers=headers))
    r = httpx.post(f"{facade}/v1/chat/completions", json={
        "model": "lines", "messages": [{"role": "user", "content": "hi"}], "stream": False})
    assert r.status_code == status, r.text
    error = r.json()["error"]
    assert error["agent_core_type"] == kind
    assert error["message"] == "the lines API broke" and error["type"] == "lines_error"
    if "retry-after" in headers:
        assert r.headers["retry-after"] == "7"
