"""``files``: tools ``read_file``, ``list_dir`` and ``search_text``, confined to ``files_root``.

A model asking for files must never reach past the directory the application
chose. :func:`confine` is the one gate every path goes through (the
``file_mentions`` feature uses it too): a ``..`` component is refused outright,
an absolute path must lie under the root, and the path is resolved with its
symlinks followed, so a link pointing outside the root is refused as well.
Walking a directory (``list_dir``, ``search_text``) skips entries whose links
lead outside. Refusals are error results the model reads, never exceptions.

A ``search_text`` pattern is a regular expression, and Python's engine can
take exponential time on a repeat nested inside a repeat (``(a+)+$`` against
thirty ``a`` and a ``!``), holding the interpreter so no time limit can stop
it; :func:`backtracking_risk` refuses such patterns up front, and each line
is searched in its first :data:`SEARCH_LINE_CHARS` characters, which bounds
the polynomial cases (``.*a.*b`` on a minified megabyte line).

Config: ``files_root`` (default: the working directory at call time),
``files_max_read_bytes`` (what ``read_file`` returns at most),
``files_max_results`` (``search_text`` matches at most).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

__all__ = ["SEARCH_LINE_CHARS", "FilesTool", "PathRefused", "backtracking_risk", "confine", "root_of"]

#: how much of each line ``search_text`` searches (a regex's cost can grow with a power of the length)
SEARCH_LINE_CHARS = 4000


class PathRefused(ValueError):
    """A path outside ``files_root`` (``..``, absolute elsewhere, or a symlink leading out)."""


def root_of(config: Any) -> Path:
    """The resolved ``files_root`` of ``config`` (the working directory when unset)."""
    raw = (config or {}).get("files_root") or "."
    return Path(os.path.expanduser(str(raw))).resolve()


def confine(root: Path, path: Any) -> Path:
    """``path`` resolved inside ``root``; :class:`PathRefused` naming the path and the reason otherwise."""
    if not isinstance(path, str) or not path.strip():
        raise PathRefused("path must be a non-empty string")
    if "\x00" in path:
        raise PathRefused(f"path {path!r} contains a NUL character")
    raw = Path(path)
    if ".." in raw.parts:
        raise PathRefused(f"path {path!r} is refused: '..' is not allowed (paths stay under files_root)")
    candidate = raw if raw.is_absolute() else root / raw
    if not candidate.absolute().is_relative_to(root):
        raise PathRefused(f"path {path!r} is outside files_root")
    resolved = candidate.resolve()
    if not resolved.is_relative_to(root):
        raise PathRefused(f"path {path!r} is refused: a symlink leads outside files_root")
    return resolved


def _rel(root: Path, path: Path) -> str:
    rel = path.relative_to(root).as_posix()
    return rel if rel != "." else "."


def _inside(root: Path, path: Path) -> bool:
    try:
        return path.resolve().is_relative_to(root)
    except OSError:
        return False


def read_text(root: Path, path: str, max_bytes: int, start_line: int | None = None,
              end_line: int | None = None) -> tuple[str, bool]:
    """Lines ``start_line..end_line`` (1-based, inclusive) of a confined file, capped at ``max_bytes``.

    Returns the text and whether it was cut at the cap.
    """
    target = confine(root, path)
    if not target.is_file():
        raise PathRefused(f"{path!r} is not a file" if target.exists() else f"{path!r} does not exist")
    if start_line is not None and start_line < 1 or end_line is not None and end_line < 1:
        raise PathRefused("start_line and end_line count from 1")
    if start_line is not None and end_line is not None and end_line < start_line:
        raise PathRefused(f"end_line {end_line} is before start_line {start_line}")
    out: list[str] = []
    size = 0
    cut = False
    with target.open("r", encoding="utf-8", errors="replace") as fh:
        for number, line in enumerate(fh, 1):
            if start_line is not None and number < start_line:
                continue
            if end_line is not None and number > end_line:
                break
            if size + len(line.encode()) > max_bytes:
                out.append(line.encode()[: max_bytes - size].decode("utf-8", "ignore"))
                cut = True
                break
            out.append(line)
            size += len(line.encode())
    return "".join(out), cut


_SCHEMAS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a text file under the files root, optionally only lines start_line..end_line.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "relative to the files root"},
                    "start_line": {"type": "integer", "description": "first line, from 1"},
                    "end_line": {"type": "integer", "description": "last line (inclusive)"},
                },
                "required": ["path"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "list_dir",
            "description": "List a directory under the files root (directories end with '/').",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string", "description": "relative to the files root; default '.'"}},
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search_text",
            "description": "Search files under a directory for a regular expression; returns path:line: text.",
            "parameters": {
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "a Python regular expression"},
                    "path": {"type": "string", "description": "directory or file to search; default '.'"},
                    "max_results": {"type": "integer", "description": "at most this many matches"},
                },
                "required": ["pattern"],
            },
        },
    },
]


class FilesTool:
    """Reads, lists and searches files under ``files_root``; nothing outside it, nothing written."""

    name = "files"
    version = "1.0.0"
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
        }

    def get_tool_schemas(self, state: Any) -> list[dict[str, Any]]:
        return _SCHEMAS

    def format_tool_call_preview(self, tool_name: Any, payload: Any, state: Any) -> str:
        p = payload if isinstance(payload, dict) else {}
        if tool_name == "read_file":
            lines = ""
            if p.get("start_line") or p.get("end_line"):
                lines = f" lines {p.get('start_line') or 1}-{p.get('end_line') or 'end'}"
            return f"read {p.get('path', '?')}{lines}"
        if tool_name == "list_dir":
            return f"list {p.get('path') or '.'}"
        if tool_name == "search_text":
            return f"search /{p.get('pattern', '')}/ in {p.get('path') or '.'}"
        return ""

    def execute_tool(self, tool_name: Any, payload: Any, state: Any) -> dict[str, Any]:
        config = state["config"]
        p = payload if isinstance(payload, dict) else {}
        try:
            root = root_of(config)
            if not root.is_dir():
                return {"success": False, "error": f"files_root {str(root)!r} is not a directory"}
            if tool_name == "read_file":
                return self._read(root, p, int(config.get("files_max_read_bytes") or 100_000))
            if tool_name == "list_dir":
                return self._list(root, p)
            if tool_name == "search_text":
                return self._search(root, p, int(config.get("files_max_results") or 100))
        except PathRefused as exc:
            return {"success": False, "error": f"{tool_name}: {exc}"}
        except OSError as exc:
            return {"success": False, "error": f"{tool_name}: {exc.strerror or exc}"}
        return {"success": False, "error": f"files has no tool {tool_name!r}"}

    @staticmethod
    def _read(root: Path, p: dict[str, Any], max_bytes: int) -> dict[str, Any]:
        start, end = p.get("start_line"), p.get("end_line")
        for key, value in (("start_line", start), ("end_line", end)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                return {"success": False, "error": f"read_file: {key} must be an integer"}
        text, cut = read_text(root, p.get("path"), max_bytes, start, end)
        if cut:
            text += f"\n[cut at {max_bytes} bytes; ask for a line range to read further]"
        return {"success": True, "result": text}

    @staticmethod
    def _list(root: Path, p: dict[str, Any]) -> dict[str, Any]:
        target = confine(root, p.get("path") or ".")
        if not target.is_dir():
            return {"success": False, "error": f"list_dir: {p.get('path')!r} is not a directory"}
        names = []
        for entry in sorted(target.iterdir(), key=lambda e: e.name):
            if entry.is_symlink() and not _inside(root, entry):
                continue  # a link leading outside the root is not shown
            names.append(entry.name + ("/" if entry.is_dir() else ""))
        return {"success": True, "result": "\n".join(names) if names else "(empty directory)"}

    @staticmethod
    def _search(root: Path, p: dict[str, Any], cap: int) -> dict[str, Any]:
        pattern = p.get("pattern")
        if not isinstance(pattern, str) or not pattern:
            return {"success": False, "error": "search_text: pattern must be a non-empty string"}
        try:
            regex = re.compile(pattern)
        except re.error as exc:
            return {"success": False, "error": f"search_text: bad regular expression {pattern!r}: {exc}"}
        risk = backtracking_risk(pattern)
        if risk:
            return {"success": False, "error": f"search_text: pattern {pattern!r} is refused: {risk}"}
        wanted = p.get("max_results")
        limit = min(cap, wanted) if isinstance(wanted, int) and not isinstance(wanted, bool) and wanted > 0 else cap
        start = confine(root, p.get("path") or ".")
        files = [start] if start.is_file() else _walk(root, start)
        hits: list[str] = []
        for f in files:
            try:
                with f.open("r", encoding="utf-8", errors="strict") as fh:
                    for number, line in enumerate(fh, 1):
                        if regex.search(line, 0, SEARCH_LINE_CHARS):
                            hits.append(f"{_rel(root, f)}:{number}: {line.rstrip()[:200]}")
                            if len(hits) >= limit:
                                return {"success": True, "result": "\n".join(hits) + f"\n[stopped at {limit} matches]"}
            except (UnicodeDecodeError, OSError):
                continue  # binary or unreadable: not text to search
        return {"success": True, "result": "\n".join(hits) if hits else "no matches"}

    def to_display_format(self, text: str, result: Any, state: Any) -> dict[str, Any]:
        first = text.splitlines()[0] if text else ""
        count = len(text.splitlines())
        single = first[:100] + (f" (+{count - 1} lines)" if count > 1 else "")
        return {"type": "text", "content": text, "single_line": single}


def backtracking_risk(pattern: str) -> str | None:
    """Why ``pattern`` may take exponential time (a variable repeat inside a repeat), or None.

    A static check on the parsed pattern: it refuses ``(a+)+``, ``(\\w*,)*``,
    ``(.*x){5}``, and lets ``(ab)+``, ``(\\d{2}-)+`` and possessive or
    optional inner parts through. Overlapping alternatives (``(a|a)+``) are
    not detected.
    """
    try:
        from re import _parser as parser  # private, but the only parser of re's own syntax
        tree = parser.parse(pattern)
    except Exception:  # noqa: BLE001 - no parser here: the line cap still bounds the cost
        return None
    return _nested(tree, False, parser.MAXREPEAT)


def _nested(items: Any, repeated: bool, unbounded: Any) -> str | None:
    for op, av in items:
        name = str(op)
        subs: list[Any] = []
        inner = repeated
        if name in ("MAX_REPEAT", "MIN_REPEAT"):
            low, high, sub = av
            varies = high is unbounded or (high > 1 and high != low)
            if repeated and varies:
                return ("a repeat inside a repeat (like '(a+)+') can take exponential time; "
                        "rewrite it without the nesting")
            inner = repeated or high is unbounded or high > 1
            subs = [sub]
        elif name == "SUBPATTERN":
            subs = [av[-1]]
        elif name == "BRANCH":
            subs = list(av[1])
        elif name in ("ASSERT", "ASSERT_NOT"):
            subs = [av[1]]
        elif name == "ATOMIC_GROUP":
            subs = [av]
        elif name == "GROUPREF_EXISTS":
            subs = [s for s in av[1:] if s is not None]
        for sub in subs:
            why = _nested(sub, inner, unbounded)
            if why:
                return why
    return None


def _walk(root: Path, start: Path) -> list[Path]:
    """Regular files under ``start`` (sorted, hidden directories skipped), never leaving ``root``."""
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(start):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if path.is_symlink() and not _inside(root, path):
                continue
            out.append(path)
    return out
