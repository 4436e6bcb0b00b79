"""Rewriting final messages while the native history keeps step.

When a provider call ends, each final native message is also the last entry
of the native history the provider's ``finalize`` built. An extension that
completes or rewrites a final in the closing ``process_chunk(None, ...)``
call (attaching assembled tool calls, moving reasoning out, masking a key)
must replace it in both places, or the next request would send the old one.
These helpers do the two together, and hand back the very lists they were
given when nothing changed (the engine then skips freezing them again).

The rewrite always sees a core-shaped message (``role``, ``content``,
``metadata``). The finals are the provider's native messages, which for a
third party's provider may have a shape of their own (``{"who", "said"}``); in
the engine's closing step such a final is read with the provider's own
``from_native_messages``, rewritten, and written back with its
``to_native_messages`` over the original (so native extras the conversion does
not know stay as they were). See :mod:`agent_core.plugins.native_view`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..plugins.native_view import core_shaped, current_view

__all__ = ["replace_final", "rewrite_finals", "rewrite_last_assistant"]

#: ``rewrite(message)``: the new message, or the same object when there is nothing to change
Rewrite = Callable[[Any], Any]


def _through(rewrite: Rewrite, old: Any) -> Any:
    """``rewrite`` of ``old`` in the core shape; ``old`` itself when nothing changed."""
    view = None if core_shaped(old) or not isinstance(old, Mapping) else current_view()
    if view is None:
        return rewrite(old)
    core = view.to_core(old)
    if core is None:  # the provider makes no core message of it: nothing to rewrite
        return old
    new = rewrite(core)
    return old if new is core or new == core else view.to_native(old, core, new)


def replace_final(native_messages: Sequence[Any], old: Mapping[str, Any], new: Mapping[str, Any], *,
                  from_end: int | None = None) -> Any:
    """``native_messages`` with the final ``old`` (searched from the end) replaced by ``new``.

    ``old`` may be missing when an extension earlier in the chain rewrote the final but left
    the native history as it was. ``from_end`` then says where the final sits: a call's finals
    are the last messages of its native history, so the final ``k``-th from the end of the
    finals is the ``k``-th from the end there too (1 for the last); it is replaced when it has
    ``old``'s role. Returns the list given when neither finds it.
    """
    for i in range(len(native_messages) - 1, -1, -1):
        if native_messages[i] == old:
            return [*native_messages[:i], new, *native_messages[i + 1 :]]
    if from_end is not None and 0 < from_end <= len(native_messages):
        i = len(native_messages) - from_end
        there = native_messages[i]
        if isinstance(there, Mapping) and there.get("role") == old.get("role"):
            return [*native_messages[:i], new, *native_messages[i + 1 :]]
    return native_messages


def rewrite_finals(finals: Sequence[Any], native_messages: Sequence[Any], rewrite: Rewrite) -> tuple[Any, Any]:
    """Each final through ``rewrite``; one that changed is replaced in the native history too.

    Returns ``(finals, native_messages)``: the lists given when ``rewrite``
    returned every message as it was (compared with ``is``).
    """
    changed: list[Any] | None = None
    for i, old in enumerate(finals):
        new = _through(rewrite, old)
        if new is not old:
            if changed is None:
                changed = list(finals)
            changed[i] = new
            native_messages = replace_final(native_messages, old, new, from_end=len(finals) - i)
    return (finals if changed is None else changed), native_messages


def _role(message: Any) -> Any:
    if core_shaped(message):
        return message.get("role")
    view = current_view()
    core = view.to_core(message) if view is not None and isinstance(message, Mapping) else None
    return (core or message).get("role") if isinstance(core or message, Mapping) else None


def rewrite_last_assistant(
    finals: Sequence[Any], native_messages: Sequence[Any], rewrite: Rewrite
) -> tuple[Any, Any]:
    """The last ``assistant`` final through ``rewrite``, replaced in the finals and the native history.

    That is the message a streamed answer's extras (tool calls, reasoning)
    belong to. Returns the lists given when there is no assistant final or
    ``rewrite`` returned it as it was (compared with ``is``).
    """
    for i in range(len(finals) - 1, -1, -1):
        old = finals[i]
        if _role(old) == "assistant":
            new = _through(rewrite, old)
            if new is old:
                break
            return [*finals[:i], new, *finals[i + 1 :]], replace_final(native_messages, old, new,
                                                                       from_end=len(finals) - i)
    return finals, native_messages
