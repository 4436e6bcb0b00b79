"""Messages API content: blocks, their text, turns merged as the API wants them, usage.

Pure conversions between core messages and Anthropic's content blocks, used
by the provider and by the ``anthropic_*`` extensions (which import them
from :mod:`agent_core_providers.anthropic`, their public home).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ._text import json_text, message_text

__all__ = [
    "CLIENT_BLOCK_TYPES",
    "anthropic_content",
    "citations",
    "content_blocks",
    "image_block",
    "merge_turns",
    "normalize_usage",
    "server_tool_blocks",
    "stop_notes",
    "system_field",
    "system_text",
]

Dict = dict[str, Any]
_DATA_URL = re.compile(r"data:(?P<media>[\w/+.-]+);base64,(?P<data>.*)", re.DOTALL)
#: Block types that are the client's business: text, thinking, and the
#: client-side tool calls the engine runs. Every other block type in an
#: answer (``server_tool_use``, ``web_search_tool_result``, ``mcp_tool_use``,
#: ``*_tool_result``, types not invented yet) was produced and handled on
#: Anthropic's side: it is kept as received and never run here.
CLIENT_BLOCK_TYPES = frozenset({"text", "thinking", "redacted_thinking", "tool_use"})


def content_blocks(content: Any) -> list[Any]:
    """Content as a list of blocks, without empty text blocks (the API rejects them)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if isinstance(content, list):
        return [b for b in content if not (isinstance(b, Mapping) and b.get("type") == "text" and not b.get("text"))]
    if content is None:
        return []
    return [{"type": "text", "text": json_text(content)}]


def server_tool_blocks(content: Any) -> list[Any]:
    """The blocks of ``content`` that the API handled itself (see :data:`CLIENT_BLOCK_TYPES`)."""
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, Mapping) and b.get("type") not in CLIENT_BLOCK_TYPES]


def citations(content: Any) -> list[Any]:
    """The citations of the text blocks in ``content``, in order."""
    if not isinstance(content, list):
        return []
    out: list[Any] = []
    for b in content:
        if isinstance(b, Mapping) and b.get("type") == "text" and b.get("citations"):
            out.extend(b["citations"])
    return out


def image_block(url: str) -> Dict:
    """An image block for ``url``: ``data:`` URLs inline as base64, others by URL."""
    match = _DATA_URL.match(url)
    if match:
        return {"type": "image", "source": {"type": "base64", "media_type": match["media"], "data": match["data"]}}
    return {"type": "image", "source": {"type": "url", "url": url}}


def anthropic_content(message: Mapping[str, Any]) -> Any:
    """A core message's ``content`` (+ ``multipartContent``) as Messages API content.

    Text stays a string; with multipart items it becomes blocks: the text
    first, then text and image blocks (``data:`` URLs inline as base64,
    others by URL). Items of other types are left out.
    """
    content = message.get("content")
    multipart = message.get("multipartContent")
    if not multipart:
        return content if isinstance(content, (str, list)) else message_text(content)
    blocks = content_blocks(content)
    for item in multipart:
        if not isinstance(item, Mapping):
            continue
        value = item.get("content")
        if item.get("type") == "text" and value:
            blocks.append({"type": "text", "text": str(value)})
        elif item.get("type") == "image":
            url = value.get("url") if isinstance(value, Mapping) else value
            if isinstance(url, str) and url:
                blocks.append(image_block(url))
    return blocks


def merge_turns(native_messages: list[Mapping[str, Any]]) -> list[Dict]:
    """Non-system natives as the API wants them: no empty messages, roles alternating.

    Consecutive messages of one role become one message whose content is
    their blocks in order; a lone message keeps its content as it is.
    Only ``role`` and ``content`` are sent.
    """
    out: list[Dict] = []
    for m in native_messages:
        content = m.get("content")
        if not content_blocks(content):
            continue
        role = m.get("role", "user")
        if out and out[-1]["role"] == role:
            out[-1] = {"role": role, "content": content_blocks(out[-1]["content"]) + content_blocks(content)}
        else:
            out.append({"role": role, "content": content if isinstance(content, str) else content_blocks(content)})
    return out


def system_text(native_messages: list[Mapping[str, Any]]) -> Any:
    """The system messages' text, joined by blank lines: the API takes it apart from the turns."""
    texts = [message_text(m.get("content")) for m in native_messages if m.get("role") == "system"]
    return "\n\n".join(t for t in texts if t)


def system_field(native_messages: list[Mapping[str, Any]]) -> Any:
    """The top-level ``system`` field: text joined as :func:`system_text` does, or blocks when any message has blocks.

    A system message whose content is a list of blocks (a ``cache_control`` on one of them) keeps
    them as they are; string ones beside it become text blocks, in order.
    """
    systems = [m.get("content") for m in native_messages if m.get("role") == "system"]
    if not any(isinstance(c, list) for c in systems):
        return system_text(native_messages)
    blocks: list[Any] = []
    for content in systems:
        blocks.extend(content_blocks(content) if isinstance(content, list) else content_blocks(message_text(content)))
    return blocks


def stop_notes(source: Mapping[str, Any]) -> Dict:
    """Why the answer stopped (and the stop sequence that ended it), as our ``_`` keys of a native message."""
    return {f"_{key}": source[key] for key in ("stop_reason", "stop_sequence") if source.get(key)}


def normalize_usage(usage: Mapping[str, Any]) -> Dict:
    """Messages API usage as ``{"input_tokens", "output_tokens", ...}``.

    Cache reads and writes become ``cache_read_tokens`` / ``cache_write_tokens``;
    other keys are kept as they are.
    """
    out: Dict = {
        "input_tokens": int(usage.get("input_tokens") or 0),
        "output_tokens": int(usage.get("output_tokens") or 0),
    }
    renamed = {"cache_read_input_tokens": "cache_read_tokens", "cache_creation_input_tokens": "cache_write_tokens"}
    for key, value in usage.items():
        if key in out:
            continue
        if key in renamed:
            if value:
                out[renamed[key]] = value
        else:
            out[key] = value
    return out
