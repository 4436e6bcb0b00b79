"""What an MCP server answered, as a tool result the model reads and the session keeps.

A ``tools/call`` answer is a list of content blocks (text, images, audio,
links to resources, embedded resources), optional structured content, and an
``isError`` flag. The model reads text, so:

* text blocks, joined, are the result (or, with ``isError``, the error the
  model reads); with no text, the structured content as JSON is;
* images, audio and resources cannot go into a text message: they are kept
  in the tool message's metadata (``metadata["mcp"]["attachments"]``) and the
  text says that they are there (type, media type, size);
* structured content is kept whole beside the text, under ``"structured"``.

Everything here came from a server, so sizes are bounded before the session
keeps them (the message itself was bounded while it was read, by
``mcp_max_result_bytes``: :mod:`agent_core_plugins.mcp_transports`): an attachment over :data:`MAX_ATTACHMENT_CHARS` of base64 is
replaced by a note, and so is every one past :data:`MAX_ATTACHMENTS`; text
and structured content over :data:`MAX_TEXT_CHARS` are cut (structured
content left out). What the model is sent of the text is the
``tool_output_budget`` extension's to cut, as for any tool.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types

__all__ = ["MAX_ATTACHMENTS", "MAX_ATTACHMENT_CHARS", "MAX_TEXT_CHARS", "result_of"]

#: base64 characters kept per attachment (about 6 MB of data)
MAX_ATTACHMENT_CHARS = 8 * 1024 * 1024
#: attachments kept per result
MAX_ATTACHMENTS = 16
#: characters of text (and of structured content as JSON) kept per result
MAX_TEXT_CHARS = 4 * 1024 * 1024


def _binary(kind: str, mime: str | None, data: str, extra: dict[str, Any]) -> tuple[dict[str, Any], str]:
    size = len(data) * 3 // 4 - data[-2:].count("=")  # base64 padding is not data
    note = f"[{kind} {mime or 'of unknown type'}, {size} bytes"
    if len(data) > MAX_ATTACHMENT_CHARS:
        return {"type": kind, "mime_type": mime, "omitted": f"{size} bytes is over the limit", **extra}, \
            note + ", too large to keep]"
    return {"type": kind, "mime_type": mime, "data": data, **extra}, note + ", kept in the message metadata]"


def _block(block: Any) -> tuple[str | None, dict[str, Any] | None, str | None]:
    """One content block as (text for the model, attachment to keep, note for the model)."""
    if isinstance(block, mcp_types.TextContent):
        return block.text, None, None
    if isinstance(block, mcp_types.ImageContent):
        return (None, *_binary("image", block.mime_type, block.data, {}))
    if isinstance(block, mcp_types.AudioContent):
        return (None, *_binary("audio", block.mime_type, block.data, {}))
    if isinstance(block, mcp_types.ResourceLink):
        return None, {"type": "resource_link", "uri": str(block.uri), "name": block.name,
                      "mime_type": block.mime_type}, f"[resource {block.uri}]"
    if isinstance(block, mcp_types.EmbeddedResource):
        res = block.resource
        uri = str(res.uri)
        if isinstance(res, mcp_types.TextResourceContents):
            return res.text, {"type": "resource", "uri": uri, "mime_type": res.mime_type}, None
        kept, note = _binary("resource", res.mime_type, res.blob, {"uri": uri})
        return None, kept, note
    return None, None, f"[a {type(block).__name__} block this client does not read]"


def _bounded(text: str) -> str:
    """``text`` cut to :data:`MAX_TEXT_CHARS`, saying so: the session keeps what is kept here."""
    if len(text) <= MAX_TEXT_CHARS:
        return text
    return text[:MAX_TEXT_CHARS] + f"\n[cut: the server sent {len(text)} characters, {MAX_TEXT_CHARS} are kept]"


def result_of(server: str, tool: str, answer: mcp_types.CallToolResult) -> dict[str, Any]:
    """``answer`` as ``{"success", "result" | "error", "structured"?, "metadata"}``.

    ``metadata`` holds ``{"mcp": {"server", "tool", "attachments"?}}``, which
    the engine keeps in the tool message's metadata.
    """
    texts: list[str] = []
    attachments: list[dict[str, Any]] = []
    for block in answer.content:
        text, kept, note = _block(block)
        if text is not None:
            texts.append(text)
        if kept is not None:
            if len(attachments) < MAX_ATTACHMENTS:
                attachments.append(kept)
            else:
                note = f"[{kept.get('type')} left out: more than {MAX_ATTACHMENTS} attachments]"
        if note is not None:
            texts.append(note)
    structured = answer.structured_content
    shown = json.dumps(structured, ensure_ascii=False) if structured is not None else ""
    if not texts and structured is not None:
        texts.append(shown)
    text = _bounded("\n".join(texts))
    if len(shown) > MAX_TEXT_CHARS:
        structured = None
        text += f"\n[structured content of {len(shown)} characters left out: over {MAX_TEXT_CHARS}]"
    meta: dict[str, Any] = {"server": server, "tool": tool}
    if attachments:
        meta["attachments"] = attachments
    out: dict[str, Any] = {"success": not answer.is_error, "metadata": {"mcp": meta}}
    if answer.is_error:
        out["error"] = text or f"the MCP tool {tool!r} reported an error without a message"
    else:
        out["result"] = text
    if structured is not None:
        out["structured"] = structured
    return out
