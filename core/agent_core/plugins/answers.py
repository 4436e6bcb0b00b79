"""What a hook hands back, checked once where it comes in: its shape, then frozen.

Each check names the plugin and the hook when the answer is unusable, so an
error says who returned what; an answer that is already frozen passes as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..errors import InvalidValueError, PluginError
from ..values.frozen import FrozenDict, FrozenList, freeze
from ..values.native_history import freeze_over
from .hooks import LivePlugin

__all__ = ["expect_tuple", "frozen_list", "frozen_map"]


def expect_tuple(plugin: LivePlugin, hook: str, value: Any, size: int, what: str) -> tuple[Any, ...]:
    """Check a hook returned a ``size``-tuple; name plugin and hook when not."""
    if isinstance(value, (tuple, list)) and len(value) == size:
        return tuple(value)
    raise PluginError(
        plugin.name, hook, TypeError("bad return value"),
        detail=(f"returned a {len(value)}-{type(value).__name__}" if isinstance(value, (tuple, list))
                else f"returned {type(value).__name__}") + f", expected a {size}-tuple {what}",
    )


def frozen_list(plugin: LivePlugin, hook: str, value: Any, what: str, base: Any = None) -> Any:
    """Freeze a hook's list result, checking that it is a list.

    ``base`` is the frozen list the hook was handed, when the result is
    likely built on it (a native history): its shared head is then not
    walked again (see :func:`freeze_over`).
    """
    if value.__class__ is FrozenList:
        return value
    return _checked(plugin, hook, value, what, isinstance(value, (list, tuple)), "a list",
                    freeze if base is None else lambda v: freeze_over(v, base))


def frozen_map(plugin: LivePlugin, hook: str, value: Any, what: str) -> Any:
    """Freeze a hook's mapping result, checking that it is a mapping."""
    if value.__class__ is FrozenDict:
        return value
    return _checked(plugin, hook, value, what, isinstance(value, Mapping), "a mapping", freeze)


def _checked(plugin: LivePlugin, hook: str, value: Any, what: str, fits: bool, expected: str,
             frozen: Callable[[Any], Any]) -> Any:
    """``frozen(value)`` when the value has the kind of container expected; else an error naming plugin and hook."""
    if not fits:
        raise PluginError(plugin.name, hook, TypeError("bad return value"),
                          detail=f"returned {type(value).__name__} for {what}, expected {expected}")
    try:
        return frozen(value)
    except InvalidValueError as exc:
        raise PluginError(plugin.name, hook, exc, detail=f"returned {what} that cannot be used: {exc}") from exc
