"""The provider's finals seen in the core shape, for extensions that rewrite them.

An extension's closing ``process_chunk(None, ...)`` is handed the finals in the
provider's native shape: ``{"role", "content"}`` for the bundled providers, but
anything for a third party's (``{"who", "said"}``, a list of parts). An extension
written against the core shape would fail with a ``KeyError`` in front of such a
provider. While the closing step runs, the engine keeps here how to read the
provider's natives (its own ``from_native_messages``) and how to write one back
(its ``to_native_messages``), so :func:`agent_core.plugin_kit.rewrite_finals` can
hand a rewrite the core shape whatever the provider. A context variable, set and
reset around that one synchronous step (never across a ``yield``), so two
requests on one thread cannot see each other's provider.
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping
from typing import Any

from collections.abc import Callable

from .hooks import LivePlugin, call_hook

__all__ = ["NativeView", "core_shaped", "current_view", "misread_natives", "native_keys", "viewing"]


def core_shaped(message: Any) -> bool:
    """True for a message mapping the core shape reads: it has ``role`` and ``content``."""
    return isinstance(message, Mapping) and "role" in message and "content" in message


def native_keys(messages: Any) -> str:
    """The keys of the first message that is not core-shaped, for an error that shows the shape."""
    for m in messages or ():
        if isinstance(m, Mapping) and not core_shaped(m):
            return "{" + ", ".join(map(str, list(m)[:6])) + "}"
    return ""


def misread_natives(exc: BaseException, finals: Any, provider: Any) -> str | None:
    """What to tell an extension that read ``provider``'s native finals as core messages, or None.

    ``exc`` is what its ``process_chunk`` raised when handed ``finals``; a
    ``KeyError`` or ``TypeError`` over finals of another shape is that mistake.
    The engine's sentence, and ``check_plugin``'s.
    """
    keys = native_keys(finals) if isinstance(exc, (KeyError, TypeError)) else ""
    if not keys or provider is None:
        return None
    return (f"{type(exc).__name__}: {exc}; the finals it was handed are provider {provider.name!r}'s native "
            f"messages (shaped {keys}), not core {{role, content}} messages: rewrite them with "
            "agent_core.plugin_kit.rewrite_finals or rewrite_last_assistant, which hand the rewrite the core "
            "shape whatever the provider")


class NativeView:
    """How one provider call's natives read as core messages and back (see the module docstring)."""

    __slots__ = ("name", "call", "state")

    def __init__(self, name: str, call: Callable[..., Any], state: Any) -> None:
        self.name = name
        self.call = call  # call(hook, *args): the provider's hook, as the engine (or the test harness) calls it
        self.state = state

    def to_core(self, native: Mapping[str, Any]) -> dict[str, Any] | None:
        """``native`` as one core message dict, or None when the provider makes none of it."""
        out = self.call("from_native_messages", [native], self.state)
        return dict(out[0]) if out and isinstance(out[0], Mapping) else None

    def to_native(self, old: Mapping[str, Any], core: Mapping[str, Any], message: Mapping[str, Any]) -> dict[str, Any]:
        """``message`` (the rewrite of ``core``) written back in the native shape, over ``old``.

        Over ``old``, so native extras the provider's conversion does not know
        stay; what the rewrite added beside ``role`` and ``content`` (a
        ``reasoning_content``, changed ``metadata``) is kept on the native
        message too, where a core-shaped provider's final would have held it.
        """
        out = self.call("to_native_messages", [message], self.state)
        written = dict(out[0]) if out and isinstance(out[0], Mapping) else {}
        added = {k: v for k, v in message.items() if k not in ("role", "content") and core.get(k) != v}
        return {**old, **written, **added}


_VIEW: contextvars.ContextVar[NativeView | None] = contextvars.ContextVar("agent_core_native_view", default=None)


def current_view() -> NativeView | None:
    """The provider whose finals the closing step is handing round, or None outside it."""
    return _VIEW.get()


class viewing:  # noqa: N801 - used as a context manager, like contextlib's
    """``with viewing(provider, state): ...``: the closing step of one provider call.

    ``provider`` is the engine's live plugin, or a ``NativeView`` a test harness made (None: no provider).
    """

    __slots__ = ("view", "token")

    def __init__(self, provider: LivePlugin | NativeView | None, state: Any = None) -> None:
        self.view = provider if provider is None or isinstance(provider, NativeView) else NativeView(
            provider.name, lambda hook, *args: call_hook(provider, hook, *args), state)
        self.token: Any = None

    def __enter__(self) -> NativeView | None:
        self.token = _VIEW.set(self.view)
        return self.view

    def __exit__(self, *exc: object) -> None:
        _VIEW.reset(self.token)
