"""``file_mentions``: ``@path`` in a user message brings that file's text to the model.

Completion: :meth:`get_completions` offers the files and directories under
config ``files_root`` matching the ``@partial`` at the end of the input, and
:meth:`apply_completion` puts the chosen path in its place (a directory keeps
the ``@`` open, so the user can go on typing).

Inlining: when a user message becomes native, each ``@path`` it mentions is
read (at most ``file_mentions_max_bytes`` bytes, then cut with a note) and
appended to that message for the model; the core message keeps what the user
typed. Paths go through the ``files`` tool's gate
(:mod:`agent_core_plugins.file_access`), so ``..``, absolute paths outside
the root, symlinks leading out and symlink loops are refused, as are FIFOs,
sockets, devices and binary files, and the refusal is what the model sees in
place of the file. At most :data:`MAX_MENTIONED_FILES` files are read for one
message. The native history keeps the inlined text, so a file is read once,
when its message is first sent.

Completion reads at most :data:`~agent_core_plugins.file_access.DIR_MAX_ENTRIES`
entries of a directory and offers no name it could not insert as typed (names
that are not UTF-8 or hold control characters).
"""

from __future__ import annotations

import html
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agent_core.plugin_kit import Feature
from agent_core_plugins.file_access import (
    ROOT_SETTING,
    Refused,
    confine,
    dir_entries,
    printable,
    read_text,
    root_of,
)

__all__ = ["MAX_COMPLETIONS", "MAX_MENTIONED_FILES", "FileMentionsFeature", "mentions"]

_MENTION = re.compile(r"(?<!\S)@([^\s@]+)")
_TRAILING = ",.;:!?)]}'\""
#: completions offered at most
MAX_COMPLETIONS = 50
#: files inlined for one message at most; later mentions get a note
MAX_MENTIONED_FILES = 20


def mentions(text: str) -> list[str]:
    """The paths ``text`` mentions with ``@``, in order, without repeats or trailing punctuation."""
    found = (match.group(1).rstrip(_TRAILING) for match in _MENTION.finditer(text))
    return list(dict.fromkeys(path for path in found if path))


def _inline(root: Path | Refused, path: str, cap: int) -> str:
    shown = html.escape(printable(path))
    try:
        if isinstance(root, Refused):
            raise root
        text, cut = read_text(root, path, cap)
    except Refused as exc:
        return f'<file path="{shown}" refused="true">{printable(str(exc))}</file>'
    except OSError as exc:
        return f'<file path="{shown}" refused="true">cannot read: {printable(exc.strerror or str(exc))}</file>'
    note = f"\n[cut at {cap} bytes]" if cut else ""
    return f'<file path="{shown}">\n{text}{note}\n</file>'


def _root(config: Any) -> Path | Refused:
    try:
        return root_of(config)
    except Refused as exc:
        return exc


def _partial(text: str) -> str | None:
    match = re.search(r"(?:^|\s)@([^\s@]*)$", text)
    return match.group(1) if match else None


class FileMentionsFeature(Feature):
    name = "file_mentions"
    version = "1.1.0"
    priority = 30
    default_enabled = False  # opt-in: enabled_plugins=["file_mentions"]
    config_schema = {
        **ROOT_SETTING,
        "file_mentions_max_bytes": {"type": "integer", "default": 50_000,
                                    "description": "Bytes of one mentioned file sent to the model at most."},
    }
    ui_elements = ({"type": "text", "key": "files_root", "label": "Files root",
                    "description": "@mentions and the file tools read only under this directory."},)

    # -- completion ---------------------------------------------------------------------

    def get_completions(self, config: Any, text: str) -> list[dict[str, Any]]:
        partial = _partial(text or "")
        if partial is None:
            return []
        folder, _, stem = partial.rpartition("/")
        try:
            root = root_of(config)
            base = confine(root, folder) if folder else root
            entries, _more = dir_entries(base)
        except (Refused, OSError):
            return []  # outside the root, a loop, not a directory, unreadable: nothing to offer
        names = [e.name for e in entries if e.name.startswith(stem) and printable(e.name) == e.name
                 and (stem.startswith(".") or not e.name.startswith("."))]
        out = []
        for name in names[: 4 * MAX_COMPLETIONS]:  # a few more than offered, for the links refused below
            rel = f"{folder}/{name}" if folder else name
            try:
                mode = os.stat(confine(root, rel)).st_mode
            except (Refused, OSError):
                continue  # a link leading outside, or into a loop, is not offered
            is_dir = stat.S_ISDIR(mode)
            if not is_dir and not stat.S_ISREG(mode):
                continue  # a FIFO, socket or device could not be read
            out.append({"text": f"@{rel}{'/' if is_dir else ''}", "label": rel + ("/" if is_dir else ""),
                        "kind": "directory" if is_dir else "file", "replace": f"@{partial}"})
            if len(out) >= MAX_COMPLETIONS:
                break
        return out

    def apply_completion(self, config: Any, text: str, completion: Any) -> str:
        if not isinstance(completion, Mapping) or not isinstance(completion.get("text"), str):
            return ""
        partial = _partial(text or "")
        if partial is None:
            return ""
        head = text[: len(text) - len(partial) - 1]
        chosen = completion["text"]
        return head + chosen + ("" if chosen.endswith("/") else " ")

    # -- inlining -------------------------------------------------------------------------

    def to_native_messages(self, messages: Any, native_messages: Any, state: Any = None, *,
                           context: Any = None) -> list[Any]:
        if len(messages) != len(native_messages):
            return list(native_messages)  # no one-to-one mapping to follow: leave it as the provider made it
        config = (state or {}).get("config") or {}
        root = _root(config)
        cap = config.get("file_mentions_max_bytes")
        cap = cap if isinstance(cap, int) and not isinstance(cap, bool) and cap > 0 else 50_000
        out = []
        for core, native in zip(messages, native_messages):
            content = core.get("content")
            paths = mentions(content) if core.get("role") == "user" and isinstance(content, str) else []
            if not paths or native.get("role") != "user":
                out.append(native)
                continue
            files = "\n\n".join(_inline(root, p, cap) for p in paths[:MAX_MENTIONED_FILES])
            if len(paths) > MAX_MENTIONED_FILES:
                files += (f"\n\n[{len(paths) - MAX_MENTIONED_FILES} more @mentions not read: "
                          f"at most {MAX_MENTIONED_FILES} files per message]")
            body = native.get("content")
            if isinstance(body, str):
                out.append({**native, "content": f"{body}\n\n{files}"})
            elif isinstance(body, list):
                out.append({**native, "content": [*body, {"type": "text", "text": files}]})
            else:
                out.append(native)
        return out
