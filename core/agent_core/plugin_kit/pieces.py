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

:func:`pushed` is the usual chunk's whole state change (one key's chain grows by
one piece), made the way the engine keeps state: a state handed in frozen comes
back frozen, so the engine has nothing to walk. A hook that uses it need not know
that rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..values.frozen import FrozenDict, FrozenList

__all__ = ["Pieces", "push", "pushed", "text_of"]

#: ``None`` or ``(earlier: Pieces, piece: str)``.
Pieces = Any


def push(pieces: Pieces, piece: str) -> Pieces:
    """The chain ``pieces`` followed by ``piece`` (O(1); empty pieces are skipped)."""
    return (pieces, piece) if piece else pieces


_frozen_dict, _frozen_link = FrozenDict.from_frozen, FrozenList.from_frozen


def pushed(state: Mapping[str, Any], key: str, piece: str) -> Mapping[str, Any]:
    """``state`` with ``piece`` pushed onto the chain at ``key`` (``state`` itself for an empty piece).

    When ``state`` is the frozen state the engine handed the hook, the answer is frozen as
    well, built from parts that are frozen already (the other values, the chain so far, a
    string); the engine then keeps it as it is instead of walking it for something to
    freeze. Any other mapping gives a plain dict, which the engine freezes as usual.
    """
    if not piece:
        return state
    if state.__class__ is FrozenDict:
        return _frozen_dict({**state, key: _frozen_link((state.get(key), piece))})
    return {**state, key: (state.get(key), piece)}


def text_of(pieces: Pieces) -> str:
    """All pieces of the chain joined in the order they were pushed."""
    parts: list[str] = []
    while pieces:
        pieces, piece = pieces
        parts.append(piece)
    parts.reverse()
    return "".join(parts)
