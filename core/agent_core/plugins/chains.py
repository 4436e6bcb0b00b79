"""The conversion chains: provider, then extensions, then features, each folding over the last one's result.

One helper per chain shape, used by the request run and by the engine's
public calls (``execute_action`` converts a session's history with the same
:func:`to_native` a request does), so the two can never drift apart.

An extension or feature that does not define a chain's hook is passed over:
the defaults hand their input on unchanged (``init`` the state,
``to_native_messages`` the native list, ``from_native_messages`` the core
list, ``initialize_request`` both), so calling them only copied and checked
again what the plugin before had returned.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..errors import PluginError
from ..values.frozen import FrozenList
from ..values.json_values import freeze_json
from ..values.messages import Message, Session
from ..values.native_history import load_native
from .finals_check import final_fault
from .answers import expect_tuple, frozen_list, frozen_map
from .hooks import LivePlugin, call_hook

__all__ = ["Built", "core_dicts", "from_native", "init_state", "initialize_request", "finalize_chain", "session_native",
           "tail", "to_native"]


def tail(messages: Sequence[Message], start: int) -> list[Message]:
    """``messages[start:]`` without copying the head (a session's vector slices in O(length))."""
    return [messages[i] for i in range(start, len(messages))]


def init_state(provider: LivePlugin, chain: Iterable[LivePlugin], own_config: Any) -> Any:
    """The init chain: provider ``init(config)``, then each plugin's ``init(config, state)``."""
    state = frozen_map(provider, "init", call_hook(provider, "init", own_config(provider)), "state")
    for p in chain:
        if "init" in p.defined:
            state = frozen_map(p, "init", call_hook(p, "init", own_config(p), state), "state")
    return state


def to_native(
    provider: LivePlugin, chain: Sequence[LivePlugin], core: Sequence[Message], state: Any, ctx: Any,
) -> FrozenList:
    """Convert core messages to native ones: provider, then every extension and feature in order."""
    core_list = FrozenList.from_frozen([m.as_mapping() for m in core])
    native = frozen_list(provider, "to_native_messages",
                         call_hook(provider, "to_native_messages", core_list, state, context=ctx), "native messages")
    for p in chain:
        if "to_native_messages" not in p.defined:
            continue
        native = frozen_list(p, "to_native_messages",
                             call_hook(p, "to_native_messages", core_list, native, state, context=ctx),
                             "native messages")
    # checked here, where it comes in, so storing the history later walks only what is new
    return freeze_json(native, f"native messages of {provider.name!r}")  # type: ignore[no-any-return]


def session_native(
    provider: LivePlugin, chain: Sequence[LivePlugin], session: Session, state: Any, ctx: Any,
) -> FrozenList:
    """The session's native history for ``provider``: the stored one plus the messages it does not cover."""
    native, covered = load_native(session, provider.name)
    if covered < len(session.messages) or not native:
        delta = to_native(provider, chain, tail(session.messages, covered), state, ctx)
        native = FrozenList.joined(native, delta)
    return native


def initialize_request(
    provider: LivePlugin, chain: Sequence[LivePlugin], native: Any, state: Any, request_id: str, ctx: Any,
) -> tuple[Any, Any]:
    """``initialize_request``: provider (with ``request_id``), then extensions and features."""
    native, state = _pair(provider, "initialize_request", native, state, request_id=request_id, context=ctx)
    for p in chain:
        if "initialize_request" in p.defined:
            native, state = _pair(p, "initialize_request", native, state, context=ctx)
    return native, state


def _pair(p: LivePlugin, hook: str, native: Any, state: Any, **kw: Any) -> tuple[Any, Any]:
    out = expect_tuple(p, hook, call_hook(p, hook, native, state, **kw), 2, "(native_messages, state)")
    new_native, new_state = out
    if new_native is not native:
        new_native = frozen_list(p, hook, new_native, "native_messages", native)
    if new_state is not state:
        new_state = frozen_map(p, hook, new_state, "state")
    return new_native, new_state


def finalize_chain(chain: Sequence[LivePlugin], finals: Any, native: Any, state: Any, ctx: Any) -> tuple[Any, Any, Any]:
    """Extensions' then features' ``finalize`` over the provider call's finals."""
    for p in chain:
        if "finalize" not in p.defined:  # the default hands all three back
            continue
        out = expect_tuple(p, "finalize", call_hook(p, "finalize", finals, native, state, context=ctx), 3,
                           "(final_messages, native_messages, state)")
        given, finals = finals, frozen_list(p, "finalize", out[0], "final_messages")
        if finals is not given:  # new finals are checked here, so a bad one names this plugin, not the provider
            _check_new_finals(p, finals, given)
        native = out[1] if out[1] is native else frozen_list(p, "finalize", out[1], "native_messages", native)
        state = out[2] if out[2] is state else frozen_map(p, "finalize", out[2], "state")
    return finals, native, state


def _check_new_finals(plugin: LivePlugin, finals: Any, given: Any) -> None:
    """Each final ``plugin`` made (not one it handed on) must be a mapping JSON can carry."""
    kept = {id(m) for m in given}
    for i, m in enumerate(finals):
        if id(m) not in kept and (fault := final_fault(m, i)) is not None:
            raise PluginError(plugin.name, "finalize", TypeError(type(m).__name__), detail=fault)


def from_native(provider: LivePlugin, chain: Sequence[LivePlugin], finals: Any, state: Any, ctx: Any,
                built: Built | None = None) -> FrozenList:
    """Convert a call's native finals to core message dicts: provider, then extensions and features."""
    core = core_dicts(provider, "from_native_messages",
                      call_hook(provider, "from_native_messages", finals, state, context=ctx), built)
    for p in chain:
        if "from_native_messages" in p.defined:
            core = core_dicts(p, "from_native_messages",
                              call_hook(p, "from_native_messages", finals, core, state, context=ctx), built)
    return core


#: the messages :func:`core_dicts` built, by the id of the frozen dict each came from (the dict kept beside it)
Built = dict[int, tuple[Any, Message]]


def core_dicts(plugin: LivePlugin, hook: str, value: Any, built: Built | None = None) -> FrozenList:
    """A hook's list of core message dicts, frozen and checked to build a :class:`Message` each.

    The check is the build. With ``built``, each message is kept there, and a
    dict that was built before (a plugin in the chain handed on the one it
    was given, which frozen, cannot have changed) is not built again: the
    chain's plugins mostly pass the messages through, and the turn then takes
    the messages from ``built`` rather than making them a last time.
    """
    msgs = frozen_list(plugin, hook, value, "core messages")
    for m in msgs:
        if built is not None:
            had = built.get(id(m))
            if had is not None and had[0] is m:
                continue
        try:
            message = Message.from_dict(m)
        except (TypeError, ValueError, KeyError) as exc:
            raise PluginError(plugin.name, hook, exc, detail=f"returned an invalid core message {m!r}: {exc}") from exc
        if built is not None:
            built[id(m)] = (m, message)
    return msgs
