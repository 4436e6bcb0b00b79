"""What the live tests share: real Python tools, a core that holds them, event helpers."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Iterable
from typing import Any

import pytest
from agent_core import AgentCore, Message, Session
from agent_core_providers.clients import aclose_clients

__all__ = [
    "MODES",
    "ToolsOnFirstCallOnly",
    "backoff_retries",
    "collect",
    "is_json_object",
    "make_core",
    "note_tool",
    "run_async",
    "session_with",
    "word_tool",
]

#: How a scenario is driven: (async?, stream?). Sync runs stream and async runs
#: ask for the whole answer at once, so both drivers and both wire shapes are covered.
MODES = [pytest.param(False, True, id="sync-stream"), pytest.param(True, False, id="async-call")]


def _schema(name: str, description: str, prop: str, spec: dict[str, Any]) -> dict[str, Any]:
    params = {"type": "object", "properties": {prop: spec}, "required": [prop]}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": params}}


def word_tool(calls: list[dict[str, Any]]) -> type:
    """A tool plugin with ``count_letters(word)``; every run is appended to ``calls``.

    ``maxLength`` bounds the argument, so a forced call always fits in the test's ``max_tokens``.
    """

    class WordTools:
        name = "live_word_tools"
        version = "1.0.0"

        def get_tool_schemas(self, state: Any) -> list[dict[str, Any]]:
            spec = {"type": "string", "minLength": 1, "maxLength": 12, "description": "one word"}
            return [_schema("count_letters", "How many letters a word has.", "word", spec)]

        def execute_tool(self, tool_name: str, payload: Any, state: Any) -> dict[str, Any]:
            calls.append({"tool": tool_name, "payload": dict(payload)})
            return {"success": True, "result": {"letters": len(str(payload["word"]))}}

    return WordTools


def note_tool(calls: list[dict[str, Any]]) -> type:
    """A tool plugin with ``write_note(text)`` whose text must be long.

    ``minLength`` makes the server's grammar keep the string open, so a forced
    call with ``max_tokens: 32`` is always cut inside its arguments.
    """

    class NoteTools:
        name = "live_note_tools"
        version = "1.0.0"

        def get_tool_schemas(self, state: Any) -> list[dict[str, Any]]:
            spec = {"type": "string", "minLength": 400, "description": "the whole note"}
            return [_schema("write_note", "Store a long note.", "text", spec)]

        def execute_tool(self, tool_name: str, payload: Any, state: Any) -> dict[str, Any]:
            calls.append({"tool": tool_name, "payload": dict(payload)})
            return {"success": True, "result": "stored"}

    return NoteTools


class ToolsOnFirstCallOnly:
    """Offers the tools on a request's first provider call only.

    ``tool_choice: "required"`` makes the first answer a tool call; left on, it
    would make every answer one and the loop would never end. From the second
    call on, this feature drops ``tools`` and ``tool_choice`` from the payload
    (llama.cpp's Anthropic endpoint has no ``tool_choice: none``), so the model
    answers in text, with the tool result in its history.
    """

    name = "live_tools_on_first_call_only"
    version = "1.0.0"

    def initialize_request(self, native_messages: Any, state: Any, *, context: Any = None) -> tuple[Any, Any]:
        if context is None or context["iteration"] == 1:
            return native_messages, state
        request = state["request"]
        payload = {k: v for k, v in request["payload"].items() if k not in ("tools", "tool_choice")}
        return native_messages, {**state, "request": {**request, "payload": payload}}


def make_core(*, tools: Iterable[type] = (), features: Iterable[type] = ()) -> AgentCore:
    """The installed plugins, found by entry point as a user's would be, plus the test's own."""
    core = AgentCore.discover()
    for tool in tools:
        core.register_tool(tool)
    for feature in features:
        core.register_feature(feature)
    return core


def session_with(core: AgentCore, *texts: str) -> Session:
    session = core.create_session()
    for text in texts:
        session = core.add_message(session, Message(role="user", content=text))
    return session


def collect(core: AgentCore, session: Session, config: dict[str, Any], *, use_async: bool, **kwargs: Any) -> list[Any]:
    """Every event of one streamed request, driven sync or async."""
    if not use_async:
        return list(core.stream_request(session, config, **kwargs))

    async def run() -> list[Any]:
        return [event async for event in core.astream_request(session, config, **kwargs)]

    return run_async(run)


def run_async(coro_fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``asyncio.run`` that closes the loop's pooled clients before the loop ends."""

    async def main() -> Any:
        try:
            return await coro_fn(*args, **kwargs)
        finally:
            await aclose_clients()

    return asyncio.run(main())


def is_json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


_BACKOFF = re.compile(r"\bretry\b.*?\bin (\d+(?:\.\d+)?) ?s\b", re.IGNORECASE)


def backoff_retries(records: Iterable[logging.LogRecord]) -> list[str]:
    """Provider log lines that announce a retry after a wait (a retry that cost time)."""
    out = []
    for record in records:
        if not record.name.startswith("agent_core_providers"):
            continue
        message = record.getMessage()
        match = _BACKOFF.search(message)
        if match and float(match.group(1)) > 0:
            out.append(message)
    return out
