"""A Chat Completions message's content parts as core content: kept as written, or translated.

When the model that runs is an ``openai`` one (the dialect matches), parts go on as the
client wrote them (an ``image_url`` with its ``detail``, ``input_audio``, a ``file``), in
their order; parts that are all text stay one string, so a plugin that reads text still
sees text. For another provider, text parts are joined and each ``image_url`` becomes the
core ``multipartContent`` image item (a ``data:`` URL becomes an Anthropic base64 image
block); a part with no counterpart there (audio, a file) is a 400 naming it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from .body import ChatPart
from ...http.errors import ApiError

__all__ = ["parts_content"]


def _bad(message: str, param: str) -> ApiError:
    return ApiError(400, "invalid_request_error", message, param=param)


def _checked(part: ChatPart, where: str) -> None:
    """The part carries the field its type names (a text part its text, an image part its URL)."""
    field = {"text": "text", "image_url": "image_url", "input_audio": "input_audio", "file": "file"}.get(part.type)
    if field is None:
        raise _bad(f"{where}: unknown content part type {part.type!r}", f"{where}.type")
    value = getattr(part, field)
    if value is None or (field == "image_url" and not isinstance(value.get("url"), str)):
        raise _bad(f"{where}: a {part.type} part needs its {field}" + (".url" if field == "image_url" else ""),
                   f"{where}.{field}")


def parts_content(parts: Sequence[ChatPart], where: str, native: bool) -> tuple[Any, list[Any] | None]:
    """The content and the ``multipartContent`` items for ``parts`` (``where``: the content's path)."""
    for j, part in enumerate(parts):
        _checked(part, f"{where}[{j}]")
    if all(p.type == "text" for p in parts):
        return "".join(p.text or "" for p in parts), None
    if native:
        return [msgspec.to_builtins(p) for p in parts], None
    texts: list[str] = []
    items: list[Any] = []
    for j, part in enumerate(parts):
        if part.type == "text":
            texts.append(part.text or "")
        elif part.type == "image_url" and part.image_url is not None:
            item: dict[str, Any] = {"type": "image", "content": {"url": part.image_url["url"]}}
            if part.image_url.get("detail"):
                item["metadata"] = {"detail": part.image_url["detail"]}
            items.append(item)
        else:
            raise _bad(f"{where}[{j}]: a {part.type} part has no counterpart for this model's provider",
                       f"{where}[{j}]")
    return "".join(texts), items
