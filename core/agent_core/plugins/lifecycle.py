"""Actions and lifecycle points: what plugins declare with ``get_actions``, and how one runs.

An action with a ``trigger`` (or the legacy ``lifecycle`` key) runs by
itself at that point: the request run drives ``llm_request``,
``response_finalize``, ``tool_pre`` and ``tool_post``; an application drives the others through
``execute_lifecycle_actions``. Contexts are built here too: the engine's own
keys win over a caller's (:func:`merge_context`), and the session travels as
an O(1) view (:func:`~agent_core.values.views.session_view`), never a thawed copy.
"""

from __future__ import annotations

import difflib
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import InvalidValueError, PluginError
from ..values.frozen import FrozenDict, freeze
from ..values.messages import Session
from .answers import frozen_map
from .hooks import LivePlugin, call_hook
from .near_miss import caller_level

__all__ = ["RESERVED_CONTEXT_KEYS", "REQUEST_TRIGGERS", "action_defaults", "lifecycle_table", "merge_context",
           "plugin_actions", "run_action", "triggers_of"]

#: context keys the engine owns; caller-supplied context cannot replace them
RESERVED_CONTEXT_KEYS = frozenset(
    {
        "core", "config", "trigger_source", "session", "lifecycle", "final_messages",
        "native_final_messages", "native_messages", "stream", "turn_native_start_index",
        "request_id", "tags", "models", "available_tools", "tools", "tool_interop", "iteration",
        "tool_call", "tool_result", "tool_message",
    }
)

#: lifecycle points a request runs itself
REQUEST_TRIGGERS = frozenset({"llm_request", "response_finalize", "tool_pre", "tool_post"})

#: lifecycle point -> the (plugin, action) pairs bound to it, in chain order
Lifecycle = dict[str, list[tuple[LivePlugin, FrozenDict]]]


def merge_context(owned: dict[str, Any], extra: Mapping[str, Any] | None) -> FrozenDict:
    """Add caller context to the engine's; a clash keeps the engine's value (with a warning)."""
    if extra:
        for k, v in extra.items():
            if k in owned or k in RESERVED_CONTEXT_KEYS:
                warnings.warn(
                    f"context key {k!r} is reserved by the engine; the caller's value is ignored",
                    RuntimeWarning,
                    stacklevel=5,
                )
                continue
            owned[k] = v
    return freeze(owned)  # type: ignore[no-any-return]


def plugin_actions(plugin: LivePlugin, state: Any) -> list[FrozenDict]:
    """A plugin's ``get_actions``, checked: mappings with a string ``id`` and a well-formed trigger.

    Raises:
        PluginError: naming the plugin, the hook ``get_actions`` and what is wrong.
    """
    if "get_actions" not in plugin.defined:
        return []
    got = call_hook(plugin, "get_actions", state)
    if got is None:
        return []
    if not isinstance(got, (list, tuple)):
        raise PluginError(plugin.name, "get_actions", TypeError("bad return value"),
                          detail=f"must return a list of actions, got {type(got).__name__}")
    out = []
    for action in got:
        if not isinstance(action, Mapping) or not isinstance(action.get("id"), str):
            raise PluginError(plugin.name, "get_actions", TypeError("bad action"),
                              detail=f"each action must be a mapping with a string 'id', got {action!r}")
        for key in ("trigger", "lifecycle"):
            trig = action.get(key)
            if trig is None:
                continue
            if isinstance(trig, str):
                if trig not in REQUEST_TRIGGERS:
                    _say_near_trigger(plugin.name, action["id"], trig)
                continue
            if not isinstance(trig, (list, tuple)) or not all(isinstance(t, str) for t in trig):
                raise PluginError(
                    plugin.name, "get_actions", TypeError("bad trigger"),
                    detail=f"action {action['id']!r}: {key!r} must be a lifecycle name or a list of them, "
                           f"got {trig!r}",
                )
        try:
            out.append(freeze(action))
        except InvalidValueError as exc:
            raise PluginError(plugin.name, "get_actions", exc) from exc
    return out


#: a trigger a request does not run -> the one it is a near miss of (None: a point of the application's own)
_NEAR_TRIGGERS: dict[str, str | None] = {}


def _say_near_trigger(plugin: str, action: str, trigger: str) -> None:
    """Warn of a trigger spelled almost like one a request runs (``response_finalise``): it would never fire.

    Other names are lifecycle points an application runs itself (``execute_lifecycle_actions``).
    """
    if trigger not in _NEAR_TRIGGERS:
        close = difflib.get_close_matches(trigger, sorted(REQUEST_TRIGGERS), n=1, cutoff=0.85)
        _NEAR_TRIGGERS[trigger] = close[0] if close else None
    meant = _NEAR_TRIGGERS[trigger]
    if meant is not None:
        warnings.warn(f"plugin {plugin!r}: action {action!r} has trigger {trigger!r}, which no request runs (only "
                      f"an application calling execute_lifecycle_actions would); did you mean {meant!r}?",
                      UserWarning, stacklevel=caller_level())


def triggers_of(action: Mapping[str, Any]) -> tuple[str, ...]:
    """The lifecycle points an action is bound to (none for a plain action)."""
    trig = action.get("trigger") or action.get("lifecycle")
    return (trig,) if isinstance(trig, str) else tuple(trig or ())


def lifecycle_table(plugins: Iterable[LivePlugin], state: Any) -> Lifecycle:
    """Every triggered action of ``plugins``, by lifecycle point."""
    table: Lifecycle = {}
    for p in plugins:
        for action in plugin_actions(p, state):
            for t in triggers_of(action):
                table.setdefault(t, []).append((p, action))
    return table


def action_defaults(action: Mapping[str, Any]) -> dict[str, Any]:
    """The params an action gets when nobody passes any: its declared inputs' defaults."""
    return {k: v.get("default") for k, v in (action.get("inputs") or {}).items()
            if isinstance(v, Mapping) and "default" in v}


def run_action(
    plugin: LivePlugin, action: Mapping[str, Any], session: Session, native: Any, context: Mapping[str, Any],
    state: Any, params: Mapping[str, Any] | None = None,
) -> FrozenDict:
    """Call ``execute_action`` for one action (params default to its declared input defaults)."""
    if params is None:
        params = action_defaults(action)
    result = call_hook(plugin, "execute_action", action["id"], session, native, freeze(params),
                       context if context.__class__ is FrozenDict else freeze(context), state)
    return frozen_map(plugin, "execute_action", result if result is not None else {}, "action result")  # type: ignore[no-any-return]
