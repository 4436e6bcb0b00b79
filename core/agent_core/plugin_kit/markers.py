"""Finding markers in streamed text that arrives cut at arbitrary points.

Theory of operation
-------------------
A model streams text in chunks cut wherever the tokenizer or the network
chose, so a marker such as ``<think>`` can arrive as ``"<th"`` + ``"ink>"``.
An extension that looks for markers chunk by chunk either misses such a
marker or shows half of it to the application. :class:`MarkerScanner` is the
one correct way to do it: it releases every character that can no longer be
the start of a marker, and holds back only the shortest end of the text that
could still grow into one (``"<th"`` is held, ``"<x"`` is not). At the end of
the stream :meth:`MarkerScanner.flush` releases what is still held.

The scanner itself is immutable and keeps nothing between calls: the held
text is a plain ``str`` the caller keeps (in the request state, say) and
passes back with the next chunk. So one scanner can be shared by every
request, and a state that holds only strings stays cheap to freeze.

Whatever the cuts, the pieces that come out are the same as when the whole
text is scanned at once (``tests/extensions/test_streaming.py`` checks that
over every split with hypothesis).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["Hit", "MarkerScanner"]


class Hit(str):
    """A marker found in the stream (a ``str`` equal to the marker's text).

    The pieces a scan returns are plain ``str`` text and ``Hit`` markers; test
    ``isinstance(piece, Hit)`` to tell them apart.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Hit({str.__repr__(self)})"


class MarkerScanner:
    """Splits streamed text into plain text and markers, whatever the chunk boundaries.

    ``scan(chunk, held)`` returns ``(pieces, held)``: ``pieces`` is a list of
    ``str`` text and :class:`Hit` markers in stream order; ``held`` is the end
    of the text kept back because it might still become a marker. Pass it to
    the next ``scan`` and, when the stream ends, to ``flush``.

    Where markers overlap, the one that starts first wins, and of those the
    longest (so ``</think>`` beats a marker ``</``).
    """

    __slots__ = ("_firsts", "_longest", "_pattern", "_prefixes", "markers")

    def __init__(self, markers: Iterable[str]) -> None:
        found = tuple(dict.fromkeys(markers))
        if not found or not all(isinstance(m, str) and m for m in found):
            raise ValueError(f"MarkerScanner needs one or more non-empty marker strings, got {found!r}")
        self.markers: tuple[str, ...] = tuple(sorted(found, key=len, reverse=True))
        #: first characters of the markers: text without any of them passes straight through
        self._firsts = frozenset(m[0] for m in found)
        #: every proper prefix of a marker (what may be held back)
        self._prefixes = frozenset(m[:i] for m in found for i in range(1, len(m)))
        self._longest = max(len(m) for m in found)
        self._pattern = re.compile("|".join(re.escape(m) for m in self.markers))

    def __repr__(self) -> str:
        return f"MarkerScanner({list(self.markers)!r})"

    def scan(self, chunk: str, held: str = "") -> tuple[list[str], str]:
        """Scan one chunk; returns ``(pieces, held)`` (see the class docstring)."""
        text = held + chunk if held else chunk
        # Fast path: most chunks contain no character a marker starts with.
        for c in self._firsts:
            if c in text:
                return self._scan(text, final=False)
        return ([text] if text else []), ""

    def flush(self, held: str) -> list[str]:
        """The stream ended: markers still in the held text count, the rest is plain text."""
        return self._scan(held, final=True)[0] if held else []

    def split(self, text: str) -> list[str]:
        """Scan a whole text at once (a final message): ``scan`` then ``flush``."""
        pieces, held = self.scan(text)
        return pieces + self.flush(held) if held else pieces

    def _scan(self, text: str, final: bool) -> tuple[list[str], str]:
        # Complete markers: one compiled alternation, longest first, so at each
        # position the longest marker wins and the search runs in C.
        matches = list(self._pattern.finditer(text))
        n = len(text)
        hold = n
        if not final:
            # Hold back from the first position near the end (not inside a marker
            # already found) where the rest could still grow into a marker; that
            # includes a short marker that a longer one may extend.
            prefixes = self._prefixes
            firsts = self._firsts
            for p in range(max(0, n - self._longest + 1), n):
                if text[p] in firsts and text[p:] in prefixes and not any(m.start() < p < m.end() for m in matches):
                    hold = p
                    break
        pieces: list[str] = []
        at = 0
        for m in matches:
            a = m.start()
            if a >= hold:
                break
            if a > at:
                pieces.append(text[at:a])
            pieces.append(Hit(m.group()))
            at = m.end()
        if hold > at:
            pieces.append(text[at:hold])
        return pieces, text[hold:]
