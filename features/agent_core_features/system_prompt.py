"""``system_prompt``: a configured system prompt for sessions that bring none.

Applications want a default instruction without writing it into every stored
session. This feature adds config ``system_prompt`` in front of each provider
call of a request (the first one and each one after tool results) while the
session holds no system message; ``{date}``, ``{time}`` (UTC) and ``{model}``
are filled in at call time, other braces are left as written.

It is an ``llm_request`` action (see :mod:`agent_core.request_injection`):
it only answers with the text as a ``system`` ``context_injection``, and the
engine converts that with the provider's own ``to_native_messages`` for the one
call, so each provider sends it in its native shape (a system message for
OpenAI, the top-level ``system`` field for Anthropic) and neither the session
nor the stored native history keeps a copy. A session that later gets its own
system message simply stops receiving this one.
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

    def get_actions(self, state: Any) -> list[dict[str, Any]]:
        return [{"id": "system_prompt_inject", "label": "Add the system prompt", "trigger": "llm_request"}]

    def execute_action(self, action_id: str, session: Any, native_messages: Any, params: Any, context: Any,
                       state: Any) -> dict[str, Any]:
        context = context or {}
        config = context.get("config") or state.get("config") or {}
        template = config.get("system_prompt")
        if action_id != "system_prompt_inject" or not template or _has_system(session, context):
            return {}
        return {"context_injection": render_prompt(template, config.get("model")), "context_injection_role": "system"}


def _has_system(session: Any, context: Any) -> bool:
    """Whether the conversation brings its own system message (attribute reads on a Session: cheap)."""
    messages = getattr(session, "messages", None)
    if messages is None:
        messages = (context.get("session") or {}).get("messages") or ()
        return any(m.get("role") == "system" for m in messages)
    return any(m.role == "system" for m in messages)
