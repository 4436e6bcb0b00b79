"""``system_prompt``: the configured system prompt, in front of every provider call.

Applications want an instruction of their own without writing it into every
stored session. This feature adds config ``system_prompt`` in front of each
provider call of a request (the first one and each one after tool results);
``{date}``, ``{time}`` (UTC) and ``{model}`` are filled in at call time, other
braces are left as written.

A conversation may bring system messages of its own (a client's ``system``
message, an Anthropic ``system`` field, Responses ``instructions``). Whose
instruction wins is the configuring party's call, ``system_prompt_policy``:

- ``first`` (the default): the configured prompt goes first and the
  conversation's own system messages follow it, so a server's operator keeps
  its instruction whatever a client sends;
- ``fallback``: the configured prompt only for a conversation with no system
  message of its own (a default that a caller may replace);
- ``refuse``: a conversation with a system message of its own is refused with
  a :class:`~agent_core.errors.ConfigError` naming the policy, before the call.

The template is text from the client, so it is not a Python format string:
``str.format`` would let ``{x:>100000000}`` allocate 100 MB and
``{model.__class__}`` print Python internals. :func:`render_prompt` replaces
only the three exact placeholders, in one pass over the template, and copies
every other character as it is: ``{model!r}``, ``{date:%Y}``, ``{model.upper}``,
``{other}`` and ``{{date}}``'s outer braces all stay as written (there is no
escape syntax, and nothing raises). Its work and output are linear: the result
is the template plus, per placeholder, at most the length of its value.

It is an ``llm_request`` action (see :mod:`agent_core.engine.request_injection`):
it only answers with the text as a ``system`` ``context_injection``, and the
engine converts that with the provider's own ``to_native_messages`` for the one
call, so each provider sends it in its native shape (a system message for
OpenAI, the top-level ``system`` field for Anthropic) and neither the session
nor the stored native history keeps a copy.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any

from agent_core.errors import ConfigError
from agent_core.plugin_kit import Feature

__all__ = ["PLACEHOLDERS", "POLICIES", "SystemPromptFeature", "render_prompt"]

#: what a conversation's own system message does beside the configured prompt (module docstring)
POLICIES = ("first", "fallback", "refuse")

#: the names a template may use, each written exactly ``{name}``
PLACEHOLDERS = ("date", "time", "model")
_PLACEHOLDER = re.compile(r"\{(" + "|".join(PLACEHOLDERS) + r")\}")


def render_prompt(template: str, model: Any, now: datetime | None = None) -> str:
    """``template`` with each exact ``{date}``, ``{time}`` and ``{model}`` filled in; all else as written.

    Args:
        template: the configured prompt; any text, braces included.
        model: the configured model id (``"unknown"`` when empty).
        now: the time to show (UTC now when omitted).

    Returns:
        The prompt. Never raises for a ``str`` template: a brace group that is
        not one of :data:`PLACEHOLDERS` exactly (with a format spec,
        conversion, attribute or index, or another name) is plain text.
    """
    now = now or datetime.now(timezone.utc)
    values = {"date": now.strftime("%Y-%m-%d"), "time": now.strftime("%H:%M UTC"), "model": str(model or "unknown")}
    return _PLACEHOLDER.sub(lambda found: values[found.group(1)], template)


class SystemPromptFeature(Feature):
    name = "system_prompt"
    version = "1.0.0"
    priority = 10  # early: later features see the prompt in place
    config_schema = {"system_prompt": {"type": "string", "default": "",
                                       "description": "System prompt sent in front of every call; {date}, "
                                                      "{time}, {model}."},
                     "system_prompt_policy": {"type": "string", "enum": list(POLICIES), "default": "first",
                                              "description": "A conversation's own system message: kept after "
                                                             "the prompt (first), replaces it (fallback), or "
                                                             "is refused (refuse)."}}
    ui_elements = ({"type": "textarea", "key": "system_prompt", "label": "System prompt",
                    "description": "Sent in front of the conversation. {date}, {time}, {model}."},)
    actions = ({"id": "system_prompt_inject", "label": "Add the system prompt", "trigger": "llm_request"},)

    def is_enabled(self, config: Any, tags: Any, models: Any, context: Any) -> bool:
        return bool(config.get("system_prompt"))

    def execute_action(self, action_id: str, session: Any, native_messages: Any, params: Any, context: Any,
                       state: Any) -> dict[str, Any]:
        context = context or {}
        config = context.get("config") or state.get("config") or {}
        template = config.get("system_prompt")
        if action_id != "system_prompt_inject" or not template:
            return {}
        policy = config.get("system_prompt_policy") or "first"
        if policy != "first" and _has_system(session, context):
            if policy == "refuse":
                raise ConfigError("this conversation brings a system message of its own, and the configured "
                                  "system prompt may not be joined by another (system_prompt_policy: refuse); "
                                  "send the conversation without it", key="system_prompt_policy")
            return {}
        return {"context_injection": render_prompt(template, config.get("model")), "context_injection_role": "system"}


def _has_system(session: Any, context: Any) -> bool:
    """Whether the conversation brings its own system message (attribute reads on a Session: cheap)."""
    messages = getattr(session, "messages", None)
    if messages is None:
        messages = (context.get("session") or {}).get("messages") or ()
        return any(m.get("role") == "system" for m in messages)
    return any(m.role == "system" for m in messages)
