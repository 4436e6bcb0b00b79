"""Text assembled from streamed pieces, at constant cost per piece.

Hooks on the hot path return a new state for every chunk, and the engine
keeps the old one alive until the hook returns. Growing a string with
``buf + delta`` therefore copies everything received so far on each chunk:
quadratic in the length of the answer. A *piece chain* instead stores each
delta once, as a pair ``(earlier_pieces, delta)`` that points at the chain
before it, so pushing costs O(1) whatever the length, and the text is joined
once when the block or message is complete.

The chain is made of 2-tuples (or the ``FrozenList`` the engine freezes them
into), so it lives happily inside frozen state. ``None`` is the empty chain.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["Pieces", "push", "replace_final", "text_of"]

#: ``None`` or ``(earlier: Pieces, piece: str)``.
Pieces = Any


def push(pieces: Pieces, piece: str) -> Pieces:
    """The chain ``pieces`` followed by ``piece`` (O(1); empty pieces are skipped)."""
    return (pieces, piece) if piece else pieces


def text_of(pieces: Pieces) -> str:
    """All pieces of the chain joined in the order they were pushed."""
    parts: list[str] = []
    while pieces:
        pieces, piece = pieces
        parts.append(piece)
    parts.reverse()
    return "".join(parts)


def replace_final(native_messages: list[Any], old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Any]:
    """``native_messages`` with the final ``old`` (searched from the end) replaced by ``new``.

    Extensions that complete the assistant answer in the closing
    ``process_chunk(None, ...)`` call rewrite both the final and its copy at
    the end of the native history, which the provider's ``finalize`` added.
    """
    for i in range(len(native_messages) - 1, -1, -1):
        if native_messages[i] == old:
            return [*native_messages[:i], new, *native_messages[i + 1 :]]
    return native_messages  # not in the history: nothing to keep in step
