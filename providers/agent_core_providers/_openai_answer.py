"""What a Chat Completions answer says beside its message: usage, and notes about itself.

``system_fingerprint`` (the backend configuration that answered) and ``service_tier``
(the tier that served it) are top-level fields of the answer, or of every streamed
chunk. They are kept on the native message as ``_`` keys, and reach the core
message's metadata, so a gateway can hand them to its client as the API gave them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["NOTES", "answer_notes", "normalize_usage", "noted"]

#: the top-level answer fields kept
NOTES = ("system_fingerprint", "service_tier")


def answer_notes(body: Mapping[str, Any]) -> dict[str, Any]:
    """The :data:`NOTES` an answer (or a chunk) sets."""
    return {key: body[key] for key in NOTES if body.get(key)}


def noted(native: Mapping[str, Any]) -> dict[str, Any]:
    """The :data:`NOTES` kept on a native message (``_system_fingerprint``...), under their own names."""
    return {key: native[f"_{key}"] for key in NOTES if native.get(f"_{key}")}


def normalize_usage(usage: Mapping[str, Any]) -> Dict:
    """Chat Completions usage as ``{"input_tokens", "output_tokens", ...}``.

    Cached prompt tokens become ``cache_read_tokens`` and reasoning tokens
    ``reasoning_tokens``; every other key the server sent is kept as it is.
    """
    out: Dict = {
        "input_tokens": int(usage.get("prompt_tokens") or 0),
        "output_tokens": int(usage.get("completion_tokens") or 0),
    }
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
    if cached:
        out["cache_read_tokens"] = cached
    reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens")
    if reasoning:
        out["reasoning_tokens"] = reasoning
    for key, value in usage.items():
        if key not in ("prompt_tokens", "completion_tokens") and key not in out:
            out[key] = value
    return out
