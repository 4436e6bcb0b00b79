"""A Messages request's content blocks as core messages: kept as written, or translated.

When the model that runs is an Anthropic one (the dialect matches), a block is sent
on as the client wrote it: its ``cache_control``, a base64 image, a PDF document,
citations. A user turn whose blocks are plain text stays a string, so a plugin that
reads text still sees text; any other becomes a list of the blocks, which the
``anthropic`` provider sends unchanged (a core message's content is any JSON).

For any other provider, each block with a counterpart is mapped: text to text, an
image to the core ``multipartContent`` image item (a ``data:`` URL for a base64 image,
which the ``openai`` provider sends as an ``image_url`` part). ``cache_control`` is a
caching hint with no counterpart that changes no answer, so it is left out; a block with
no counterpart (a document, an image in a tool result) is a 400 naming it.

A ``tool_result`` becomes a ``tool`` message (the engine's shape). To an Anthropic model
its blocks go as written, in the engine's envelope for a provider-native result, and its
``cache_control`` rides in the message's metadata, where ``anthropic_tools`` puts it back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from ....plugin_kit import ANTHROPIC
from ....types import Message
from ...http.errors import ApiError

__all__ = ["as_written", "block_kind", "system_message", "text_content", "tool_message", "user_message"]

#: the content type of a tool result in a provider's own shape (the tool protocol's envelope)
ENVELOPE = "provider_native_tool_result"
#: the keys of a text block that carry nothing but its text
_PLAIN_TEXT = frozenset({"type", "text"})


def _bad(message: str, param: str) -> ApiError:
    return ApiError(400, "invalid_request_error", message, param=param)


def block_kind(block: Any) -> str:
    """The block's wire type (``text``, ``image``...), for messages that name it."""
    return str(type(block).__struct_config__.tag)


def as_written(block: Any) -> dict[str, Any]:
    """A parsed block as the client wrote it (every field it set, none it did not)."""
    return msgspec.to_builtins(block)  # type: ignore[no-any-return]


def _plain(blocks: Sequence[dict[str, Any]]) -> bool:
    return all(b["type"] == "text" and b.keys() <= _PLAIN_TEXT for b in blocks)


def text_content(blocks: Sequence[Any], native: bool) -> Any:
    """Text blocks as content: the blocks as written when one carries more than text and the dialect matches."""
    written = [as_written(b) for b in blocks]
    if native and not _plain(written):
        return written
    return "".join(b["text"] for b in written)


def system_message(blocks: Sequence[Any], native: bool) -> Message:
    """The ``system`` blocks as one system message (:func:`text_content`)."""
    return Message("system", text_content(blocks, native))


def _image_item(block: dict[str, Any], where: str) -> dict[str, Any]:
    source = block["source"]
    if source["type"] == "base64":
        return {"type": "image", "content": {"url": f"data:{source['media_type']};base64,{source['data']}"}}
    if source["type"] == "url":
        return {"type": "image", "content": {"url": source["url"]}}
    raise _bad(f"{where}: an image of source type {source['type']!r} has no counterpart for this model's provider",
               f"{where}.source.type")


def user_message(blocks: Sequence[Any], where: Sequence[str], native: bool) -> Message:
    """A user turn's text, image and document blocks (``where``: each block's path) as one message."""
    written = [as_written(b) for b in blocks]
    if native:
        if _plain(written):
            return Message("user", "".join(b["text"] for b in written))
        return Message("user", written)
    texts: list[str] = []
    items: list[dict[str, Any]] = []
    for block, path in zip(written, where, strict=True):
        if block["type"] == "text":
            texts.append(block["text"])
        elif block["type"] == "image":
            items.append(_image_item(block, path))
        else:
            raise _bad(f"{path}: a {block['type']} block has no counterpart for this model's provider; "
                       "send it to an Anthropic model", path)
    return Message("user", "".join(texts), multipart_content=items or None)


def tool_message(block: Any, where: str, native: bool) -> Message:
    """A ``tool_result`` block as the ``tool`` message answering its call (``where``: the block's path)."""
    meta: dict[str, Any] = {"tool_call_id": block.tool_use_id}
    if block.is_error:
        meta["is_error"] = True
    if native and block.cache_control is not None:
        meta["cache_control"] = block.cache_control
    parts = block.content
    if parts is None or isinstance(parts, str):
        return Message("tool", parts or "", meta)
    written = [as_written(b) for b in parts]
    if native and not _plain(written):
        return Message("tool", {"type": ENVELOPE, "format": ANTHROPIC, "content": written}, meta)
    for j, part in enumerate(written):
        if part["type"] != "text":
            raise _bad(f"{where}.content[{j}]: a {part['type']} block in a tool result has no counterpart for this "
                       "model's provider", f"{where}.content[{j}]")
    return Message("tool", "".join(b["text"] for b in written), meta)
