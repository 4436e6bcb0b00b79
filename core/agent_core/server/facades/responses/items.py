"""Reasoning items, in and out of the Responses facade, kept as the upstream made them.

A reasoning model behind the Responses API keeps its reasoning between turns only if the
client hands each ``reasoning`` item back in the next ``input`` (with ``store: false``, its
``encrypted_content``). So an item the client sends is checked for the API's shape and
carried, unchanged, on the assistant message it belongs to (``metadata["reasoning_items"]``,
the key the ``openai_responses`` provider sends back first in that message's turn); a
provider that reads no such key simply never sees it.

Going out, the reply's own reasoning items (the same key, filled by ``openai_responses``)
become the output's ``reasoning`` items with their ids and summaries; ``encrypted_content``
only when the client's ``include`` asked for ``reasoning.encrypted_content``, as the API
does. A provider that gives reasoning only as text (an Anthropic model's thinking, an
open-weight model's raw reasoning) gets one ``reasoning`` item with that text as a
``reasoning_text`` part.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ....types import Message
from ...http.errors import ApiError

__all__ = ["ENCRYPTED", "image_parts", "kept_reasoning", "reasoning_input", "reasoning_item", "reasoning_output",
           "shown"]

ENCRYPTED = "reasoning.encrypted_content"
_DETAILS = ("low", "high", "auto")
#: the keys of a reasoning item the API takes back as input
_KEYS = frozenset({"type", "id", "summary", "content", "encrypted_content", "status"})
_PART_TYPES = {"summary": "summary_text", "content": "reasoning_text"}


def _bad(message: str, param: str) -> ApiError:
    return ApiError(400, "invalid_request_error", message, param=param)


def _parts(item: Mapping[str, Any], key: str, where: str) -> None:
    parts = item.get(key)
    if parts is None and key == "content":
        return
    if not isinstance(parts, list):
        raise _bad(f"{where}.{key}: expected a list of {_PART_TYPES[key]} parts", f"{where}.{key}")
    for j, part in enumerate(parts):
        if not isinstance(part, Mapping) or part.get("type") != _PART_TYPES[key] or \
                not isinstance(part.get("text"), str):
            raise _bad(f"{where}.{key}[{j}]: expected a {_PART_TYPES[key]} part with its text", f"{where}.{key}[{j}]")


def reasoning_input(item: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A reasoning input item, checked as the API checks it, and returned as sent.

    Raises:
        ApiError: 400 naming the key of the item the API would refuse.
    """
    extra = sorted(set(item) - _KEYS)
    if extra:
        raise _bad(f"{where}.{extra[0]}: unknown parameter of a reasoning item", f"{where}.{extra[0]}")
    if not isinstance(item.get("id"), str):
        raise _bad(f"{where}.id: a reasoning item needs the id the API gave it", f"{where}.id")
    _parts(item, "summary", where)
    _parts(item, "content", where)
    encrypted = item.get("encrypted_content")
    if encrypted is not None and not isinstance(encrypted, str):
        raise _bad(f"{where}.encrypted_content: expected a string", f"{where}.encrypted_content")
    return dict(item)


def kept_reasoning(reply: Message | None) -> list[Mapping[str, Any]]:
    """The reply's reasoning items as its provider received them (none: the provider gave text only)."""
    items = reply.metadata.get("reasoning_items") if reply is not None else None
    if not isinstance(items, Sequence) or isinstance(items, str):
        return []
    return [i for i in items if isinstance(i, Mapping) and i.get("type") == "reasoning"]


def shown(item: Mapping[str, Any], include: Sequence[str]) -> dict[str, Any]:
    """An upstream item as the client gets it: without our ``_`` keys, encrypted content only when asked."""
    out = {k: v for k, v in item.items() if k[:1] != "_"}
    if ENCRYPTED not in include:
        out.pop("encrypted_content", None)
    out.setdefault("summary", [])
    return out


def reasoning_item(item_id: str, text: str, status: str = "completed") -> dict[str, Any]:
    """Reasoning given as text only, as a ``reasoning`` item (the text in ``content``; no summary is made)."""
    content = [{"type": "reasoning_text", "text": text}] if status == "completed" else []
    return {"type": "reasoning", "id": item_id, "summary": [], "content": content, "status": status}


def reasoning_output(request_id: str, reply: Message | None, include: Sequence[str]) -> list[dict[str, Any]]:
    """The reply's reasoning as output items: the upstream's own, else one item of its text."""
    kept = kept_reasoning(reply)
    if kept:
        return [shown(item, include) for item in kept]
    reasoning = reply.metadata.get("reasoning") if reply is not None else None
    if isinstance(reasoning, str) and reasoning:
        return [reasoning_item(f"rs_{request_id}", reasoning)]
    return []


def image_parts(content: Any, where: str) -> tuple[Any, list[dict[str, Any]]]:
    """A user message's ``input_image`` parts as core ``multipartContent`` images, and the content without them.

    Each image keeps its ``image_url`` (a URL or a ``data:`` URL) and ``detail``, which every
    provider here sends on (``openai_responses`` as an ``input_image`` part again, after the
    message's text). An image by ``file_id`` needs OpenAI's file storage: a 400 naming it.
    """
    if not isinstance(content, list) or not any(isinstance(p, Mapping) and p.get("type") == "input_image"
                                                for p in content):
        return content, []
    rest, images = [], []
    for j, part in enumerate(content):
        if not isinstance(part, Mapping) or part.get("type") != "input_image":
            rest.append(part)
            continue
        url, detail = part.get("image_url"), part.get("detail")
        if not isinstance(url, str) or not url:
            raise _bad(f"{where}[{j}].image_url: an image is sent by its URL or a data: URL here (file_id needs "
                       "OpenAI's file storage, which this server does not have)", f"{where}[{j}].image_url")
        if detail is not None and detail not in _DETAILS:
            raise _bad(f"{where}[{j}].detail: expected low, high or auto, got {detail!r}", f"{where}[{j}].detail")
        images.append({"type": "image", "content": {"url": url}, "metadata": {"detail": detail or "auto"}})
    return rest, images
