"""``file_mentions``: ``@path`` in a user message brings that file's text to the model.

Completion: :meth:`get_completions` offers the files and directories under
config ``files_root`` matching the ``@partial`` at the end of the input, and
:meth:`apply_completion` puts the chosen path in its place (a directory keeps
the ``@`` open, so the user can go on typing).

Inlining: when a user message becomes native, each ``@path`` it mentions is
read (at most ``file_mentions_max_bytes`` bytes, then cut with a note) and
appended to that message for the model; the core message keeps what the user
typed. Paths go through the ``files`` tool's gate
(:func:`agent_core_plugins.files.confine`), so ``..``, absolute paths outside
the root and symlinks leading out are refused, and the refusal is what the
model sees in place of the file. The native history keeps the inlined text,
so a file is read once, when its message is first sent.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agent_core_plugins.files import PathRefused, confine, read_text, root_of

__all__ = ["FileMentionsFeature", "mentions"]

_MENTION = re.compile(r"(?<!\S)@([^\s@]+)")
_TRAILING = ",.;:!?)]}'\""
MAX_COMPLETIONS = 50


def mentions(text: str) -> list[str]:
    """The paths ``text`` mentions with ``@``, in order, without repeats or trailing punctuation."""
    out: list[str] = []
    for match in _MENTION.finditer(text):
        path = match.group(1).rstrip(_TRAILING)
        if path and path not in out:
            out.append(path)
    return out


def _inline(root: Path, path: str, cap: int) -> str:
    try:
        text, cut = read_text(root, path, cap)
    except PathRefused as exc:
        return f'<file path="{path}" refused="true">{exc}</file>'
    except OSError as exc:
        return f'<file path="{path}" refused="true">cannot read: {exc.strerror or exc}</file>'
    note = f"\n[cut at {cap} bytes]" if cut else ""
    return f'<file path="{path}">\n{text}{note}\n</file>'


def _partial(text: str) -> str | None:
    match = re.search(r"(?:^|\s)@([^\s@]*)$", text)
    return match.group(1) if match else None


class FileMentionsFeature:
    name = "file_mentions"
    version = "1.0.0"
    priority = 30
    default_enabled = False  # opt-in: enabled_plugins=["file_mentions"]

    def get_config_schema(self) -> dict[str, Any]:
        return {
            "files_root": {"type": "string", "default": ".",
                           "description": "Directory the file tools and @mentions may read (default: working dir)."},
            "file_mentions_max_bytes": {"type": "integer", "default": 50_000,
                                        "description": "Bytes of one mentioned file sent to the model at most."},
        }

    def get_ui_elements(self, config: Any) -> list[dict[str, Any]]:
        return [{"type": "text", "key": "files_root", "label": "Files root",
                 "description": "@mentions and the file tools read only under this directory."}]

    # -- completion ---------------------------------------------------------------------

    def get_completions(self, config: Any, text: str) -> list[dict[str, Any]]:
        partial = _partial(text or "")
        if partial is None:
            return []
        root = root_of(config)
        folder, _, stem = partial.rpartition("/")
        try:
            base = confine(root, folder) if folder else root
        except PathRefused:
            return []
        if not base.is_dir():
            return []
        out = []
        for entry in sorted(base.iterdir(), key=lambda e: e.name):
            if not entry.name.startswith(stem) or (entry.name.startswith(".") and not stem.startswith(".")):
                continue
            try:
                confine(root, os.path.join(folder, entry.name) if folder else entry.name)
            except PathRefused:
                continue  # a link leading outside is not offered
            is_dir = entry.is_dir()
            rel = f"{folder}/{entry.name}" if folder else entry.name
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
        root = root_of(config)
        cap = int(config.get("file_mentions_max_bytes") or 50_000)
        out = []
        for core, native in zip(messages, native_messages):
            content = core.get("content")
            paths = mentions(content) if core.get("role") == "user" and isinstance(content, str) else []
            if not paths or native.get("role") != "user":
                out.append(native)
                continue
            files = "\n\n".join(_inline(root, p, cap) for p in paths)
            body = native.get("content")
            if isinstance(body, str):
                out.append({**native, "content": f"{body}\n\n{files}"})
            elif isinstance(body, list):
                out.append({**native, "content": [*body, {"type": "text", "text": files}]})
            else:
                out.append(native)
        return out
