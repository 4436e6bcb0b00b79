"""What kind a plugin is, how the engine calls its hooks, and how values are shown in failures.

Shared by :class:`~agent_core.testing.PluginHarness` and
:func:`~agent_core.testing.check_plugin`, so both read a plugin the same way
the engine does.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .. import (
    BaseFeature,
    BaseProvider,
    BaseProviderExtension,
    BaseTool,
    FeaturePlugin,
    FrozenDict,
    FrozenList,
    ProviderExtensionPlugin,
    ProviderPlugin,
    ToolPlugin,
    thaw,
)

__all__ = ["PROTOCOLS", "fit_call", "plugin_kind", "short"]


#: kind -> the protocol whose bodies are the defaults for hooks a plugin leaves out
PROTOCOLS: dict[str, type] = {
    "provider": ProviderPlugin,
    "extension": ProviderExtensionPlugin,
    "feature": FeaturePlugin,
    "tool": ToolPlugin,
}

_TOOL_HOOKS = ("get_tool_schemas", "execute_tool", "execute_tool_async", "stream_tool", "stream_tool_async")
_PROVIDER_HOOKS = ("stream_api", "call_api", "astream_api", "acall_api")
_FEATURE_ONLY = ("prepare_tools", "get_completions", "apply_completion")


def plugin_kind(plugin: Any) -> str:
    """``provider``, ``extension``, ``feature`` or ``tool``, read from the hooks a plugin defines.

    A provider calls an API (``stream_api``/``call_api``), a tool offers
    schemas or runs calls, an extension sees chunks (``process_chunk``); any
    other plugin is a feature. Pass ``kind=`` to the harness when this guess
    is wrong (an extension with no ``process_chunk``).
    """
    cls = plugin if isinstance(plugin, type) else type(plugin)
    for base, kind in ((BaseProvider, "provider"), (BaseProviderExtension, "extension"),
                       (BaseFeature, "feature"), (BaseTool, "tool")):
        if issubclass(cls, base):
            return kind
    if any(hasattr(cls, h) for h in _PROVIDER_HOOKS):
        return "provider"
    if any(hasattr(cls, h) for h in _TOOL_HOOKS):
        return "tool"
    if hasattr(cls, "process_chunk"):
        return "extension"
    return "feature"


def fit_call(fn: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
    """Call ``fn`` with as many of ``args`` as it takes and the ``kwargs`` it names (the engine's rule)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return fn(*args, **kwargs)
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        npos = len(args)
    else:
        npos = sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
    names = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    var_kw = any(p.kind is p.VAR_KEYWORD for p in params)
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][: len(args)]
    kw = {k: v for k, v in kwargs.items() if (var_kw or k in names) and k not in positional[:npos]}
    return fn(*args[:npos], **kw)


def short(value: Any, limit: int = 300) -> str:
    text = repr(thaw(value) if isinstance(value, (FrozenDict, FrozenList)) else value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
