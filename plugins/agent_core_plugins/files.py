"""``files``: tools ``read_file``, ``list_dir`` and ``search_text``, confined to ``files_root``.

Every argument comes from the model, so each is hostile input, and so is the
tree under the root. Paths, opening and reading go through
:mod:`agent_core_plugins.file_access` (the gate ``file_mentions`` shares); this
module adds the tools and the search. A refusal is an error result the model
reads, never an exception out of the plugin.

``search_text`` reads files in blocks of whole lines (:data:`SEARCH_BLOCK_BYTES`;
a longer line may be searched in its first part only) and searches each block
at once. A call reads at most ``files_search_max_bytes`` and runs at most
``files_search_seconds`` (both checked per block and per directory), and stops
at ``files_max_results`` matches. The walk keeps a list of directories, not a
call stack, so a tree thousands deep is no risk; it skips hidden directories,
binary files (from the first block holding a NUL byte) and special files, and
says how many it skipped.

Regular expressions run on RE2 (the optional ``files`` extra, ``google-re2``),
whose matching time is linear in the text: ``(a+)+$``, which takes Python's
``re`` hours on a line of thirty ``a`` and a ``!`` while holding the
interpreter (no timeout can stop it), costs RE2 microseconds; what RE2 cannot
do in linear time (backreferences, lookaround) it refuses, and the model reads
why. RE2's fallback matcher costs time per byte and per program instruction,
so a pattern compiling to more than :data:`MAX_PROGRAM_SIZE` instructions is
refused and a big one is searched in smaller blocks. Without RE2, a pattern
with no special character, or any pattern with ``literal: true``, is searched
as plain text, and other patterns are refused with a message naming the extra.
"""

from __future__ import annotations

import os
import stat
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from agent_core_plugins.file_access import (
    DIR_MAX_ENTRIES,
    PathRefused,
    Refused,
    confine,
    dir_entries,
    file_kind,
    inside,
    open_regular,
    printable,
    quoted,
    read_text,
    root_of,
)

try:
    import re2
except ImportError:  # the `files` extra is not installed: plain-text search only
    re2 = None

__all__ = [
    "LIST_MAX_NAMES", "MAX_PATTERN_CHARS", "MAX_PROGRAM_SIZE", "SEARCH_BLOCK_BYTES", "FilesTool",
    # the gate, re-exported for code written against this module
    "PathRefused", "Refused", "confine", "read_text", "root_of",
]

#: names list_dir returns at most (the first by name)
LIST_MAX_NAMES = 500
#: a search pattern longer than this is refused
MAX_PATTERN_CHARS = 1000
#: bytes search_text reads and searches at once; a line longer than this may be searched in its first part only
SEARCH_BLOCK_BYTES = 256 * 2**10
#: RE2 instructions a pattern may compile to (RE2's fallback matcher costs time per byte and instruction)
MAX_PROGRAM_SIZE = 2000
# Bytes x instructions in one block. RE2 was measured at up to ~35 ns per unit on patterns that
# thrash its DFA cache, so one block costs at most ~150 ms (a block holds up to twice its size).
_BLOCK_WORK = 2**21
_MIN_BLOCK_BYTES = 1024
_SHOWN_CHARS = 200  # of a matching line, around the match
_SPECIAL = frozenset(".^$*+?{}[]\\|()")


class _Budget:
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


def _blocks(fh: BinaryIO, size: int, budget: _Budget, skipped: Counter[str]) -> Iterator[bytes]:
    """The file in blocks of whole lines, each ending with a newline (CRLF read as LF).

    A line longer than ``size`` may be cut to its first ``size`` bytes (the
    rest is read past, not kept). Stops at a block holding a NUL byte (a
    binary file) and when the budget runs out.
    """
    pending, skipping = b"", False
    while chunk := fh.read(size):
        if not budget.take(len(chunk)):
            return
        if b"\x00" in chunk:
            skipped["binary files"] += 1
            return
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
    if pending:
        yield pending + b"\n"


def _rel(root: Path, path: Path) -> str:
    return printable(path.relative_to(root).as_posix())


def _walk(root: Path, start: Path, budget: _Budget, skipped: Counter[str]) -> Iterator[tuple[str, Path]]:
    """The files under ``start`` as (path shown, real path), depth first in name order.

    Hidden directories are skipped and links are followed only to files inside
    ``root`` (links out, loops and links to directories are left alone). The
    walk keeps a list, not a call stack, so a tree thousands deep is no risk.
    """
    folders = [start]
    while folders and budget.take(0):
        try:
            entries, more = dir_entries(folders.pop())
        except OSError:
            skipped["unreadable directories"] += 1
            continue
        if more:
            skipped[f"directories cut at {DIR_MAX_ENTRIES} entries"] += 1
        inner = []
        for entry in entries:
            path = Path(entry.path)
            try:
                if entry.is_dir(follow_symlinks=False):
                    if not entry.name.startswith("."):
                        inner.append(path)
                    continue
                real = inside(root, path) if entry.is_symlink() else path
                if real is not None and not real.is_dir():
                    yield _rel(root, path), real
            except OSError:
                skipped["unreadable files"] += 1
        folders.extend(reversed(inner))


def _around(text: str, at: int) -> str:
    if len(text) <= _SHOWN_CHARS:
        return text
    lo = max(0, min(at - 40, len(text) - _SHOWN_CHARS))
    return ("..." if lo else "") + text[lo:lo + _SHOWN_CHARS] + ("..." if lo + _SHOWN_CHARS < len(text) else "")


def _search_file(real: Path, shown: str, search: _Search, hits: list[str], limit: int, budget: _Budget,
                 skipped: Counter[str]) -> None:
    """Add ``real``'s matching lines to ``hits``, one per line, as ``path:line: text``."""
    where = search.where
    with open_regular(real, shown) as fh:
        number = 1  # of the block's first line
        for block in _blocks(fh, search.block, budget, skipped):
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


def _pattern_args(p: Mapping[str, Any]) -> tuple[str, bool]:
    pattern, literal = p.get("pattern"), p.get("literal", False)
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


def _search_tree(root: Path, start: Path, search: _Search, limit: int, budget: _Budget) -> str:
    """The matches under ``start`` (a directory or one file), then notes on what stopped or was skipped."""
    hits: list[str] = []
    skipped: Counter[str] = Counter()
    if not start.is_dir():  # one file: a refusal of it is the answer
        _search_file(start, _rel(root, start), search, hits, limit, budget, skipped)
    for shown, real in _walk(root, start, budget, skipped) if start.is_dir() else ():
        try:
            _search_file(real, shown, search, hits, limit, budget, skipped)
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
        notes.append("[not searched: " + ", ".join(f"{what}: {n}" for what, n in sorted(skipped.items())) + "]")
    return "\n".join(notes)


def _int_arg(p: Mapping[str, Any], key: str) -> int | None:
    value = p.get(key)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise Refused(f"{key} must be an integer, not {printable(repr(value))[:60]}")
    return value


def _setting(config: Mapping[str, Any], key: str, default: float) -> Any:
    value = config.get(key)
    usable = isinstance(value, int | float) and not isinstance(value, bool) and 0 < value < 2**62
    return value if usable else default


def _schemas(regex: bool) -> list[dict[str, Any]]:
    pattern = ("an RE2 regular expression (Python-like syntax, no backreferences or lookaround)" if regex else
               "text to find (regular expressions are not available here; text with special "
               "characters needs literal: true)")
    return [
        {"type": "function", "function": {
            "name": "read_file",
            "description": "Read a text file under the files root, optionally only lines start_line..end_line.",
            "parameters": {"type": "object", "required": ["path"], "properties": {
                "path": {"type": "string", "description": "relative to the files root"},
                "start_line": {"type": "integer", "description": "first line, from 1"},
                "end_line": {"type": "integer", "description": "last line (inclusive)"},
            }},
        }},
        {"type": "function", "function": {
            "name": "list_dir",
            "description": "List a directory under the files root (directories end with '/').",
            "parameters": {"type": "object", "properties": {
                "path": {"type": "string", "description": "relative to the files root; default '.'"},
            }},
        }},
        {"type": "function", "function": {
            "name": "search_text",
            "description": "Search the text files under a directory; returns path:line: text.",
            "parameters": {"type": "object", "required": ["pattern"], "properties": {
                "pattern": {"type": "string", "description": pattern},
                "literal": {"type": "boolean", "description": "search for the pattern as plain text"},
                "path": {"type": "string", "description": "directory or file to search; default '.'"},
                "max_results": {"type": "integer", "description": "at most this many matches"},
            }},
        }},
    ]


_SCHEMAS = {True: _schemas(True), False: _schemas(False)}


class FilesTool:
    """Reads, lists and searches files under ``files_root``; nothing outside it, nothing written."""

    name = "files"
    version = "1.1.0"
    priority = 100
    default_enabled = False  # opt-in: enabled_plugins=["files"]

    def get_config_schema(self) -> dict[str, Any]:
        return {
            "files_root": {"type": "string", "default": ".",
                           "description": "Directory the file tools and @mentions may read (default: working dir)."},
            "files_max_read_bytes": {"type": "integer", "default": 100_000,
                                     "description": "Bytes read_file returns at most."},
            "files_max_results": {"type": "integer", "default": 100,
                                  "description": "Matches search_text returns at most."},
            "files_search_max_bytes": {"type": "integer", "default": 32 * 2**20,
                                       "description": "Bytes one search_text call reads at most."},
            "files_search_seconds": {"type": "number", "default": 2,
                                     "description": "Seconds one search_text call runs at most."},
        }

    def get_tool_schemas(self, state: Any) -> list[dict[str, Any]]:
        return _SCHEMAS[re2 is not None]

    def format_tool_call_preview(self, tool_name: Any, payload: Any, state: Any) -> str:
        p = payload if isinstance(payload, Mapping) else {}

        def arg(key: str, default: str) -> str:
            return printable(str(p.get(key) or default))[:200]

        if tool_name == "read_file":
            lines = ""
            if p.get("start_line") or p.get("end_line"):
                lines = f" lines {arg('start_line', '1')}-{arg('end_line', 'end')}"
            return f"read {arg('path', '?')}{lines}"
        if tool_name == "list_dir":
            return f"list {arg('path', '.')}"
        if tool_name == "search_text":
            return f"search /{arg('pattern', '')}/ in {arg('path', '.')}"
        return ""

    def execute_tool(self, tool_name: Any, payload: Any, state: Any, *, cancellation: Any = None) -> dict[str, Any]:
        config = state["config"]
        p = payload if isinstance(payload, Mapping) else {}
        try:
            root = root_of(config)
            if not root.is_dir():
                return {"success": False, "error": f"files_root {quoted(str(root))} is not a directory"}
            if tool_name == "read_file":
                return self._read(root, p, int(_setting(config, "files_max_read_bytes", 100_000)))
            if tool_name == "list_dir":
                return self._list(root, p)
            if tool_name == "search_text":
                return self._search(root, p, config, cancellation)
        except Refused as exc:
            return {"success": False, "error": printable(f"{tool_name}: {exc}")}
        except OSError as exc:
            return {"success": False, "error": printable(f"{tool_name}: {exc.strerror or exc}")}
        return {"success": False, "error": f"files has no tool {quoted(str(tool_name))}"}

    @staticmethod
    def _read(root: Path, p: Mapping[str, Any], max_bytes: int) -> dict[str, Any]:
        text, cut = read_text(root, p.get("path"), max_bytes, _int_arg(p, "start_line"), _int_arg(p, "end_line"))
        if cut:
            text += f"\n[cut at {max_bytes} bytes; ask for a line range to read further]"
        return {"success": True, "result": text}

    @staticmethod
    def _list(root: Path, p: Mapping[str, Any]) -> dict[str, Any]:
        shown = p.get("path") or "."
        target = confine(root, shown)
        try:
            mode = os.stat(target).st_mode
        except FileNotFoundError:
            raise PathRefused(f"{quoted(shown)} does not exist") from None
        if not stat.S_ISDIR(mode):
            raise PathRefused(f"{quoted(shown)} is {'a file' if stat.S_ISREG(mode) else file_kind(mode)}, "
                              "not a directory")
        entries, more = dir_entries(target)
        names = []
        for entry in entries:
            if len(names) == LIST_MAX_NAMES:
                break
            if not entry.is_symlink() or inside(root, Path(entry.path)) is not None:
                names.append(_listed(entry))  # a link leading outside (or into a loop) is not shown
        if more:
            names.append(f"[more than {DIR_MAX_ENTRIES} entries: the first {len(names)} by name "
                         f"of {DIR_MAX_ENTRIES} read are shown]")
        elif len(entries) > LIST_MAX_NAMES:
            names.append(f"[{len(entries)} entries: the first {LIST_MAX_NAMES} by name are shown]")
        return {"success": True, "result": "\n".join(names) if names else "(empty directory)"}

    @staticmethod
    def _search(root: Path, p: Mapping[str, Any], config: Mapping[str, Any], cancellation: Any) -> dict[str, Any]:
        search = _matcher(*_pattern_args(p))
        cap = int(_setting(config, "files_max_results", 100))
        wanted = _int_arg(p, "max_results")
        if wanted is not None and wanted < 1:
            raise Refused(f"max_results must be at least 1, not {wanted}")
        start = confine(root, p.get("path") or ".")
        budget = _Budget(int(_setting(config, "files_search_max_bytes", 32 * 2**20)),
                         float(_setting(config, "files_search_seconds", 2)), cancellation)
        try:
            return {"success": True, "result": _search_tree(root, start, search, min(cap, wanted or cap), budget)}
        finally:
            if search.compiled is not None:
                re2.purge()  # re2 caches 128 patterns with their DFA memory (8 MiB each): keep none of ours

    def to_display_format(self, text: str, result: Any, state: Any) -> dict[str, Any]:
        first = text.splitlines()[0] if text else ""
        count = len(text.splitlines())
        single = first[:100] + (f" (+{count - 1} lines)" if count > 1 else "")
        return {"type": "text", "content": text, "single_line": single}


def _listed(entry: os.DirEntry[str]) -> str:
    """One list_dir line: the name, '/' for a directory, the kind of a special file, a note on escaped names."""
    name = printable(entry.name)
    try:
        mode = entry.stat().st_mode
    except OSError:
        mode = 0
    line = name + "/" if stat.S_ISDIR(mode) else name
    if mode and not stat.S_ISDIR(mode) and not stat.S_ISREG(mode):
        line += f"  ({file_kind(mode)}, not readable)"
    if name != entry.name:
        line += "  (name shown escaped: it is not valid UTF-8 or holds control characters; it cannot be opened)"
    return line
