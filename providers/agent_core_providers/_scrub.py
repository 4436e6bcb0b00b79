"""Keeping secrets out of every text an error carries.

A server may echo the API key back (some proxies do), and a message cut to
length elsewhere may keep half of it, so :func:`scrub` masks every secret and
every piece of one of 8 or more characters, and :func:`bounded` scrubs
*before* it cuts.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["MIN_SECRET_PIECE", "bounded", "scrub"]

_REDACTED = "***"


#: Shortest piece of a secret that :func:`scrub` masks on its own.
MIN_SECRET_PIECE = 8


def scrub(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every secret, and every piece of one of 8+ characters, replaced by ``***``.

    Pieces matter because a message cut to length elsewhere may end (or
    start) in the middle of a key. Secrets shorter than 4 characters are
    left alone (they would mask ordinary words).
    """
    for secret in secrets:
        if not secret or len(secret) < 4:
            continue
        if secret in text:
            text = text.replace(secret, _REDACTED)
        if len(secret) > MIN_SECRET_PIECE:
            text = _scrub_pieces(text, secret)
    return text


def _scrub_pieces(text: str, secret: str) -> str:
    """Mask every run of ``text`` that is a piece of ``secret`` at least MIN_SECRET_PIECE long."""
    start = 0
    while start <= len(secret) - MIN_SECRET_PIECE:
        at = text.find(secret[start : start + MIN_SECRET_PIECE])
        if at < 0:
            start += 1
            continue
        # Earlier starts were not found, so the run begins here; extend it to the right.
        end, j = at + MIN_SECRET_PIECE, start + MIN_SECRET_PIECE
        while end < len(text) and j < len(secret) and text[end] == secret[j]:
            end, j = end + 1, j + 1
        text = text[:at] + _REDACTED + text[end:]
    return text


def bounded(text: str, secrets: Iterable[str | None], limit: int) -> str:
    """``text`` scrubbed, then cut to ``limit`` characters (in that order, so no half key survives)."""
    text = scrub(text, secrets)
    return text if len(text) <= limit else text[:limit] + "..."
