"""A facade request resolves its plugins once: the engine runs with the resolution the facade made.

An extension counts its instances (resolution makes one per candidate, so two resolutions
make two). Where the facade's config changes after it resolved (a client field renamed for
the provider), the engine resolves the config as it ends up, as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

pytest.importorskip("starlette", reason="agent-core serve needs the server extra")

from agent_core import AgentCore
from agent_core.server import create_app

from ._live import running

MADE: list[int] = []
MSG = {"role": "user", "content": "hi"}


class Counted:
    """Notes each instance; reads ``stop`` and ``max_tokens``, so the echo provider keeps them as sent."""

    name = "counted_ext"

    def __init__(self) -> None:
        MADE.append(1)

    def get_config_schema(self) -> dict[str, Any]:
        return {"stop": {"type": "array", "default": []}, "max_tokens": {"type": "integer", "default": 0}}


@pytest.fixture
def url() -> Iterator[str]:
    with running(create_app(core=AgentCore.discover(extensions=[Counted]), store=object())) as base:
        # the first request also asks every plugin for its schema (kept for the core's life): not a resolution
        httpx.post(f"{base}/v1/chat/completions", json={"model": "echo", "messages": [MSG]}, timeout=30)
        yield base


def _made(url: str, path: str, body: dict[str, Any]) -> tuple[int, str]:
    MADE.clear()
    r = httpx.post(f"{url}{path}", json=body, timeout=30)
    assert r.status_code == 200, r.text
    return len(MADE), r.text


@pytest.mark.parametrize("stream", [False, True])
def test_each_facade_resolves_once(url: str, stream: bool) -> None:
    chat = {"model": "echo", "messages": [MSG], "stream": stream, "stop": ["zz"]}
    made, text = _made(url, "/v1/chat/completions", chat)
    assert (made, "Echo" in text) == (1, True)
    messages = {"model": "echo", "max_tokens": 20, "messages": [MSG], "stream": stream}
    made, text = _made(url, "/v1/messages", messages)
    assert (made, "Echo" in text) == (1, True)
    made, text = _made(url, "/v1/responses", {"model": "echo", "input": "hi", "stream": stream})
    assert (made, "Echo" in text) == (1, True)


def test_each_extra_choice_resolves_on_its_own(url: str) -> None:
    made, text = _made(url, "/v1/chat/completions", {"model": "echo", "messages": [MSG], "n": 3})
    assert made == 3  # the first choice takes the facade's resolution; each other one needs its own instances
    assert text.count("Echo: hi") == 3


def test_a_field_renamed_after_resolving_makes_the_engine_resolve_again(url: str) -> None:
    # Anthropic's stop_sequences is read as ``stop`` here: the config changed after the facade resolved
    body = {"model": "echo", "max_tokens": 20, "messages": [MSG], "stop_sequences": ["zz"]}
    made, text = _made(url, "/v1/messages", body)
    assert (made, "Echo" in text) == (2, True)
