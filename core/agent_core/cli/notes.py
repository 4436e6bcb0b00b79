"""How the CLI says a warning: one ``warning:`` line on stderr that names where the value came from.

Every command prints its warnings through :func:`warn`: a config key nothing declares
(``warning: config key `max_tokns` ... (set by -c)``), a model set without a provider,
and any Python warning a plugin raises while a command runs (:func:`show_python_warning`
replaces the interpreter's two-line form, which quoted the ``agent-core`` script's own
source line). ``agent-core serve`` logs through the server's logger instead, so
:class:`SourcedConfigNotes` gives its config warnings the same words.
"""

from __future__ import annotations

import logging
import re
import sys
import warnings
from collections.abc import Mapping
from typing import Any

from ..errors import UnknownConfigKeyWarning

__all__ = ["SourcedConfigNotes", "resolve_noted", "show_python_warning", "sourced", "warn"]

# The config notes quote the key they are about: "config key `k` is not declared ...", or
# "enabled_plugins names `x`, which ..." (agent_core.plugins.config and .selection word them).
_NOTE_KEY = re.compile(r"^config key `([^`]+)`|^([a-z_]+) names `")


def sourced(note: str, source: str | None) -> str:
    """``note (set by SOURCE)``, or the note alone when its source is not known."""
    return f"{note} (set by {source})" if source else note


def warn(note: str, source: str | None = None, err: Any = None) -> None:
    """Print ``warning: NOTE (set by SOURCE)`` on stderr: the one way a command warns."""
    (err or sys.stderr).write(f"warning: {sourced(note, source)}\n")


def note_key(note: str) -> str | None:
    """The config key a resolve note is about, when it names one."""
    found = _NOTE_KEY.match(note)
    return (found.group(1) or found.group(2)) if found else None


def resolve_noted(core: Any, config: Mapping[str, Any], sources: Mapping[str, str], err: Any = None) -> Any:
    """``core.resolve(config)``, each config warning it raises said once by :func:`warn` with its source.

    Raises:
        ConfigError: the config cannot work (as :meth:`AgentCore.resolve`).
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UnknownConfigKeyWarning)
        resolution = core.resolve(dict(config))
    for item in caught:
        if isinstance(item.message, UnknownConfigKeyWarning):
            warn(str(item.message), sources.get(item.message.key), err)
        else:
            show_python_warning(item.message, item.category, item.filename, item.lineno)
    return resolution


def show_python_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                        file: Any = None, line: str | None = None) -> None:
    """A Python warning as one ``warning:`` line naming the code that raised it (for ``warnings.showwarning``)."""
    text = str(message)
    if not isinstance(message, UnknownConfigKeyWarning):  # ours say what to change; another's, who said it
        text += f" ({category.__name__} from {filename}:{lineno})"
    (file or sys.stderr).write(f"warning: {text}\n")


class SourcedConfigNotes(logging.Filter):
    """For ``serve``: the server's config warnings in :func:`warn`'s words, with where each key was set.

    The server logs each note once at start (event ``config_warning``, the note in its
    fields); its text formatter adds the ``warning:`` level itself.
    """

    def __init__(self, sources: Mapping[str, str]) -> None:
        super().__init__()
        self.sources = dict(sources)

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "event", None) == "config_warning":
            note = str((getattr(record, "fields", None) or {}).get("note") or record.getMessage())
            key = note_key(note)
            record.msg, record.args = sourced(note, self.sources.get(key) if key else None), ()
        return True
