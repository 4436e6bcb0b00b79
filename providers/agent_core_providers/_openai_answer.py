"""What a Chat Completions answer says beside its message: usage, and notes about itself.

``system_fingerprint`` (the backend configuration that answered) and ``service_tier``
(the tier that served it) are top-level fields of the answer, or of every streamed
chunk. They are kept on the native message as ``_`` keys, and reach the core
message's metadata, so a gateway can hand them to its client as the API gave them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["NOTES", "answer_notes", "normalize_usage", "openai_usage"]

#: the top-level answer fields kept
NOTES = ("system_fingerprint", "service_tier")


def answer_notes(body: Mapping[str, Any]) -> dict[str, Any]:
    """The :data:`NOTES` an answer (or a chunk) sets."""
    return {key: body[key] for key in NOTES if body.get(key)}


def normalize_usage(usage: Mapping[str, Any]) -> dict[str, Any]:
    """Chat Completions usage as ``{"input_tokens", "output_tokens", ...}`` (see :func:`openai_usage`)."""
    return openai_usage(usage, "prompt_tokens", "completion_tokens")


def openai_usage(usage: Mapping[str, Any], input_key: str, output_key: str) -> dict[str, Any]:
    """Usage in either OpenAI API's shape as ``{"input_tokens", "output_tokens", ...}``.

    The two APIs name their counts differently (``input_key`` and ``output_key``, each with
    its ``<key>_details``) but mean the same: cached input tokens become ``cache_read_tokens``
    and reasoning tokens ``reasoning_tokens``; every other key the API sent is kept as it is.
    """
    out: dict[str, Any] = {
        "input_tokens": int(usage.get(input_key) or 0),
        "output_tokens": int(usage.get(output_key) or 0),
    }
    cached = (usage.get(f"{input_key}_details") or {}).get("cached_tokens")
    if cached:
        out["cache_read_tokens"] = cached
    reasoning = (usage.get(f"{output_key}_details") or {}).get("reasoning_tokens")
    if reasoning:
        out["reasoning_tokens"] = reasoning
    for key, value in usage.items():
        if key not in (input_key, output_key) and key not in out:
            out[key] = value
    return out
