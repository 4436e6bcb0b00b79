"""Hooks that only answer fixed data, declared as class attributes instead of written as methods.

Most plugins switch themselves on with fixed tags and offer a fixed config
schema, fixed UI elements and fixed actions: hooks whose whole body is
``return [...]``. A subclass of :class:`Extension`, :class:`Feature` or
:class:`~agent_core.plugin_kit.Tool` declares that data instead:

=================  =====================
attribute          the hook it answers
=================  =====================
``requires``       ``required_tags``
``forbids``        ``forbidden_tags``
``config_schema``  ``get_config_schema``
``ui_elements``    ``get_ui_elements``
``actions``        ``get_actions`` (extensions and features)
``tool_schemas``   ``get_tool_schemas`` (tools)
=================  =====================

Only the attributes a class declares become hooks, as with :class:`Tool`'s
methods: the engine passes over a hook a plugin does not define, and a
method the class writes itself wins over its attribute. The classes are the
protocol bases (:class:`~agent_core.BaseProviderExtension`,
:class:`~agent_core.BaseFeature`), so every hook left out keeps its default.
"""

from __future__ import annotations

import difflib
import warnings
from collections.abc import Mapping
from typing import Any

from ..errors import UnknownHookWarning
from ..plugins.near_miss import caller_level
from ..plugins.protocols import BaseFeature, BaseProviderExtension

__all__ = ["DECLARED_HOOKS", "Extension", "Feature", "install_declared"]

#: the class attribute -> the hook it answers
DECLARED_HOOKS = {
    "requires": "required_tags",
    "forbids": "forbidden_tags",
    "config_schema": "get_config_schema",
    "ui_elements": "get_ui_elements",
    "actions": "get_actions",
}


class _Answers:
    """The hooks that answer from the declared attributes (fresh lists: a hook's result is the engine's)."""

    def required_tags(self: Any) -> list[str]:
        return list(self.requires)

    def forbidden_tags(self: Any) -> list[str]:
        return list(self.forbids)

    def get_config_schema(self: Any) -> dict[str, Any]:
        return dict(self.config_schema)

    def get_ui_elements(self: Any, config: Mapping[str, Any], context: Mapping[str, Any] | None = None) -> list[Any]:
        return list(self.ui_elements)

    def get_actions(self: Any, state: Mapping[str, Any]) -> list[Any]:
        return list(self.actions)

    def get_tool_schemas(self: Any, state: Mapping[str, Any], *, prepared: Any = None) -> list[Any]:
        return list(self.tool_schemas)


def install_declared(cls: type, hooks: Mapping[str, str]) -> None:
    """Give ``cls`` the hook of each attribute in ``hooks`` that it declares itself and whose hook it does not write.

    Checked as the class is made, where a mistake is cheapest to see: tags given as one string
    (``requires = "streaming"`` would read as nine one-letter tags) are a ``TypeError``, and a
    data attribute named almost like a declared one (``config_shema``) warns, since it answers
    nothing.

    Raises:
        TypeError: ``requires`` or ``forbids`` is not a list, tuple or set of strings.
    """
    for attr in ("requires", "forbids"):
        tags = cls.__dict__.get(attr)
        if tags is not None and (not isinstance(tags, (list, tuple, set, frozenset))
                                 or not all(isinstance(t, str) for t in tags)):
            raise TypeError(f"{cls.__qualname__}.{attr} must be a list of tag strings, e.g. {attr} = "
                            f"({tags!r},), got {type(tags).__name__} {tags!r:.60}")
    for attr, value in cls.__dict__.items():
        if attr.startswith("_") or attr in hooks or callable(value) or isinstance(value, (classmethod, staticmethod)):
            continue
        close = difflib.get_close_matches(attr, list(hooks), n=1, cutoff=0.8)
        if close:
            name = str(cls.__dict__.get("name", cls.__qualname__))
            warnings.warn(UnknownHookWarning(
                f"plugin {name!r} declares {attr!r}, which the plugin kit does not read, so it answers nothing; "
                f"did you mean {close[0]!r}?", plugin=name, name=attr, suggestion=close[0]), stacklevel=caller_level())
    for attr, hook in hooks.items():
        if attr in cls.__dict__ and hook not in cls.__dict__:
            setattr(cls, hook, _Answers.__dict__[hook])


class Extension(BaseProviderExtension):
    """A provider extension that may declare ``requires``, ``forbids``, ``config_schema``, ``ui_elements``, ``actions``."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        install_declared(cls, DECLARED_HOOKS)


class Feature(BaseFeature):
    """A feature that may declare ``requires``, ``forbids``, ``config_schema``, ``ui_elements``, ``actions``."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        install_declared(cls, DECLARED_HOOKS)
