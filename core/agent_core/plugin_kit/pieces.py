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

from typing import Any

__all__ = ["Pieces", "push", "text_of"]

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
