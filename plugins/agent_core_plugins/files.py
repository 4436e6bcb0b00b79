"""``files``: tools ``read_file``, ``list_dir`` and ``search_text``, confined to ``files_root``.

Every argument comes from the model, so each is hostile input, and so is the
tree under the root. Paths, opening and reading go through
:mod:`agent_core_plugins.file_access` (the gate ``file_mentions`` shares),
searching through :mod:`agent_core_plugins.file_search` (RE2, blocks of lines,
a budget of bytes and seconds per call); this module is the tools around them.
Arguments are checked here, by name, and every refusal is an error result the
model reads, never an exception out of the plugin. ``list_dir`` returns at most
:data:`LIST_MAX_NAMES` names, the first by name.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agent_core.plugin_kit import Tool, ToolCall, failure, success

from agent_core_plugins.file_access import (
    ROOT_SETTING,
    PathRefused,
    Refused,
    confine,
    dir_entries,
    file_kind,
    inside,
    printable,
    quoted,
    read_text,
    root_of,
)
from agent_core_plugins.file_search import Budget, has_regex, search

__all__ = [
    "LIST_MAX_NAMES", "FilesTool",
    # the gate, re-exported for code written against this module
    "PathRefused", "Refused", "confine", "read_text", "root_of",
]

#: names list_dir returns at most (the first by name)
LIST_MAX_NAMES = 500


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


class FilesTool(Tool):
    """Reads, lists and searches files under ``files_root``; nothing outside it, nothing written."""

    name = "files"
    version = "1.1.0"
    default_enabled = False  # opt-in: enabled_plugins=["files"]

    config_schema = {
        **ROOT_SETTING,
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
        return _SCHEMAS[has_regex()]

    def preview(self, call: ToolCall) -> str:
        p = call.arguments

        def arg(key: str, default: str) -> str:
            return printable(str(p.get(key) or default))[:200]

        tool_name = call.tool_name
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

    def run(self, call: ToolCall) -> dict[str, Any]:
        config, p, tool_name = call.config, call.arguments, call.tool_name
        try:
            root = root_of(config)
            if not root.is_dir():
                return failure(f"files_root {quoted(str(root))} is not a directory")
            if tool_name == "read_file":
                return self._read(root, p, int(_setting(config, "files_max_read_bytes", 100_000)))
            if tool_name == "list_dir":
                return self._list(root, p)
            if tool_name == "search_text":
                return self._search(root, p, config, call.cancellation)
        except Refused as exc:
            return failure(printable(f"{tool_name}: {exc}"))
        except OSError as exc:
            return failure(printable(f"{tool_name}: {exc.strerror or exc}"))
        return failure(f"files has no tool {quoted(str(tool_name))}")

    @staticmethod
    def _read(root: Path, p: Mapping[str, Any], max_bytes: int) -> dict[str, Any]:
        text, cut = read_text(root, p.get("path"), max_bytes, _int_arg(p, "start_line"), _int_arg(p, "end_line"))
        if cut:
            text += f"\n[cut at {max_bytes} bytes; ask for a line range to read further]"
        return success(text)

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
            names.append(f"[more than {len(entries)} entries: the first {len(names)} by name "
                         f"of {len(entries)} read are shown]")
        elif len(entries) > LIST_MAX_NAMES:
            names.append(f"[{len(entries)} entries: the first {LIST_MAX_NAMES} by name are shown]")
        return success("\n".join(names) if names else "(empty directory)")

    @staticmethod
    def _search(root: Path, p: Mapping[str, Any], config: Mapping[str, Any], cancellation: Any) -> dict[str, Any]:
        cap = int(_setting(config, "files_max_results", 100))
        wanted = _int_arg(p, "max_results")
        if wanted is not None and wanted < 1:
            raise Refused(f"max_results must be at least 1, not {wanted}")
        start = confine(root, p.get("path") or ".")
        budget = Budget(int(_setting(config, "files_search_max_bytes", 32 * 2**20)),
                        float(_setting(config, "files_search_seconds", 2)), cancellation)
        found = search(root, start, p.get("pattern"), p.get("literal", False), min(cap, wanted or cap), budget)
        return success(found)

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
        try:
            os.fsencode(entry.name).decode("utf-8")
            line += "  (name shown escaped: it holds control characters)"
        except UnicodeDecodeError:
            line += "  (name shown escaped: it is not valid UTF-8, and cannot be opened)"
    return line
