"""Safe access to files under a root: the gate the ``files`` tools and ``@`` mentions share.

Theory of operation. A path comes from a model or a user, and the tree under
the root may hold FIFOs, sockets, devices, symlink loops, names that are not
UTF-8, directories a million entries wide or thousands deep, and files of a
terabyte with no newline. Three rules keep each access bounded, and every
refusal a :class:`Refused` whose message says what was wrong:

* One gate for paths. :func:`confine` refuses ``..``, absolute paths outside
  the root, NUL characters, lone surrogates, paths over :data:`MAX_PATH_CHARS`,
  symlinks leading out and symlink loops.
* One way in to a file. :func:`open_regular` opens without blocking and
  without following a last symlink, then checks on the open descriptor that it
  is a regular file, so a FIFO, socket or device is refused and never read.
* Bounded reads. :func:`read_text` reads in chunks and keeps at most what it
  returns (a line with no end costs its cap, not its size), looks for its first
  line in at most :data:`READ_SCAN_BYTES`, and refuses binary files;
  :func:`dir_entries` reads at most :data:`DIR_MAX_ENTRIES` of a directory.

Names that are not UTF-8 cannot travel in JSON as they are: :func:`printable`
shows them with ``\\xNN`` escapes, and control characters escaped the same way.

Exceptions::

    ValueError
    └── Refused        an argument the tools will not act on (the model reads why)
        └── PathRefused  a path or a file the tools will not read
"""

from __future__ import annotations

import codecs
import errno
import itertools
import os
import stat
from pathlib import Path
from typing import Any, BinaryIO

__all__ = [
    "DIR_MAX_ENTRIES", "MAX_PATH_CHARS", "READ_SCAN_BYTES", "ROOT_SETTING", "SNIFF_BYTES", "PathRefused", "Refused",
    "confine", "dir_entries", "file_kind", "inside", "open_regular", "printable", "quoted", "read_text",
    "root_of",
]

#: a path longer than this is refused (Linux's PATH_MAX)
MAX_PATH_CHARS = 4096
#: entries read from one directory at most (list_dir, search_text's walk, @ completion)
DIR_MAX_ENTRIES = 10_000
#: how far into a file read_text looks for its first line
READ_SCAN_BYTES = 64 * 2**20
#: a NUL byte in a file's first 8 KiB marks it binary, as grep does
SNIFF_BYTES = 8192
_CHUNK = 256 * 2**10
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


class Refused(ValueError):
    """An argument the tools will not act on; the message, read by the model, says what was wrong."""


class PathRefused(Refused):
    """A path or file the tools will not read (outside the root, a loop, a FIFO, binary, ...)."""


def printable(text: str) -> str:
    """``text`` safe to show and to carry in JSON: bytes that are not UTF-8 as ``\\xNN``, control characters escaped."""
    text = os.fsencode(text).decode("utf-8", "backslashreplace")
    return text if text.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def quoted(text: str) -> str:
    """``text`` for a message: :func:`printable`, in quotes, its first 120 characters."""
    shown = printable(text)
    return f"'{shown}'" if len(shown) <= 120 else f"'{shown[:120]}...'"


def _resolve(path: Path, shown: str) -> Path:
    try:
        return path.resolve()
    except RuntimeError as exc:  # Python before 3.13 reports a symlink loop this way
        raise PathRefused(f"{shown} is refused: it goes through a symlink loop") from exc
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PathRefused(f"{shown} is refused: it goes through a symlink loop") from exc
        raise PathRefused(f"{shown} cannot be resolved: {exc.strerror or exc}") from exc


#: the config key both plugins reading under the root declare (``files`` and ``file_mentions``), in schema form
ROOT_SETTING = {
    "files_root": {"type": "string", "default": ".",
                   "description": "Directory the file tools and @mentions may read (default: working dir)."},
}


def root_of(config: Any) -> Path:
    """The resolved ``files_root`` of ``config`` (the working directory when unset).

    Raises:
        PathRefused: the root holds a NUL character or goes through a symlink loop.
    """
    raw = str((config or {}).get("files_root") or ".")
    if "\x00" in raw:
        raise PathRefused("files_root contains a NUL character")
    return _resolve(Path(os.path.expanduser(raw)), f"files_root {quoted(raw)}")


def confine(root: Path, path: Any) -> Path:
    """``path`` resolved inside ``root``.

    Raises:
        PathRefused: ``path`` is not a non-empty string, is longer than
            :data:`MAX_PATH_CHARS`, holds a NUL character or a lone surrogate,
            has a ``..`` component, is absolute outside ``root``, or resolves
            (through symlinks) outside ``root`` or into a symlink loop.
    """
    if not isinstance(path, str) or not path.strip():
        raise PathRefused("path must be a non-empty string")
    if len(path) > MAX_PATH_CHARS:
        raise PathRefused(f"path is {len(path)} characters long; at most {MAX_PATH_CHARS} are allowed")
    if "\x00" in path:
        raise PathRefused(f"path {quoted(path)} contains a NUL character")
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise PathRefused(f"path {quoted(path)} is not valid Unicode (it holds a lone surrogate)") from None
    raw = Path(path)
    if ".." in raw.parts:
        raise PathRefused(f"path {quoted(path)} is refused: '..' is not allowed (paths stay under files_root)")
    candidate = raw if raw.is_absolute() else root / raw
    if not candidate.absolute().is_relative_to(root):
        raise PathRefused(f"path {quoted(path)} is outside files_root")
    resolved = _resolve(candidate, f"path {quoted(path)}")
    if not resolved.is_relative_to(root):
        raise PathRefused(f"path {quoted(path)} is refused: a symlink leads outside files_root")
    return resolved


def inside(root: Path, path: Path) -> Path | None:
    """Where ``path`` leads, when that is inside ``root`` (None for links out, loops and errors)."""
    try:
        real = path.resolve()
    except (RuntimeError, OSError):
        return None
    return real if real.is_relative_to(root) else None


def file_kind(mode: int) -> str:
    """What a file of ``mode`` (``st_mode``) is, for a message: "a FIFO (named pipe)", "a socket", ..."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def open_regular(path: str | Path, shown: str) -> BinaryIO:
    """``path`` opened for binary reading, if it is a regular file.

    Opening never blocks (``O_NONBLOCK``: a FIFO with no writer would wait
    forever) and does not follow a last symlink; the file's type is checked on
    the open descriptor, so a path swapped after the check is caught too.

    Raises:
        PathRefused: missing, or a directory, FIFO, socket or device.
        OSError: the file cannot be opened (permissions and the like).
    """
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise PathRefused(f"{quoted(shown)} does not exist") from None
    if not stat.S_ISREG(mode):
        raise PathRefused(f"{quoted(shown)} is {file_kind(mode)}, not a file")
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise PathRefused(f"{quoted(shown)} is {file_kind(mode)}, not a file")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _after_newlines(chunk: bytes, pos: int, wanted: int) -> tuple[int, int]:
    """Position after up to ``wanted`` newlines from ``pos``, and how many were passed."""
    if chunk.count(b"\n", pos) < wanted:
        return len(chunk), chunk.count(b"\n", pos)
    for _ in range(wanted):
        pos = chunk.index(b"\n", pos) + 1
    return pos, wanted


def read_text(root: Path, path: Any, max_bytes: int, start_line: int | None = None,
              end_line: int | None = None) -> tuple[str, bool]:
    """Lines ``start_line..end_line`` (1-based, inclusive) of a confined text file, at most ``max_bytes``.

    Reads in chunks, so a file with no newline costs ``max_bytes``, not its
    size. Returns the text (invalid UTF-8 replaced) and whether it was cut.

    Raises:
        Refused: line numbers below 1, or ``end_line`` before ``start_line``.
        PathRefused: refused by :func:`confine` or :func:`open_regular`, a
            binary file, or ``start_line`` past the end of the file or beyond
            its first :data:`READ_SCAN_BYTES`.
        OSError: the file cannot be read.
    """
    target = confine(root, path)
    start = 1 if start_line is None else start_line
    if start < 1 or end_line is not None and end_line < 1:
        raise Refused("start_line and end_line count from 1")
    if end_line is not None and end_line < start:
        raise Refused(f"end_line {end_line} is before start_line {start}")
    with open_regular(target, path) as fh:
        if b"\x00" in fh.read(SNIFF_BYTES):
            raise PathRefused(f"{quoted(path)} looks binary (a NUL byte in its first 8 KiB); only text is read")
        fh.seek(0)
        out, line, scanned, reached, last = bytearray(), 1, 0, False, b"\n"
        while chunk := fh.read(_CHUNK):
            scanned, last, pos = scanned + len(chunk), chunk[-1:], 0
            if line < start:
                pos, passed = _after_newlines(chunk, 0, start - line)
                line += passed
                if line < start:
                    if scanned >= READ_SCAN_BYTES:
                        raise PathRefused(f"start_line {start} is not in the first {READ_SCAN_BYTES // 2**20} MiB "
                                          f"of {quoted(path)}; read_file looks no further")
                    continue
            reached = reached or pos < len(chunk)
            stop, done = len(chunk), False
            if end_line is not None:
                stop, passed = _after_newlines(chunk, pos, end_line - line + 1)
                line, done = line + passed, line + passed > end_line
            room = max_bytes - len(out)
            if stop - pos > room:
                out += chunk[pos:pos + room]
                return codecs.getincrementaldecoder("utf-8")("replace").decode(bytes(out)), True
            out += chunk[pos:stop]
            if done:
                break
    if start > 1 and not reached:
        lines = line - 1 + (last != b"\n")
        raise PathRefused(f"start_line {start} is past the end of {quoted(path)}, which has {lines} lines")
    return out.decode("utf-8", "replace"), False


def dir_entries(folder: str | Path) -> tuple[list[os.DirEntry[str]], bool]:
    """``folder``'s entries sorted by name, at most :data:`DIR_MAX_ENTRIES` of them, and whether it has more.

    Raises:
        OSError: the directory cannot be read.
    """
    with os.scandir(folder) as it:
        entries = list(itertools.islice(it, DIR_MAX_ENTRIES + 1))
    more = len(entries) > DIR_MAX_ENTRIES
    return sorted(entries[:DIR_MAX_ENTRIES], key=lambda e: e.name), more
