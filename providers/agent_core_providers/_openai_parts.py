"""A core message's ``multipartContent`` as an OpenAI API's content parts.

Chat Completions and the Responses API take the same items (text, and images by URL with an
optional ``detail``) in parts of different shapes; the items are read here, once, and each
API's own part makers write the parts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["multipart_parts"]

Dict = dict[str, Any]


def multipart_parts(items: Iterable[Any], text: Callable[[str], Dict], image: Callable[[str, Any], Dict]) -> list[Dict]:
    """Core ``multipartContent`` items as an OpenAI API's content parts, read the same way for both APIs.

    A text item becomes ``text(its text)``, an image with a URL ``image(url, detail)`` (``detail``
    from its metadata, or None); other items have no part in either API and are left out.
    """
    parts: list[Dict] = []
    for item in items:
        if not isinstance(item, Mapping):
            continue
        kind, value = item.get("type"), item.get("content")
        if kind == "text":
            parts.append(text(value if isinstance(value, str) else str(value)))
        elif kind == "image":
            url = value.get("url") if isinstance(value, Mapping) else value
            if isinstance(url, str) and url:
                parts.append(image(url, (item.get("metadata") or {}).get("detail")))
    return parts
