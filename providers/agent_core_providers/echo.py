"""``echo``: the offline, deterministic default provider.

It answers ``Echo: <last user message>`` and streams the reply word by word,
so the whole pipeline (hot path, partials, finals, extensions, features) can
be seen and tested without a network or an API key. It needs no
configuration; ``echo_prefix`` changes the leading word.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["EchoProvider"]


def _reply(native_messages: Any, prefix: str) -> str:
    for m in reversed(native_messages):
        if m.get("role") == "user":
            content = m.get("content", "")
            return f"{prefix} {content}" if isinstance(content, str) else f"{prefix} {content!r}"
    return prefix


class EchoProvider:
    """Echoes the last user message, streaming one word per chunk."""

    name = "echo"
    version = "1.0.0"

    def get_config_schema(self) -> dict[str, Any]:
        return {
            "model": {"type": "string", "default": "echo-1", "description": "Reported model id."},
            "echo_prefix": {"type": "string", "default": "Echo:", "description": "Word the reply starts with."},
        }

    def get_models(self, config: Any) -> list[dict[str, Any]]:
        return [{"id": config.get("model") or "echo-1", "provider": "echo"}]

    def get_tags(self, config: Any, models: Any) -> list[str]:
        return ["streaming", "provider:echo"]

    def init(self, config: Any) -> dict[str, Any]:
        return {"config": config, "echo_text": ""}

    def stream_api(self, native_messages: Any, state: Any, *, request_id: str | None = None) -> Iterator[dict[str, Any]]:
        words = _reply(native_messages, state["config"].get("echo_prefix", "Echo:")).split(" ")
        for i, word in enumerate(words):
            yield {"delta": word if i == 0 else " " + word}

    def process_chunk(self, native_chunk: Any, native_messages: Any, state: Any) -> tuple[Any, Any, Any, Any]:
        delta = native_chunk["delta"]
        partial = {"role": "assistant", "content": delta}
        return [partial], [], native_messages, {**state, "echo_text": state["echo_text"] + delta}

    def finalize(self, native_messages: Any, state: Any, *, context: Any = None) -> tuple[Any, Any, Any]:
        if not state["echo_text"]:
            return [], native_messages, state
        final = {"role": "assistant", "content": state["echo_text"]}
        return [final], [*native_messages, final], {**state, "echo_text": ""}

    def call_api(self, native_messages: Any, state: Any, *, request_id: str | None = None) -> tuple[Any, Any, Any, Any]:
        final = {"role": "assistant", "content": _reply(native_messages, state["config"].get("echo_prefix", "Echo:"))}
        return [], [final], [*native_messages, final], state
