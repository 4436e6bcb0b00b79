"""How ``search_text`` searches: RE2 or plain text, over blocks of lines, within a budget.

Theory of operation. The pattern and the path come from the model; the tree
may be hostile too. Four bounds hold whatever they are:

* Matching time. Regular expressions run on RE2 (the optional ``files``
  extra, ``google-re2``), whose time is linear in the text: ``(a+)+$``, which
  takes Python's ``re`` hours on a line of thirty ``a`` and a ``!`` while
  holding the interpreter (no timeout can stop it), costs RE2 microseconds.
  What RE2 cannot run in linear time (backreferences, lookaround) it refuses,
  and the model reads why. RE2's fallback matcher still costs time per byte
  *and* per program instruction, so a pattern over :data:`MAX_PROGRAM_SIZE`
  instructions is refused and a big one gets smaller blocks: one call of the
  matcher stays short whatever the pattern. Without RE2, a pattern with no special
  character (or any, with ``literal: true``) is searched as plain text, and a
  regular expression is refused with a message naming the extra.
* Memory. A file is read in blocks of whole lines (:data:`SEARCH_BLOCK_BYTES`,
  less for big patterns) and each block is searched at once (~500 times faster
  than line by line; ``(?m)`` makes ``^``/``$`` match at each line and
  ``never_nl`` keeps a match inside one line). A longer line may be searched in
  its first part only; the rest is read past, not kept.
* Bytes and seconds. A :class:`Budget` (``files_search_max_bytes``,
  ``files_search_seconds``, and the request's cancellation) is checked per
  block and per directory; the result says when it ran out.
* The walk. A list of directories, not a call stack, of plain strings, not
  ``Path`` objects (whose parsing costs the path's length at each step), at
  most :data:`SEARCH_MAX_DEPTH` levels down. Hidden directories, binary files
  (from their first NUL byte) and special files are skipped, and counted.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from agent_core_plugins.file_access import (
    PathRefused,
    Refused,
    dir_entries,
    inside,
    open_regular,
    printable,
    quoted,
)

try:
    import re2
except ImportError:  # the `files` extra is not installed: plain-text search only
    re2 = None

__all__ = ["MAX_PATTERN_CHARS", "MAX_PROGRAM_SIZE", "SEARCH_BLOCK_BYTES", "SEARCH_MAX_DEPTH", "Budget",
           "has_regex", "search"]

#: a search pattern longer than this is refused
MAX_PATTERN_CHARS = 1000
#: bytes search_text reads and searches at once; a line longer than this may be searched in its first part only
SEARCH_BLOCK_BYTES = 256 * 2**10
#: directories search_text descends below its path at most
SEARCH_MAX_DEPTH = 64
#: RE2 instructions a pattern may compile to (RE2's fallback matcher costs time per byte and instruction)
MAX_PROGRAM_SIZE = 2000
# Bytes x instructions in one block. RE2's cost per unit is highest on patterns that thrash its DFA
# cache; this bounds one block's work even then (a block holds up to twice its size).
_BLOCK_WORK = 2**21
_MIN_BLOCK_BYTES = 1024
_SHOWN_CHARS = 200  # of a matching line, around the match
_SPECIAL = frozenset(".^$*+?{}[]\\|()")


class Budget:
    """What one search_text call may still spend; ``spent`` says which limit ran out."""

    __slots__ = ("max_bytes", "seconds", "bytes_left", "deadline", "cancellation", "spent")

    def __init__(self, max_bytes: int, seconds: float, cancellation: Any) -> None:
        self.max_bytes, self.seconds, self.cancellation = max_bytes, seconds, cancellation
        self.bytes_left, self.deadline = max_bytes, time.monotonic() + seconds
        self.spent: str | None = None

    def take(self, size: int) -> bool:
        self.bytes_left -= size
        if self.bytes_left < 0:
            self.spent = "files_search_max_bytes"
        elif time.monotonic() > self.deadline:
            self.spent = "files_search_seconds"
        elif self.cancellation is not None and self.cancellation.cancelled:
            self.spent = "the request was cancelled"
        return self.spent is None

    def why(self) -> str:
        if self.spent == "files_search_max_bytes":
            return f"it read its {self.spent} ({self.max_bytes} bytes)"
        if self.spent == "files_search_seconds":
            return f"it ran its {self.spent} ({self.seconds:g} s)"
        return str(self.spent)


class _Search(NamedTuple):
    """How to search for one pattern."""

    where: Callable[[bytes, int], int]  # (block, pos) -> where the first match at or after pos starts, or -1
    block: int  # bytes read and searched at once, so that one call of ``where`` stays short
    compiled: Any  # the RE2 object, or None for plain text


def _matcher(pattern: str, literal: bool) -> _Search:
    """How to search for ``pattern`` (plain text, or RE2 when it has special characters).

    A block is searched at once, not line by line (RE2 is ~500 times faster so); ``(?m)`` makes
    ``^``/``$`` match at each line and ``never_nl`` keeps a match inside one line. RE2's fallback
    matcher costs time per byte and per program instruction, so a bigger program gets smaller blocks.
    """
    if literal or not _SPECIAL.intersection(pattern):
        needle = pattern.encode("utf-8")
        return _Search(lambda block, pos: block.find(needle, pos), SEARCH_BLOCK_BYTES, None)
    if re2 is None:
        raise Refused(
            f"pattern {quoted(pattern)} is a regular expression, but the RE2 engine that runs them in "
            "bounded time is not installed (pip install 'agent-core[files]'); pass literal: true "
            "to search for the text as written")
    options = re2.Options()
    options.log_errors = False  # RE2 would print each bad pattern to stderr
    options.never_nl = True
    options.never_capture = True  # only where a match starts is wanted
    try:
        compiled = re2.compile("(?m)" + pattern, options)
    except re2.error as exc:
        why = exc.args[0] if exc.args else exc
        why = why.decode("utf-8", "replace") if isinstance(why, bytes) else str(why)
        raise Refused(f"bad regular expression {quoted(pattern)} (RE2 syntax: no backreferences "
                      f"or lookaround): {why}") from None
    if compiled.programsize > MAX_PROGRAM_SIZE:
        raise Refused(f"regular expression {quoted(pattern)} is too big to search in bounded time "
                      f"({compiled.programsize} RE2 instructions, at most {MAX_PROGRAM_SIZE}); "
                      "use fewer or smaller counted repeats such as {0,50}")

    def where(block: bytes, pos: int) -> int:
        found = compiled.search(block, pos)
        return -1 if found is None else found.start()

    size = max(_MIN_BLOCK_BYTES, min(SEARCH_BLOCK_BYTES, _BLOCK_WORK // compiled.programsize))
    return _Search(where, size, compiled)


def _blocks(fh: BinaryIO, size: int, budget: Budget, skipped: Counter[str]) -> Iterator[bytes]:
    """The file in blocks of whole lines, each ending with a newline (CRLF read as LF).

    A line longer than ``size`` may be cut to its first ``size`` bytes (the
    rest is read past, not kept). Stops at the first NUL byte (a binary file:
    the lines before it are searched) and when the budget runs out.
    """
    pending, skipping, binary = b"", False, False
    while not binary and (chunk := fh.read(size)):
        if not budget.take(len(chunk)):
            return
        if (nul := chunk.find(b"\x00")) >= 0:
            skipped["binary files (from their first NUL byte)"] += 1
            chunk, binary = chunk[:nul], True
        if skipping:
            newline = chunk.find(b"\n")
            if newline < 0:
                continue
            chunk, skipping = chunk[newline + 1:], False
        data = pending + chunk
        end = data.rfind(b"\n") + 1
        pending = data[end:]
        if len(pending) >= size:  # a line longer than a block: its head stands for it
            data, pending, skipping = data[:end] + pending[:size] + b"\n", b"", True
        else:
            data = data[:end]
        if data:
            yield data.replace(b"\r\n", b"\n")
    if pending and not binary:
        yield pending + b"\n"


def _rel(root: Path, path: Path) -> str:
    return printable(path.relative_to(root).as_posix())


def _walk(root: Path, start: Path, budget: Budget, skipped: Counter[str]) -> Iterator[tuple[str, str | Path]]:
    """The files under ``start`` as (path shown, real path), depth first in name order.

    Hidden directories are skipped, and those more than :data:`SEARCH_MAX_DEPTH`
    levels below ``start``; links are followed only to files inside ``root``
    (links out, loops and links to directories are left alone). The walk keeps
    a list, not a call stack, and plain strings, not ``Path`` objects (whose
    parsing costs the path's length at each step).
    """
    cut = len(str(root).rstrip("/")) + 1
    folders = [(str(start), 0)]
    while folders and budget.take(0):
        folder, depth = folders.pop()
        try:
            entries, more = dir_entries(folder)
        except OSError:
            skipped["unreadable directories"] += 1
            continue
        if more:
            skipped[f"directories cut at {len(entries)} entries"] += 1
        inner = []
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name.startswith("."):
                        continue
                    if depth < SEARCH_MAX_DEPTH:
                        inner.append((entry.path, depth + 1))
                    else:
                        skipped[f"directories over {SEARCH_MAX_DEPTH} levels deep"] += 1
                    continue
                real: str | Path | None = entry.path
                if entry.is_symlink():
                    real = inside(root, Path(entry.path))
                    if real is None or real.is_dir():
                        continue
                yield printable(entry.path[cut:]), real
            except OSError:
                skipped["unreadable files"] += 1
        folders.extend(reversed(inner))


def _around(text: str, at: int) -> str:
    if len(text) <= _SHOWN_CHARS:
        return text
    lo = max(0, min(at - 40, len(text) - _SHOWN_CHARS))
    return ("..." if lo else "") + text[lo:lo + _SHOWN_CHARS] + ("..." if lo + _SHOWN_CHARS < len(text) else "")


def _search_file(real: str | Path, shown: str, how: _Search, hits: list[str], limit: int, budget: Budget,
                 skipped: Counter[str]) -> None:
    """Add ``real``'s matching lines to ``hits``, one per line, as ``path:line: text``."""
    where = how.where
    with open_regular(real, shown) as fh:
        number = 1  # of the block's first line
        for block in _blocks(fh, how.block, budget, skipped):
            pos = counted = 0
            while len(hits) < limit and 0 <= (at := where(block, pos)) < len(block):
                start = block.rfind(b"\n", 0, at) + 1
                end = block.index(b"\n", at)
                number += block.count(b"\n", counted, start)
                counted = start
                line = block[start:end].decode("utf-8", "replace").rstrip()
                column = len(block[start:at].decode("utf-8", "replace"))
                hits.append(f"{shown}:{number}: {_around(line, column)}")
                pos = end + 1
            if len(hits) >= limit:
                return
            number += block.count(b"\n", counted)


def _pattern_args(pattern: Any, literal: Any) -> tuple[str, bool]:
    if not isinstance(pattern, str) or not pattern:
        raise Refused("pattern must be a non-empty string")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise Refused(f"pattern is {len(pattern)} characters long; at most {MAX_PATTERN_CHARS} are allowed")
    if "\n" in pattern or "\r" in pattern:
        raise Refused("pattern holds a line break; search_text matches within one line")
    try:
        pattern.encode("utf-8")
    except UnicodeEncodeError:
        raise Refused(f"pattern {quoted(pattern)} is not valid Unicode (it holds a lone surrogate)") from None
    if not isinstance(literal, bool):
        raise Refused("literal must be true or false")
    return pattern, literal


def _search_tree(root: Path, start: Path, how: _Search, limit: int, budget: Budget) -> str:
    """The matches under ``start`` (a directory or one file), then notes on what stopped or was skipped."""
    hits: list[str] = []
    skipped: Counter[str] = Counter()
    if not start.is_dir():  # one file: a refusal of it is the answer
        _search_file(start, _rel(root, start), how, hits, limit, budget, skipped)
    for shown, real in _walk(root, start, budget, skipped) if start.is_dir() else ():
        try:
            _search_file(real, shown, how, hits, limit, budget, skipped)
        except PathRefused:
            skipped["special files (FIFOs, sockets, devices)"] += 1
        except OSError:
            skipped["unreadable files"] += 1
        if len(hits) >= limit or budget.spent:
            break
    notes = hits or ["no matches"]
    if len(hits) >= limit:
        notes.append(f"[stopped at {limit} matches]")
    elif budget.spent:
        notes.append(f"[search stopped early: {budget.why()}; results may be incomplete, search a narrower path]")
    if skipped:
        notes.append("[skipped: " + ", ".join(f"{what}: {n}" for what, n in sorted(skipped.items())) + "]")
    return "\n".join(notes)


def has_regex() -> bool:
    """Whether regular expressions can be searched here (RE2 is installed)."""
    return re2 is not None


def search(root: Path, start: Path, pattern: Any, literal: Any, limit: int, budget: Budget) -> str:
    """The lines under ``start`` (a directory or one file, inside ``root``) matching ``pattern``.

    Returns ``path:line: text`` per match (at most ``limit``), then notes on
    what stopped the search or was skipped.

    Raises:
        Refused: a pattern that is not a non-empty string of at most
            :data:`MAX_PATTERN_CHARS`, holds a line break or a lone surrogate,
            is a bad or too big regular expression, or needs RE2 where it is
            missing; ``literal`` not a boolean.
        PathRefused: ``start`` is a file that cannot be searched (a FIFO, ...).
        OSError: ``start`` cannot be read.
    """
    found = _matcher(*_pattern_args(pattern, literal))
    try:
        return _search_tree(root, start, found, limit, budget)
    finally:
        if found.compiled is not None:
            re2.purge()  # re2 caches 128 patterns with their DFA memory (8 MiB each): keep none of ours
