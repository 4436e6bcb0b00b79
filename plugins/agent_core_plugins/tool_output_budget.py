"""Tool results cut to a budget before the model sees them; the session keeps them whole.

Why an extension: a tool that prints a whole log file or a directory tree
fills the model's context and costs tokens on every later call, yet the
application (and its user) still wants the full result. So the cut happens
where core messages become the provider's native messages
(``to_native_messages``), which is what the model is sent and what the
native history stores, while the core ``tool`` message is never touched.

A result over ``tool_output_max_bytes`` (UTF-8) or ``tool_output_max_lines``
keeps its head and its tail, about half of the budget each, with one marker
line between them saying what was left out, so the model knows the output
was longer and can ask for a narrower slice. A ``tool_post`` action records
the original size under ``metadata["tool_output_budget"]`` of the tool
message, which is how an application learns that the model saw less.

The cut works on any provider whose tool results are text in the native
message: OpenAI's ``role: "tool"`` message content, and Anthropic's
``tool_result`` blocks (string content, or its text blocks).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from agent_core.errors import ConfigError

__all__ = ["ToolOutputBudgetExtension", "cut_text"]

Dict = dict[str, Any]

DEFAULT_MAX_BYTES = 16384
DEFAULT_MAX_LINES = 400


def _marker(bytes_left: int, lines_left: int) -> str:
    return f"[... tool output truncated: {lines_left} lines, {bytes_left} bytes left out ...]\n"


def _head_bytes(text: str, limit: int) -> str:
    """The longest prefix of ``text`` whose UTF-8 form fits in ``limit`` bytes (never half a character)."""
    return text.encode("utf-8")[:limit].decode("utf-8", "ignore")


def _tail_bytes(text: str, limit: int) -> str:
    data = text.encode("utf-8")
    return data[len(data) - limit:].decode("utf-8", "ignore") if limit > 0 else ""


def cut_text(text: str, max_bytes: int, max_lines: int) -> str | None:
    """``text`` with its middle replaced by a marker so it fits both limits; None when it already fits.

    The marker itself is counted against the byte budget, so the result is at
    most ``max_bytes`` bytes when the budget is large enough to hold the
    marker at all (a budget smaller than the marker yields the marker alone).
    """
    size = len(text.encode("utf-8"))
    lines = text.splitlines(keepends=True)
    if size <= max_bytes and len(lines) <= max_lines:
        return None
    # 1. the line budget: keep the first and last lines
    head_n = max_lines // 2 + max_lines % 2
    tail_n = max_lines // 2
    if len(lines) > max_lines:
        head, tail = "".join(lines[:head_n]), "".join(lines[len(lines) - tail_n:] if tail_n else [])
    else:
        head, tail = text, ""
    # 2. the byte budget, after leaving room for the marker
    marker = _marker(size, len(lines))  # the widest the numbers can get, and a newline before it
    room = max(max_bytes - len(marker.encode("utf-8")) - 1, 0)
    head_b, tail_b = len(head.encode("utf-8")), len(tail.encode("utf-8"))
    if head_b + tail_b > room:
        if tail:
            half = room // 2
            keep_tail = min(tail_b, half)
            head = _head_bytes(head, room - keep_tail)
            tail = _tail_bytes(tail, keep_tail)
        else:  # only the byte limit bites: cut the one text in two
            head, tail = _head_bytes(text, room - room // 2), _tail_bytes(text, room // 2)
    kept_b = len(head.encode("utf-8")) + len(tail.encode("utf-8"))
    kept_lines = head.count("\n") + tail.count("\n")
    left_lines = max(text.count("\n") - kept_lines, 0)
    sep = "" if not head or head.endswith("\n") else "\n"
    return f"{head}{sep}{_marker(size - kept_b, left_lines)}{tail}"


_FLOORS = {"tool_output_max_bytes": 256, "tool_output_max_lines": 2}


def _limits(config: Any) -> tuple[int, int]:
    config = config or {}
    return (int(config.get("tool_output_max_bytes") or DEFAULT_MAX_BYTES),
            int(config.get("tool_output_max_lines") or DEFAULT_MAX_LINES))


def check_limits(config: Any) -> None:
    """A :class:`ConfigError` naming the key when a limit is not a whole number at or above its floor.

    The floors keep room for the marker and one line on each side of it.
    """
    for key, floor in _FLOORS.items():
        value = (config or {}).get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < floor:
            raise ConfigError(f"{key} must be a whole number >= {floor}, got {value!r}", key=key)


def _cut_native(native: Any, limits: tuple[int, int], from_tool: bool) -> Any:
    """``native`` with every text tool result in it cut; the same object when nothing needed cutting.

    ``from_tool``: the core message it was made from is a ``tool`` message,
    so its text is a tool result whatever shape the provider gave it (with no
    tools extension, a provider sends results as plain text).
    """
    if not isinstance(native, Mapping):
        return native
    content = native.get("content")
    if isinstance(content, str):
        if from_tool or native.get("role") == "tool":
            cut = cut_text(content, *limits)
            return native if cut is None else {**native, "content": cut}
        return native
    if isinstance(content, (list, tuple)):  # Anthropic: tool_result blocks in a user message
        blocks = [_cut_block(b, limits) for b in content]
        if any(new is not old for new, old in zip(blocks, content)):
            return {**native, "content": blocks}
    return native


def _cut_block(block: Any, limits: tuple[int, int]) -> Any:
    if not (isinstance(block, Mapping) and block.get("type") == "tool_result"):
        return block
    body = block.get("content")
    if isinstance(body, str):
        cut = cut_text(body, *limits)
        return block if cut is None else {**block, "content": cut}
    if isinstance(body, (list, tuple)):
        parts = []
        for part in body:
            if isinstance(part, Mapping) and part.get("type") == "text" and isinstance(part.get("text"), str):
                cut = cut_text(part["text"], *limits)
                if cut is not None:
                    part = {**part, "text": cut}
            parts.append(part)
        if any(new is not old for new, old in zip(parts, body)):
            return {**block, "content": parts}
    return block


def _is_tool(message: Any) -> bool:
    return isinstance(message, Mapping) and message.get("role") == "tool"


class ToolOutputBudgetExtension:
    """Caps tool results on their way to the model, keeping head and tail; the core session keeps all."""

    name = "tool_output_budget"
    version = "0.1.0"
    priority = 95  # after the tools extensions (50) have built the native tool results
    default_enabled = True

    def get_config_schema(self) -> Dict:
        return {
            "tool_output_max_bytes": {
                "type": "integer", "minimum": _FLOORS["tool_output_max_bytes"], "default": DEFAULT_MAX_BYTES,
                "description": "largest tool result, in UTF-8 bytes, sent to the model (head and tail kept)",
            },
            "tool_output_max_lines": {
                "type": "integer", "minimum": _FLOORS["tool_output_max_lines"], "default": DEFAULT_MAX_LINES,
                "description": "most lines of a tool result sent to the model (first and last halves kept)",
            },
        }

    def init(self, config: Dict, state: Dict) -> Dict:
        check_limits(config)
        return state

    def to_native_messages(
        self, messages: list[Dict], native_messages: list[Dict], state: Dict | None = None, *,
        context: Dict | None = None,
    ) -> list[Dict]:
        """Cut the native form of each tool result over the budget; other messages pass untouched."""
        limits = _limits((state or {}).get("config"))
        # 1:1 with the core messages (as the bundled providers make them), a
        # tool message's native form is cut whatever its shape; otherwise only
        # what looks like a tool result is
        paired = len(messages) == len(native_messages)
        out = [_cut_native(n, limits, paired and _is_tool(messages[i])) for i, n in enumerate(native_messages)]
        if all(new is old for new, old in zip(out, native_messages)):
            return native_messages
        return out

    def get_actions(self, state: Dict) -> list[Dict]:
        return [{"id": "tool_output_budget_record", "label": "Note a tool result's original size",
                 "trigger": "tool_post"}]

    def execute_action(self, action_id: str, session: Any, native_messages: Any, params: Any, context: Any,
                       state: Any = None) -> Dict:
        """``tool_post``: when the result is over the budget, record its size on the tool message."""
        message = (context or {}).get("tool_message") or {}
        content = message.get("content") if isinstance(message, Mapping) else None
        if content is None:
            return {}
        if not isinstance(content, str):  # a structured result goes to the model as compact JSON text
            try:
                content = msgspec.json.encode(content).decode()
            except (TypeError, msgspec.EncodeError):
                return {}
        max_bytes, max_lines = _limits((context or {}).get("config"))
        size = len(content.encode("utf-8"))
        lines = len(content.splitlines())
        if size <= max_bytes and lines <= max_lines:
            return {}
        return {"tool_message_metadata": {"tool_output_budget": {
            "truncated": True, "original_bytes": size, "original_lines": lines,
            "max_bytes": max_bytes, "max_lines": max_lines,
        }}}
