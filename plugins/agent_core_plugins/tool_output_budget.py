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
was longer and can ask for a narrower slice. Both limits hold for the text
sent, marker included, and a line is what :meth:`str.splitlines` says it is:
a tool may end its lines with ``\r``, ``\r\n``, ``\u2028`` or ``\x85`` as
well as ``\n``, and a reader (or a tokenizer) sees each as a line break, so
counting ``\n`` alone would let such output through whole. A ``tool_post`` action records
the original size under ``metadata["tool_output_budget"]`` of the tool
message, which is how an application learns that the model saw less.

The cut works on any provider whose tool results are text in the native
message: OpenAI's ``role: "tool"`` message content, and Anthropic's
``tool_result`` blocks (string content, or its text blocks).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import msgspec
from agent_core.errors import ConfigError
from agent_core.plugin_kit import Extension

if TYPE_CHECKING:
    from agent_core.plugin_kit import Dict, Msgs

__all__ = ["ToolOutputBudgetExtension", "cut_text"]

DEFAULT_MAX_BYTES = 16384
DEFAULT_MAX_LINES = 400


def _marker(bytes_left: int, lines_left: int) -> str:
    return f"[... tool output truncated: {lines_left} lines, {bytes_left} bytes left out ...]\n"


#: what ``str.splitlines`` ends a line at, so a piece ending in one needs no newline added after it
_LINE_ENDS = frozenset("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029")


def _head_bytes(text: str, limit: int) -> str:
    """The longest prefix of ``text`` whose UTF-8 form fits in ``limit`` bytes (never half a character).

    Only the first ``limit`` characters are encoded: no character is shorter than a byte.
    """
    return text[:limit].encode("utf-8")[:limit].decode("utf-8", "ignore") if limit > 0 else ""


def _tail_bytes(text: str, limit: int) -> str:
    if limit <= 0:
        return ""
    data = text[-limit:].encode("utf-8")
    return data[len(data) - limit:].decode("utf-8", "ignore")


def _nbytes(text: str) -> int:
    return len(text.encode("utf-8"))


def cut_text(text: str, max_bytes: int, max_lines: int) -> str | None:
    """``text`` with its middle replaced by a marker line so it fits both limits; None when it already fits.

    Lines are counted as :meth:`str.splitlines` counts them (``\n``, ``\r``,
    ``\r\n``, ``\v``, ``\f``, ``\x1c``-``\x1e``, ``\x85``, ``\u2028``,
    ``\u2029``), by the input check and by the cut alike. The result has at
    most ``max_lines`` such lines, the marker line included, and at most
    ``max_bytes`` UTF-8 bytes, the marker included, for any ``max_lines >= 1``
    and any ``max_bytes`` that holds the marker (the config floors, 2 lines and
    256 bytes, always do; a smaller byte budget yields about the marker alone).
    Time and memory are linear in ``text``.

    How: keep whole lines from the head and the tail, ``max_lines - 1`` of
    them (the head gets the odd one); then, if they are over the bytes left
    after the marker, shorten the head from its end and the tail from its
    start, never splitting a character. Shortening a piece can only remove
    lines from it, except cutting the one piece in two, which is done only
    when a line is left for the second half.
    """
    size = _nbytes(text)
    lines = text.splitlines(keepends=True)
    if size <= max_bytes and len(lines) <= max_lines:
        return None
    keep = max(max_lines - 1, 0)  # the marker is a line of its own
    head_n = keep - keep // 2
    head = "".join(lines[:head_n])
    tail = "".join(lines[max(len(lines) - keep // 2, head_n):])
    kept_n = min(len(lines), keep)  # whole lines kept, before the byte cut
    marker = _marker(size, len(lines))  # the widest its numbers can get
    room = max(max_bytes - _nbytes(marker) - 1, 0)  # 1: a newline ending the head's last line
    head_b, tail_b = _nbytes(head), _nbytes(tail)
    if head_b + tail_b > room:
        if not tail and kept_n < keep:  # one piece, and a line to spare: show both of its ends
            head, tail = _head_bytes(head, room - room // 2), _tail_bytes(head, room // 2)
        else:
            tail_keep = min(tail_b, max(room // 2, room - head_b))
            head, tail = _head_bytes(head, room - tail_keep), _tail_bytes(tail, tail_keep)
    shown = len(head.splitlines()) + len(tail.splitlines())
    sep = "\n" if head and head[-1] not in _LINE_ENDS else ""
    return f"{head}{sep}{_marker(size - _nbytes(head) - _nbytes(tail), max(len(lines) - shown, 0))}{tail}"


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


class ToolOutputBudgetExtension(Extension):
    """Caps tool results on their way to the model, keeping head and tail; the core session keeps all."""

    name = "tool_output_budget"
    version = "0.1.0"
    priority = 95  # after the tools extensions (50) have built the native tool results
    config_schema = {
        "tool_output_max_bytes": {
            "type": "integer", "minimum": _FLOORS["tool_output_max_bytes"], "default": DEFAULT_MAX_BYTES,
            "description": "largest tool result, in UTF-8 bytes, sent to the model (head and tail kept)",
        },
        "tool_output_max_lines": {
            "type": "integer", "minimum": _FLOORS["tool_output_max_lines"], "default": DEFAULT_MAX_LINES,
            "description": "most lines of a tool result sent to the model, the marker line included "
                           "(first and last halves kept)",
        },
    }
    actions = ({"id": "tool_output_budget_record", "label": "Note a tool result's original size",
                "trigger": "tool_post"},)

    def init(self, config: Dict, state: Dict) -> Dict:
        check_limits(config)
        return state

    def to_native_messages(self, messages: Msgs, native_messages: Msgs, state: Dict | None = None, *,
                           context: Dict | None = None) -> Msgs:
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
