"""``system_prompt``: a configured system prompt for sessions that bring none.

Applications want a default instruction without writing it into every stored
session. This feature adds config ``system_prompt`` in front of each provider
call whose history holds no system message; ``{date}``, ``{time}`` (UTC) and
``{model}`` are filled in at call time, other braces are left as written.

It works in ``initialize_request``, so the prompt is part of that one call only
and never stored in the session (the engine keeps the native history as it was
before ``initialize_request``): a session that later gets its own system
message simply stops receiving this one. Providers build their request payload
in their own ``initialize_request``, which runs first, so the prompt is also
put into ``state["request"]["payload"]``: as the top-level ``system`` field for
Anthropic, as the first message for OpenAI-shaped payloads.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

__all__ = ["SystemPromptFeature", "render_prompt"]


class _Keep(dict):  # type: ignore[type-arg]
    """format_map mapping that leaves unknown ``{names}`` as they were."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def render_prompt(template: str, model: Any, now: datetime | None = None) -> str:
    """``template`` with ``{date}``, ``{time}`` and ``{model}`` filled in."""
    now = now or datetime.now(timezone.utc)
    values = _Keep(date=now.strftime("%Y-%m-%d"), time=now.strftime("%H:%M UTC"), model=model or "unknown")
    try:
        return template.format_map(values)
    except (ValueError, IndexError, AttributeError):  # stray braces: send the text as written
        return template


class SystemPromptFeature:
    name = "system_prompt"
    version = "1.0.0"
    priority = 10  # early: later features see the prompt in place

    def get_config_schema(self) -> dict[str, Any]:
        return {"system_prompt": {"type": "string", "default": "",
                                  "description": "System prompt for sessions without one; {date}, {time}, {model}."}}

    def is_enabled(self, config: Any, tags: Any, models: Any, context: Any) -> bool:
        return bool(config.get("system_prompt"))

    def get_ui_elements(self, config: Any) -> list[dict[str, Any]]:
        return [{"type": "textarea", "key": "system_prompt", "label": "System prompt",
                 "description": "Used when the conversation has no system message. {date}, {time}, {model}."}]

    def initialize_request(self, native_messages: Any, state: Any, *, context: Any = None) -> tuple[Any, Any]:
        config = state.get("config") or {}
        template = config.get("system_prompt")
        if not template or any(m.get("role") == "system" for m in native_messages):
            return native_messages, state
        text = render_prompt(template, config.get("model"))
        native = [{"role": "system", "content": text}, *native_messages]
        request = state.get("request")
        payload = request.get("payload") if isinstance(request, dict) else None
        if not isinstance(payload, dict):
            return native, state
        tags = (context or {}).get("tags") or ()
        if "provider:anthropic" in tags:
            if payload.get("system"):
                return native, state
            payload = {**payload, "system": text}
        elif isinstance(payload.get("messages"), list):
            payload = {**payload, "messages": [{"role": "system", "content": text}, *payload["messages"]]}
        else:
            return native, state
        return native, {**state, "request": {**request, "payload": payload}}
