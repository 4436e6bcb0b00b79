"""What extensions put in a message's ``metadata``: reasoning as it streams, extras read from native messages.

Native extras (reasoning, signed thinking blocks, tool calls) never belong in
a core message's ``content``. While streaming, reasoning goes out as a
partial whose ``content`` is empty and whose ``metadata["reasoning"]`` is the
new text, so a UI can show the model thinking live; once the turn is over,
``from_native_messages`` copies the extras of each native message into the
metadata of the core message made from it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["annotate", "reasoning_partial"]


def reasoning_partial(text: str) -> dict[str, Any]:
    """A partial that carries only reasoning: empty ``content``, ``metadata["reasoning"]`` = ``text``."""
    return {"role": "assistant", "content": "", "metadata": {"reasoning": text}}


def annotate(
    native_messages: Sequence[Any],
    messages: Sequence[Any],
    read: Callable[[Any], Mapping[str, Any] | None],
) -> list[Any]:
    """``messages`` with what ``read(native)`` finds merged into each one's ``metadata``.

    For ``from_native_messages``: the core messages are made from the native
    ones one to one, so they pair by position (a length mismatch raises
    ``ValueError``, which the engine reports as the hook's error). ``read``
    returns the metadata keys to set, or ``None`` (or an empty mapping) to
    leave the message as it is.
    """
    out: list[Any] = []
    for native, core in zip(native_messages, messages, strict=True):
        extra = read(native)
        if extra:
            core = {**core, "metadata": {**(core.get("metadata") or {}), **extra}}
        out.append(core)
    return out
