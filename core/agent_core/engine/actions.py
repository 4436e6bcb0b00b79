"""Session actions outside a request: listing them, running one, running a lifecycle point.

The engine's public ``get_actions`` / ``execute_action`` /
``execute_lifecycle_actions`` resolve the plugins and call these. They
build the native history with the same chain a request uses
(:func:`~agent_core.plugins.chains.session_native`), check params against an
action's declared ``inputs`` before the plugin runs, and hand the plugin
the session as an O(1) view in ``context["session"]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from ..errors import ActionInputError
from ..plugins.chains import init_state, session_native
from ..plugins.answers import frozen_list
from ..plugins.hooks import LivePlugin
from ..plugins.lifecycle import merge_context, plugin_actions, run_action, triggers_of
from ..plugins.enablement import own_config
from ..plugins.resolution import Resolution
from ..values.frozen import FrozenList, freeze, thaw
from ..values.messages import Session
from ..values.native_history import store_native
from ..values.views import session_view

__all__ = ["ActionResult", "check_inputs", "execute_action", "execute_lifecycle", "list_actions"]

_ACTION_RESULT_KEYS = ("native_messages", "session_metadata", "final_messages")

_INPUT_TYPES: dict[str, Any] = {
    "string": str, "number": (int, float), "integer": int, "boolean": bool,
    "array": (list, tuple), "object": Mapping,
}


class ActionResult(msgspec.Struct, frozen=True):
    """What ``execute_action`` returns: the new session, the native history, other keys."""

    session: Session
    native_messages: list[Any]
    payload: dict[str, Any]


def _chain(res: Resolution) -> list[LivePlugin]:
    return [res.live[n] for n in (*res.extensions, *res.features)]


def _state(res: Resolution) -> tuple[LivePlugin, list[LivePlugin], Any]:
    provider, chain = res.live[res.provider], _chain(res)
    return provider, chain, init_state(provider, chain, lambda p: own_config(p, res.config))


def list_actions(res: Resolution) -> list[dict[str, Any]]:
    """Action definitions of the enabled extensions and features, each with ``plugin``."""
    _, chain, state = _state(res)
    out = []
    for plugin in chain:
        for a in plugin_actions(plugin, state):
            item = thaw(a)
            item.setdefault("plugin", plugin.name)
            out.append(item)
    return out


def execute_action(
    res: Resolution, session: Session, action_id: str, params: Mapping[str, Any] | None,
    context: Mapping[str, Any] | None, core: Any,
) -> ActionResult:
    """Run one action (``"plugin:id"`` picks among plugins sharing an id); see ``AgentCore.execute_action``."""
    provider, chain, state = _state(res)
    owner_name, _, bare = action_id.rpartition(":") if ":" in action_id else ("", "", action_id)
    matches = []
    for plugin in chain:
        if owner_name and plugin.name != owner_name:
            continue
        for a in plugin_actions(plugin, state):
            if a.get("id") == bare:
                matches.append((plugin, a))
    if not matches:
        raise ActionInputError(f"no enabled plugin offers an action {action_id!r}", action=action_id)
    if len(matches) > 1:
        owners = ", ".join(f"{p.name}:{bare}" for p, _ in matches)
        raise ActionInputError(f"action {bare!r} is ambiguous; qualify it as one of {owners}", action=action_id)
    plugin, action = matches[0]
    checked = check_inputs(action_id, action.get("inputs") or {}, params or {})

    native = session_native(provider, chain, session, state, freeze({"core": core, "config": res.config}))
    owned = {"core": core, "config": res.config, "trigger_source": "application", "session": session_view(session)}
    result = run_action(plugin, action, session, native, merge_context(owned, context), state, checked)
    new_session = session
    if isinstance(result.get("session_metadata"), Mapping):
        new_session = new_session.with_metadata(result["session_metadata"])
    if "native_messages" in result:
        native = frozen_list(plugin, "execute_action", result["native_messages"], "native_messages", native)
    new_session = store_native(new_session, provider.name, native)
    payload = {k: thaw(v) for k, v in result.items() if k not in _ACTION_RESULT_KEYS}
    return ActionResult(new_session, list(native), payload)


def execute_lifecycle(
    res: Resolution, session: Session, trigger: str, context: Mapping[str, Any] | None, core: Any,
) -> Session:
    """Run every enabled action bound to ``trigger``, in chain order; see ``AgentCore.execute_lifecycle_actions``."""
    provider, chain, state = _state(res)
    native: FrozenList | None = None
    for plugin in chain:
        for action in plugin_actions(plugin, state):
            if trigger not in triggers_of(action):
                continue
            if native is None:
                native = session_native(provider, chain, session, state, freeze({"core": core, "config": res.config}))
            params = check_inputs(str(action.get("id")), action.get("inputs") or {}, {})
            owned = {"core": core, "config": res.config, "trigger_source": "application",
                     "lifecycle": trigger, "session": session_view(session)}
            result = run_action(plugin, action, session, native, merge_context(owned, context), state, params)
            if isinstance(result.get("session_metadata"), Mapping):
                session = session.with_metadata(result["session_metadata"])
            if "native_messages" in result:
                native = frozen_list(plugin, "execute_action", result["native_messages"], "native_messages", native)
    if native is not None:
        session = store_native(session, provider.name, native)
    return session


def check_inputs(action: str, inputs: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """Check ``params`` against an action's declared ``inputs``; fill declared defaults.

    Raises:
        ActionInputError: an unknown, missing required or ill-typed input (named).
    """
    if not isinstance(params, Mapping):
        raise ActionInputError(f"params for action {action!r} must be a mapping", action=action)
    out: dict[str, Any] = {}
    for key in params:
        if key not in inputs:
            known = ", ".join(sorted(inputs)) or "none"
            raise ActionInputError(
                f"action {action!r} has no input {key!r} (declared inputs: {known})", action=action, input=key
            )
    for key, desc in inputs.items():
        desc = desc if isinstance(desc, Mapping) else {}
        if key not in params:
            if desc.get("required"):
                raise ActionInputError(f"action {action!r} needs the input {key!r}", action=action, input=key)
            if "default" in desc:
                out[key] = desc["default"]
            continue
        value = params[key]
        t = desc.get("type")
        py = _INPUT_TYPES.get(t) if isinstance(t, str) else None
        bad_bool = t in ("number", "integer") and isinstance(value, bool)
        if py is not None and (bad_bool or not isinstance(value, py)):
            raise ActionInputError(
                f"action {action!r}: input {key!r} must be {t}, got {type(value).__name__} ({value!r})",
                action=action, input=key,
            )
        out[key] = value
    return out
