"""What a value reads as: the text of a message's content, and any JSON value as JSON text.

Chat Completions parts and Messages blocks both carry text as ``{"type": "text",
"text": ...}``, so one reading serves every provider; content with no text of its
own (a number, an object a client sent as content) reads as its JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

__all__ = ["json_text", "message_text"]

_encode = msgspec.json.Encoder().encode


def json_text(value: Any) -> str:
    """``value`` as compact JSON text.

    Raises:
        TypeError, msgspec.EncodeError: ``value`` holds what JSON cannot carry.
    """
    return _encode(value).decode()


def message_text(content: Any) -> str:
    """The text of a content value: a string, its text parts (or blocks) joined, or its JSON ("" for None)."""
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, Mapping) and p.get("type") == "text")
    if isinstance(content, Mapping) and content.get("type") == "provider_native_tool_result":
        return message_text(content.get("content"))
    return json_text(content)
