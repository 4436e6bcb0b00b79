"""Registered plugins and how the engine calls their hooks.

A plugin may implement a hook with fewer parameters than the protocol lists (the seed's
examples leave out ``context``, ``request_id`` and sometimes ``state``), or leave it out.
Both are settled once per plugin class: :func:`spec_for` inspects every hook's signature
and records how to call it, so a call costs a bound method call (plus, for a narrower
signature, one small closure); a missing hook is bound to the protocol's default body. A
hook that *needs* more than the protocol gives fails at registration with a
:class:`~agent_core.errors.ConfigError` naming the plugin, the hook and the signature.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from ..errors import ConfigError, LLMError, PluginError, ProviderRequestCancelled
from .contract import PROVIDER_TWINS, parse_signature
from .near_miss import check_positions, warn_near_misses
from .ui_elements import check_declared_ui
from .protocols import (
    HOOKS,
    FeaturePlugin,
    ProviderExtensionPlugin,
    ProviderPlugin,
    ToolPlugin,
)

__all__ = ["KINDS", "LivePlugin", "PluginSpec", "call_hook", "cancel_provider_call", "spec_for"]

#: kind name -> the protocol whose bodies are the defaults
KINDS: dict[str, type] = {
    "provider": ProviderPlugin,
    "extension": ProviderExtensionPlugin,
    "feature": FeaturePlugin,
    "tool": ToolPlugin,
}

#: async twins a provider may offer beside the protocol's sync hooks
_EXTRA_HOOKS: dict[str, tuple[str, ...]] = {"provider": tuple(PROVIDER_TWINS)}


@dataclass(frozen=True)
class _Shape:
    positional: tuple[str, ...]
    keywords: tuple[str, ...]


def _contract_shape(signature: str) -> _Shape:
    params = parse_signature(signature)
    return _Shape(tuple(p.name for p in params if not p.keyword_only), tuple(p.name for p in params if p.keyword_only))


#: kind -> hook -> how the engine calls it, read from the protocols' signatures (agent_core.plugins.protocols.HOOKS)
_SHAPES: dict[str, dict[str, _Shape]] = {
    kind: {name: _contract_shape(spec.signature) for name, spec in hooks.items()} for kind, hooks in HOOKS.items()
}
#: every hook name of every kind: a class may be a plugin of several kinds at once
_ALL_HOOK_NAMES = frozenset(h for hooks in _SHAPES.values() for h in hooks) | frozenset(
    h for hooks in _EXTRA_HOOKS.values() for h in hooks)
for _twin, _sync in PROVIDER_TWINS.items():
    _SHAPES["provider"][_twin] = _SHAPES["provider"][_sync]


@dataclass(frozen=True)
class _Binding:
    """How to call one hook of one plugin class."""

    defined: bool
    is_async: bool
    npos: int  # protocol positionals passed positionally
    pos_as_kw: tuple[tuple[int, str], ...]  # protocol positionals passed by keyword
    keywords: tuple[str, ...]  # protocol keywords the hook accepts
    direct: bool  # the hook takes exactly the protocol's parameters
    default: Callable[..., Any] | None = None
    ui_legacy: str | None = None  # for get_ui_elements: which legacy shape


def _unwrap(cls: type, name: str) -> tuple[Callable[..., Any], bool]:
    raw = inspect.getattr_static(cls, name)
    if isinstance(raw, staticmethod):
        return raw.__func__, False
    if isinstance(raw, classmethod):
        return raw.__func__, True
    return raw, True


def _bind_shape(plugin: str, kind: str, hook: str, func: Callable[..., Any], drop_first: bool) -> _Binding:
    shape = _SHAPES[kind][hook]
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):  # builtins without signatures: trust them
        return _Binding(True, False, len(shape.positional), (), shape.keywords, True)
    if drop_first and params:
        params = params[1:]
    var_pos = any(p.kind is p.VAR_POSITIONAL for p in params)
    var_kw = any(p.kind is p.VAR_KEYWORD for p in params)
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    by_name = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    npos = len(shape.positional) if var_pos else min(len(shape.positional), len(positional))
    check_positions(plugin, hook, [p.name for p in positional[:npos]], shape.positional)
    required_pos = [p for p in positional if p.default is p.empty]
    if len(required_pos) > len(shape.positional):
        expected = ", ".join(shape.positional + tuple(f"*, {k}" for k in shape.keywords[:1]) + shape.keywords[1:])
        raise ConfigError(
            f"plugin {plugin!r}: hook {hook!r} requires {len(required_pos)} positional arguments, "
            f"but the engine passes at most {len(shape.positional)} ({expected})",
            plugins=[plugin],
        )
    pos_as_kw = tuple(
        (i, n) for i, n in enumerate(shape.positional) if i >= npos and (n in by_name or var_kw)
    )
    keywords = tuple(k for k in shape.keywords if k in by_name or var_kw)
    missing_kwonly = [
        p.name for p in params if p.kind is p.KEYWORD_ONLY and p.default is p.empty and p.name not in shape.keywords
    ]
    if missing_kwonly:
        raise ConfigError(
            f"plugin {plugin!r}: hook {hook!r} requires keyword argument(s) {missing_kwonly} "
            "that the engine does not pass",
            plugins=[plugin],
        )
    direct = npos == len(shape.positional) and not pos_as_kw and keywords == shape.keywords
    is_async = inspect.iscoroutinefunction(func) or inspect.isasyncgenfunction(func)
    return _Binding(True, is_async, npos, pos_as_kw, keywords, direct)


def _ui_legacy_shape(plugin: str, func: Callable[..., Any], drop_first: bool) -> str:
    params = list(inspect.signature(func).parameters.values())
    if drop_first and params:
        params = params[1:]
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
    kw_required = [p.name for p in params if p.kind is p.KEYWORD_ONLY and p.default is p.empty]
    if len(required) > 4 or kw_required:
        raise ConfigError(
            f"plugin {plugin!r}: get_ui_elements must take (config, context=None), or a legacy shape: "
            "(), (config), (config, tags, models), (config, tags, models, context)",
            plugins=[plugin],
        )
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return "canonical"
    if not names:
        return "none"
    if len(names) == 1:
        return "config"
    if len(names) == 2 or names[1] == "context":
        return "canonical"
    if len(names) == 3:
        return "tags_models"
    return "tags_models_context"


@dataclass(frozen=True)
class PluginSpec:
    """A registered plugin: identity plus a binding for every hook of its kind."""

    kind: str
    name: str
    factory: Callable[[], Any]
    cls: type
    priority: int
    version: str
    default_enabled: bool
    bindings: Mapping[str, _Binding] = field(repr=False)
    #: the hooks the class itself defines: asked many times a request, so a set, made once here;
    #: ``direct``: those whose bound method takes the protocol's arguments as they are (no adapter)
    defined: frozenset[str] = field(init=False, repr=False, compare=False)
    direct: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        bindings = self.bindings.items()
        object.__setattr__(self, "defined", frozenset(h for h, b in bindings if b.defined))
        object.__setattr__(self, "direct", frozenset(
            h for h, b in bindings if b.defined and b.direct and b.ui_legacy is None))

    def defines(self, hook: str) -> bool:
        return hook in self.defined

    def is_async(self, hook: str) -> bool:
        b = self.bindings.get(hook)
        return b is not None and b.defined and b.is_async

    def bind(self, instance: Any, hook: str) -> Callable[..., Any]:
        """A callable taking the protocol's arguments, adapted to this plugin."""
        b = self.bindings[hook]
        if not b.defined:
            assert b.default is not None
            return partial(b.default, instance)
        method = getattr(instance, hook)
        if b.ui_legacy is not None:
            return _ui_adapter(method, b.ui_legacy)
        if b.direct:
            return method
        npos, pos_as_kw, keywords = b.npos, b.pos_as_kw, b.keywords

        def call(*args: Any, **kwargs: Any) -> Any:
            kw = {k: kwargs[k] for k in keywords if k in kwargs}
            for i, n in pos_as_kw:
                if i < len(args):
                    kw[n] = args[i]
            return method(*args[:npos], **kw)

        return call


def _ui_adapter(method: Callable[..., Any], shape: str) -> Callable[..., Any]:
    def call(config: Any, context: Any = None) -> Any:
        ctx = context or {}
        if shape == "none":
            return method()
        if shape == "config":
            return method(config)
        if shape == "canonical":
            return method(config, context)
        if shape == "tags_models":
            return method(config, ctx.get("tags", []), ctx.get("models", []))
        return method(config, ctx.get("tags", []), ctx.get("models", []), context)

    return call


_SPEC_CACHE: dict[tuple[type, str], dict[str, _Binding]] = {}


def _bindings_for(cls: type, kind: str, plugin: str) -> dict[str, _Binding]:
    cached = _SPEC_CACHE.get((cls, kind))
    if cached is not None:
        return cached
    proto = KINDS[kind]
    out: dict[str, _Binding] = {}
    for hook in _SHAPES[kind]:
        default = getattr(proto, hook, None)
        impl = inspect.getattr_static(cls, hook, None)
        proto_impl = inspect.getattr_static(proto, hook, None)
        if impl is None or impl is proto_impl:
            out[hook] = _Binding(False, False, 0, (), (), False, default=default)
            continue
        func, drop_first = _unwrap(cls, hook)
        if not callable(func):
            raise ConfigError(f"plugin {plugin!r}: {hook!r} must be a method", plugins=[plugin])
        if hook == "get_ui_elements":
            out[hook] = _Binding(True, False, 0, (), (), False, ui_legacy=_ui_legacy_shape(plugin, func, drop_first))
        else:
            out[hook] = _bind_shape(plugin, kind, hook, func, drop_first)
    _SPEC_CACHE[(cls, kind)] = out
    return out


def spec_for(kind: str, factory: Any) -> PluginSpec:
    """Inspect a plugin class (or zero-argument factory) once and describe it.

    Raises:
        ConfigError: the object is not a class or callable, or a hook's
            signature cannot be satisfied.
    """
    if kind not in KINDS:
        raise ConfigError(f"unknown plugin kind {kind!r}")
    if isinstance(factory, type):
        cls = factory
        probe: Any = cls
    elif callable(factory):
        try:
            probe = factory()
        except Exception as exc:  # noqa: BLE001 - report which factory failed
            raise ConfigError(f"plugin factory {factory!r} failed when called: {exc}") from exc
        cls = type(probe)
    else:
        raise ConfigError(
            f"{kind} plugins are registered as classes or zero-argument factories; got {factory!r}"
        )
    name = getattr(probe, "name", None) or cls.__name__
    if not isinstance(name, str):
        raise ConfigError(f"plugin {cls.__name__}: name must be a string, got {name!r}")
    priority = getattr(probe, "priority", 100)
    if isinstance(priority, bool) or not isinstance(priority, (int, float)):
        raise ConfigError(f"plugin {name!r}: priority must be a number, got {priority!r}", plugins=[name])
    if kind == "provider" and not any(
        inspect.getattr_static(cls, h, None) is not None for h in ("stream_api", "call_api", "astream_api", "acall_api")
    ):
        raise ConfigError(
            f"provider {name!r} defines none of stream_api, call_api, astream_api, acall_api", plugins=[name]
        )
    bindings = dict(_bindings_for(cls, kind, name))
    warn_near_misses(cls, kind, name, set(_SHAPES[kind]) | set(_EXTRA_HOOKS.get(kind, ())), _ALL_HOOK_NAMES)
    check_declared_ui(cls, name)  # a declared ui_elements: each element's fields, with did-you-mean
    for extra in _EXTRA_HOOKS.get(kind, ()):
        if inspect.getattr_static(cls, extra, None) is not None:
            func, drop_first = _unwrap(cls, extra)
            bindings[extra] = _bind_shape(name, kind, extra, func, drop_first)
        else:
            bindings[extra] = _Binding(False, False, 0, (), (), False, default=None)
    return PluginSpec(kind=kind, name=name, factory=factory, cls=cls, priority=priority,
                      version=str(getattr(probe, "version", "unknown")),
                      default_enabled=bool(getattr(probe, "default_enabled", True)), bindings=bindings)


class LivePlugin:
    """One plugin instance for one request, with its hooks bound on first use."""

    # ``name`` and ``defined`` are the spec's, copied: a request reads them hundreds of times
    __slots__ = ("_bound", "defined", "instance", "name", "secrets", "spec")

    def __init__(self, spec: PluginSpec, instance: Any) -> None:
        self.spec = spec
        self.instance = instance
        self.name: str = spec.name
        self.defined: frozenset[str] = spec.defined
        self._bound: dict[str, Callable[..., Any]] = {}
        self.secrets: Mapping[str, Any] = {}  # the secret config values this plugin declares (set by resolve)

    def hook(self, name: str) -> Callable[..., Any]:
        fn = self._bound.get(name)
        if fn is None:
            direct, instance = name in self.spec.direct, self.instance
            fn = self._bound[name] = getattr(instance, name) if direct else self.spec.bind(instance, name)
        return fn

    def defines(self, name: str) -> bool:
        return name in self.defined

    def __repr__(self) -> str:
        return f"<{self.spec.kind} {self.spec.name!r}>"


def call_hook(plugin: LivePlugin, hook: str, *args: Any, **kwargs: Any) -> Any:
    """Call a hook; any exception but a typed LLM or config error becomes a PluginError.

    A ``ConfigError`` passes through as it is: a plugin that finds its config
    unusable (a key with a control character, say) reports the config, not
    itself, and the error must not be wrapped in text that could quote it.
    """
    try:
        fn = plugin._bound.get(hook)
        if fn is None:  # bound once per instance, here rather than through LivePlugin.hook: frames less
            direct, instance = hook in plugin.spec.direct, plugin.instance
            fn = plugin._bound[hook] = getattr(instance, hook) if direct else plugin.spec.bind(instance, hook)
        return fn(*args, **kwargs)
    except (LLMError, ProviderRequestCancelled, PluginError, ConfigError):
        raise
    except Exception as exc:
        raise PluginError(plugin.name, hook, exc) from exc


def cancel_provider_call(provider: LivePlugin, request_id: str) -> None:
    """Tell ``provider`` to drop its call for ``request_id``; a failing ``cancel_request`` hook is only a warning."""
    try:
        call_hook(provider, "cancel_request", request_id)
    except PluginError as exc:
        warnings.warn(f"cancel_request of {provider.name!r} failed: {exc}", RuntimeWarning, stacklevel=2)
