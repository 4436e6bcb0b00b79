"""``title``: a title for the conversation, set once after its first answer.

A ``response_finalize`` action (``set_title``) runs after each provider call;
while ``session.metadata`` has no ``title`` it sets one: the first line of the
first user message (cut to 60 characters), or, with config ``title_model``, a
title that model writes. The model is asked with ``context["core"].side_request``:
the in-flight request's own config (provider, endpoint and API key, which this
feature never sees) with ``model`` set to ``title_model``, opt-in plugins (tools
among them) and ``title`` itself left out, and one provider call. If that
request fails the first user line is used, so a title never costs the user
their answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent_core.plugin_kit import Feature
from agent_core.types import Message, Session

__all__ = ["TitleFeature", "first_user_line"]

MAX_TITLE = 60


def first_user_line(messages: Any) -> str:
    """The first non-empty line of the first user message with text, cut to 60 characters."""
    for m in messages:
        content = m.get("content") if isinstance(m, Mapping) else None
        if m.get("role") == "user" and isinstance(content, str):
            for line in content.splitlines():
                if line.strip():
                    text = " ".join(line.split())
                    return text if len(text) <= MAX_TITLE else text[: MAX_TITLE - 1].rstrip() + "…"
    return ""


def _clean(text: str) -> str:
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    line = " ".join(line.split()).strip("\"'*# ")
    return line if len(line) <= MAX_TITLE else line[: MAX_TITLE - 1].rstrip() + "…"


class TitleFeature(Feature):
    name = "title"
    version = "1.0.0"
    priority = 150
    default_enabled = False  # opt-in: enabled_plugins=["title"]
    config_schema = {"title_model": {"type": "string", "default": "",
                                     "description": "Model that writes the title; empty: the first user line."}}
    ui_elements = ({"ui_type": "status_bar", "data": "session.metadata.title", "template": "{{data}}",
                    "label": "Title"},)
    actions = ({"id": "set_title", "label": "Set the title", "trigger": "response_finalize"},)

    def execute_action(self, action_id: str, session: Any, native_messages: Any, params: Any, context: Any,
                       state: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"native_messages": list(native_messages)}
        context = context or {}
        meta = (context.get("session") or {}).get("metadata") or {}
        if action_id != "set_title" or meta.get("title"):
            return out
        messages = (context.get("session") or {}).get("messages") or []
        fallback = first_user_line(messages)
        if not fallback:
            return out
        config = context.get("config") or {}
        title = ""
        if config.get("title_model") and context.get("core") is not None:
            title = self._ask_model(context["core"], config, fallback, messages)
        out["session_metadata"] = {"title": title or fallback}
        return out

    @staticmethod
    def _ask_model(core: Any, config: Mapping[str, Any], fallback: str, messages: Any) -> str:
        first = next((m.get("content") for m in messages if m.get("role") == "user"), "")
        asked = Session(session_id="title", messages=[Message(
            role="user",
            content=f"Write a title of at most six words for a conversation that starts with:\n\n{first}\n\n"
                    "Answer with the title only.",
        )])
        overrides = {"model": config["title_model"], "enabled_plugins": [],
                     "disabled_plugins": [*(config.get("disabled_plugins") or ()), "title"],
                     "max_iterations": 1, "stream": False}
        try:
            result = core.side_request(asked, overrides)
        except Exception:  # noqa: BLE001 - the user's answer must not fail for want of a title
            return ""
        answers = [m for m in result.final_messages if m.role == "assistant" and isinstance(m.content, str)]
        return _clean(answers[-1].content) if answers else ""
