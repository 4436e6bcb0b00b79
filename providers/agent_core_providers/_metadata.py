"""A core message's metadata from a native answer: what the answer carries, and no key for what it lacks.

A provider keeps what an answer says beside its content on the native message, as
``_`` keys (``_finish_reason``, ``_stop_reason``...), and works out more from the
content itself (tool calls, citations...). Each reaches the metadata only when it
is there, so an empty list or a missing reason never reaches a client as a key.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["noted", "present"]


def noted(native: Mapping[str, Any], keys: Iterable[str]) -> dict[str, Any]:
    """The notes named in ``keys`` that ``native`` keeps (``_finish_reason``...), under their own names."""
    return {key: native[f"_{key}"] for key in keys if native.get(f"_{key}")}


def present(**values: Any) -> dict[str, Any]:
    """The ``values`` that are set: neither ``None`` nor empty."""
    return {key: value for key, value in values.items() if value}
