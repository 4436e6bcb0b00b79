"""Finals checked where a plugin returns them, with the sentence ``check_plugin`` says too.

A final that is no mapping, or holds what JSON cannot carry, would otherwise fail far
away: in the provider's ``from_native_messages`` (which then gets the blame) or in the
store. The hot loop checks each new final as it appears, naming the plugin and hook.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import InvalidValueError, PluginError
from ..values.json_values import freeze_json
from .hooks import LivePlugin

__all__ = ["checked_finals", "final_fault"]


def final_fault(m: Any, i: int = 0) -> str | None:
    """Why ``m`` cannot be a final message (``None`` when it can): what the engine and ``check_plugin`` say."""
    if not isinstance(m, Mapping):
        return (f"returned final_messages[{i}] = {m!r:.80}, a {type(m).__name__}: each final is a message "
                "mapping such as {'role': 'assistant', 'content': ...}")
    try:
        freeze_json(m, f"final_messages[{i}]")
    except InvalidValueError as exc:
        return (f"returned a final that JSON cannot carry, so the session could not store it: {exc}. Put only "
                "JSON values in a final and its metadata (text, numbers, booleans, None, lists, string-keyed "
                "mappings): turn anything else into one of them first, e.g. a datetime into ISO text")
    return None


def checked_finals(plugin: LivePlugin, hook: str, finals: Any) -> None:
    """New finals must be message mappings JSON can carry: caught where the plugin made them, not later in
    the provider's ``from_native_messages`` (blamed wrongly), nor lost from the reply."""
    for i, m in enumerate(finals):
        fault = final_fault(m, i)
        if fault is not None:
            raise PluginError(plugin.name, hook, TypeError(type(m).__name__), detail=fault)
