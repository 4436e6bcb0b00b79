"""The Anthropic API's own request checks, for a scripted upstream that refuses what it refuses.

An upstream that accepts any body hides shape bugs: a ``tool_choice`` in OpenAI's
shape or a thinking block without its signature passes a test and fails against
the real API. :func:`refuse_like_anthropic` installs these checks on a
:class:`ScriptedServer`; a body the API would refuse is answered with a 400 in the
API's error shape (and no scripted reply is used), a body it takes gets the next
scripted reply. The rules follow Anthropic's API reference (Messages, Token
counting, Extended thinking, Prompt caching, Vision, PDF support): tool choice forms,
signed thinking blocks handed back unchanged, a thinking block first in a tool-using
final assistant turn when thinking is on, the keys each content block, system block and
tool takes, ``cache_control``'s shape, image and document sources, and the fields
``/v1/messages/count_tokens`` takes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._server import Recorded, Reply, ScriptedServer, json_reply

__all__ = ["COUNT_FIELDS", "count_fault", "messages_fault", "refuse_like_anthropic"]

#: the body fields ``POST /v1/messages/count_tokens`` accepts (anything else: "Extra inputs are not permitted")
COUNT_FIELDS = frozenset({"model", "messages", "system", "tools", "tool_choice", "thinking", "mcp_servers",
                          "context_management", "output_format"})
_CHOICE_KEYS = {"auto": {"type", "disable_parallel_tool_use"}, "any": {"type", "disable_parallel_tool_use"},
                "tool": {"type", "name", "disable_parallel_tool_use"}, "none": {"type"}}


def _choice_fault(choice: Any, tools: Any) -> str | None:
    if not isinstance(choice, Mapping) or choice.get("type") not in _CHOICE_KEYS:
        return f"tool_choice: Input tag {choice.get('type') if isinstance(choice, Mapping) else choice!r} " \
               "found using 'type' does not match any of the expected tags: 'auto', 'any', 'tool', 'none'"
    extra = set(choice) - _CHOICE_KEYS[choice["type"]]
    if extra:
        return f"tool_choice.{choice['type']}.{sorted(extra)[0]}: Extra inputs are not permitted"
    if "disable_parallel_tool_use" in choice and not isinstance(choice["disable_parallel_tool_use"], bool):
        return "tool_choice.disable_parallel_tool_use: Input should be a valid boolean"
    if choice["type"] == "tool":
        if not isinstance(choice.get("name"), str):
            return "tool_choice.tool.name: Field required"
        if choice["name"] not in {t.get("name") for t in tools or () if isinstance(t, Mapping)}:
            return f"tool_choice: Tool '{choice['name']}' not found in provided tools"
    return None


#: the keys each content block type takes (anything else: "Extra inputs are not permitted")
_BLOCK_KEYS = {
    "text": {"type", "text", "cache_control", "citations"},
    "image": {"type", "source", "cache_control"},
    "document": {"type", "source", "title", "context", "citations", "cache_control"},
    "tool_use": {"type", "id", "name", "input", "cache_control"},
    "tool_result": {"type", "tool_use_id", "content", "is_error", "cache_control"},
    "thinking": {"type", "thinking", "signature"},
    "redacted_thinking": {"type", "data"},
}
_IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
_TOOL_KEYS = {"name", "description", "input_schema", "cache_control", "type"}


def _cache_fault(value: Any, where: str) -> str | None:
    if not isinstance(value, Mapping) or value.get("type") != "ephemeral" or set(value) - {"type", "ttl"}:
        return f"{where}.cache_control: Input tag does not match the expected tag 'ephemeral'"
    return None


def _source_fault(block: Mapping[str, Any], where: str) -> str | None:
    source = block.get("source")
    if not isinstance(source, Mapping):
        return f"{where}.source: Field required"
    if source.get("type") == "base64":
        if block["type"] == "image" and source.get("media_type") not in _IMAGE_TYPES:
            return f"{where}.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or " \
                   "'image/webp'"
        if not isinstance(source.get("data"), str) or set(source) - {"type", "media_type", "data"}:
            return f"{where}.source.base64: data is a string, and no other field is permitted"
    elif source.get("type") == "url":
        if not isinstance(source.get("url"), str) or set(source) - {"type", "url"}:
            return f"{where}.source.url.url: Field required"
    elif block["type"] == "image" or source.get("type") not in ("text", "content", "file"):
        return f"{where}.source: Input tag {source.get('type')!r} found using 'type' does not match any of the " \
               "expected tags"
    return None


def _block_fault(block: Any, where: str, signed: Mapping[str, str] | None) -> str | None:
    if not isinstance(block, Mapping):
        return f"{where}: Input should be a valid dictionary"
    allowed = _BLOCK_KEYS.get(block.get("type"))
    if allowed is not None and set(block) - allowed:
        return f"{where}.{block['type']}.{sorted(set(block) - allowed)[0]}: Extra inputs are not permitted"
    if "cache_control" in block:
        fault = _cache_fault(block["cache_control"], where)
        if fault:
            return fault
    if block.get("type") in ("image", "document"):
        fault = _source_fault(block, where)
        if fault:
            return fault
    if block.get("type") == "thinking":
        if not isinstance(block.get("signature"), str):
            return f"{where}.thinking.signature: Field required"
        if signed is not None and signed.get(block["signature"]) != block.get("thinking"):
            return f"{where}: Invalid `signature` in `thinking` block"
    if block.get("type") == "redacted_thinking" and not isinstance(block.get("data"), str):
        return f"{where}.redacted_thinking.data: Field required"
    return None


def _system_fault(system: Any) -> str | None:
    """``system`` is a string or a list of text blocks."""
    if system is None or isinstance(system, str):
        return None
    if not isinstance(system, list):
        return "system: Input should be a valid string or list"
    for j, block in enumerate(system):
        if not isinstance(block, Mapping) or block.get("type") != "text":
            return f"system.{j}.type: Input should be 'text'"
        fault = _block_fault(block, f"system.{j}", None)
        if fault:
            return fault
    return None


def _tools_fault(tools: Any) -> str | None:
    for i, tool in enumerate(tools or ()):
        if not isinstance(tool, Mapping) or set(tool) - _TOOL_KEYS:
            return f"tools.{i}: Extra inputs are not permitted (a tool is name, description, input_schema, " \
                   "cache_control)"
        if "function" in tool or not isinstance(tool.get("input_schema"), Mapping):
            return f"tools.{i}.custom.input_schema: Field required"
        if "cache_control" in tool:
            fault = _cache_fault(tool["cache_control"], f"tools.{i}")
            if fault:
                return fault
    return None


def messages_fault(body: Any, signed: Mapping[str, str] | None = None) -> str | None:
    """Why the API would refuse this Messages body, or None.

    ``signed`` maps each signature the upstream issued to the thinking text it signed:
    a thinking block handed back must carry one of them over its text unchanged.
    """
    if not isinstance(body, Mapping) or not isinstance(body.get("messages"), list):
        return "messages: Field required"
    fault = _system_fault(body.get("system")) or _tools_fault(body.get("tools"))
    if fault:
        return fault
    if "tool_choice" in body:
        fault = _choice_fault(body["tool_choice"], body.get("tools"))
        if fault:
            return fault
    for i, message in enumerate(body["messages"]):
        content = message.get("content") if isinstance(message, Mapping) else None
        for j, block in enumerate(content if isinstance(content, list) else ()):
            fault = _block_fault(block, f"messages.{i}.content.{j}", signed)
            if fault:
                return fault
    thinking = body.get("thinking")
    if isinstance(thinking, Mapping) and thinking.get("type") == "enabled":
        assistants = [m for m in body["messages"] if m.get("role") == "assistant"]
        last = assistants[-1].get("content") if assistants else None
        if isinstance(last, list) and any(b.get("type") == "tool_use" for b in last) and (
                last[0].get("type") not in ("thinking", "redacted_thinking")):
            return ("messages: Expected `thinking` or `redacted_thinking`, but found "
                    f"`{last[0].get('type')}`. When `thinking` is enabled, a final `assistant` message must "
                    "start with a thinking block")
    return None


def count_fault(body: Any) -> str | None:
    if isinstance(body, Mapping):
        extra = sorted(set(body) - COUNT_FIELDS)
        if extra:
            return f"{extra[0]}: Extra inputs are not permitted"
    return messages_fault(body)


def refuse_like_anthropic(server: ScriptedServer, signed: Mapping[str, str] | None = None) -> ScriptedServer:
    """Make ``server`` refuse, with the API's 400, the bodies Anthropic's API refuses."""

    def check(request: Recorded) -> Reply | None:
        if request.method != "POST":
            return None
        counting = request.path.endswith("/messages/count_tokens")
        fault = count_fault(request.body) if counting else messages_fault(request.body, signed)
        if fault is None:
            return None
        return json_reply({"type": "error", "error": {"type": "invalid_request_error", "message": fault}}, 400)

    server.check = check
    return server
