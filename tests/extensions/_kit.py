"""Helpers shared by the bundled extensions' tests."""

from __future__ import annotations

from typing import Any


def partials_of(record: Any) -> list[dict]:
    """Every partial that came out of a harness stream, in order."""
    return [p for call in record.calls for p in call.outputs.get("partial_messages", [])]


def reasoning_of(record: Any) -> str:
    return "".join((p.get("metadata") or {}).get("reasoning", "") for p in partials_of(record))
