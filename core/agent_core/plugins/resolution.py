"""Which plugins run for a request, and why: tag-based enablement.

Theory of operation
-------------------
1. The provider is the one ``config["provider"]`` names (or the only one).
2. Candidates are the registered extensions, features and tools that are not
   switched off: ``disabled_plugins`` removes a plugin unless
   ``force_enabled_plugins`` also names it (force wins); an opt-in plugin
   (``default_enabled = False``) is a candidate only when ``enabled_plugins``
   or ``force_enabled_plugins`` names it.
3. Models: the provider's ``get_models``, then every candidate extension's,
   then every candidate feature's.
4. Tags and enablement are a fixed point. Tags are the union of the
   provider's and every *enabled* plugin's ``get_tags``, and whether a plugin
   is enabled depends on the tags, so we start with every candidate enabled
   and repeat: forced plugins are on; otherwise ``is_enabled`` decides when
   it returns True/False, and when it returns None the plugin needs all its
   ``required_tags`` and none of its ``forbidden_tags``. The loop ends when
   the enabled set repeats itself: the same set twice in a row is the fixed
   point; an older set coming back is an oscillation, reported as a
   :class:`ConfigError` naming the plugins that keep flipping.
5. Each chain is ordered by ``priority`` then name, never by registration
   or discovery order.

A session may carry ``metadata["plugins"]``: an explicit list of the plugin
ids enabled for requests on it (the original platform's rule). It replaces
step 2's default: an unlisted extension, feature or tool is off (even when
forced), a listed one is a candidate as if named in ``enabled_plugins``;
``disabled_plugins`` and the tag rules still apply. The provider is always
the one the config names.

``get_models`` results can be cached per config (``AgentCore(model_cache=
{})``): the key is a digest of the provider, the candidates and the config,
so a different config never reads another's models.

Each plugin's tags are asked for once per resolution (``get_tags`` must be
pure); ``is_enabled`` is asked each round because its inputs change.

Config reaches each plugin through :func:`own_config`: the effective config
with secret values (see :mod:`agent_core.plugins.config`) shown as ``"<redacted>"``,
except the keys the plugin itself declares. ``Resolution.config`` is the
redacted view; a key no registered plugin declares is reported by an
:class:`~agent_core.errors.UnknownConfigKeyWarning` (``Resolution.warnings``),
or refused with :class:`ConfigError` under ``strict_config: true``.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError, PluginError
from ..values.frozen import FrozenDict, FrozenList, freeze
from .config import (
    check_engine_keys,
    effective_config,
    owned_secrets,
    parse_schema,
    redact,
    refuse_placeholders,
    secret_keys,
)
from .hooks import LivePlugin, PluginSpec, call_hook
from .selection import (
    by_priority,
    check_unknown,
    instantiate,
    model_list,
    models_key,
    pick_provider,
    registry_fields,
    session_plugins,
    string_list,
)

__all__ = ["PluginRef", "Resolution", "own_config", "resolve", "session_plugins"]

CHAIN_KINDS = ("extension", "feature", "tool")
_PLURAL = {"provider": "providers", "extension": "extensions", "feature": "features", "tool": "tools"}


class PluginRef(str):
    """A resolved plugin's name (compares equal to the name string).

    Also carries the plugin's ``kind``, ``priority``, ``version`` and class.
    """

    kind: str
    priority: float
    version: str
    cls: type

    def __new__(cls, spec: PluginSpec) -> PluginRef:
        ref = super().__new__(cls, spec.name)
        ref.kind = spec.kind
        ref.priority = spec.priority
        ref.version = spec.version
        ref.cls = spec.cls
        return ref

    @property
    def name(self) -> str:
        return str(self)


@dataclass(frozen=True)
class Resolution:
    """The outcome of plugin resolution for one config.

    Attributes:
        provider: the provider that runs.
        extensions, features, tools: the enabled plugins, in run order.
        tags: the final tag set, sorted.
        models: model descriptors after every candidate's ``get_models``.
        reasons: plugin name -> a sentence saying why it is on or off.
        config: the effective config (caller's keys plus plugin defaults),
            secret values shown as ``"<redacted>"``.
        warnings: one sentence per config key that nothing declares (the
            ``start`` event carries them too).
    """

    provider: PluginRef
    extensions: tuple[PluginRef, ...]
    features: tuple[PluginRef, ...]
    tools: tuple[PluginRef, ...]
    tags: tuple[str, ...]
    models: tuple[Any, ...]
    reasons: Mapping[str, str]
    config: FrozenDict = field(repr=False)
    live: Mapping[str, Any] = field(repr=False, compare=False, default_factory=dict)
    warnings: tuple[str, ...] = ()

    @property
    def enabled(self) -> tuple[PluginRef, ...]:
        return (self.provider, *self.extensions, *self.features, *self.tools)


def own_config(plugin: LivePlugin, config: FrozenDict) -> FrozenDict:
    """``config`` as ``plugin`` may see it: with the secret values it declares itself."""
    return config.merged(plugin.secrets) if plugin.secrets else config


def resolve(
    registry: Mapping[str, Sequence[PluginSpec]],
    user_config: Mapping[str, Any],
    *,
    only: frozenset[str] | None = None,
    model_cache: MutableMapping[str, Any] | None = None,
) -> Resolution:
    """Resolve the plugins for ``user_config`` (see the module docstring).

    Plugin instances made here are the ones the request then uses, available
    in ``Resolution.live`` by name. ``only`` is a session's explicit plugin
    list; ``model_cache`` keeps ``get_models`` results per config.

    Raises:
        ConfigError: bad engine keys, unknown provider, a value of the wrong
            type, conflicting declarations, or oscillating enablement.
        PluginError: a plugin hook raised while resolving.
    """
    if not isinstance(user_config, Mapping):
        raise ConfigError(f"config must be a mapping, got {type(user_config).__name__}")
    check_engine_keys(user_config)
    provider_spec = pick_provider(registry.get("provider", ()), user_config)
    disabled = set(user_config.get("disabled_plugins") or ())
    forced = set(user_config.get("force_enabled_plugins") or ())
    opted_in = set(user_config.get("enabled_plugins") or ())
    reasons: dict[str, str] = {provider_spec.name: "selected provider"}

    candidates: dict[str, list[PluginSpec]] = {}
    for kind in CHAIN_KINDS:
        cands = []
        for spec in registry.get(kind, ()):
            if only is not None and spec.name not in only:
                reasons[spec.name] = "off: not in the session's metadata 'plugins' list"
            elif spec.name in disabled and spec.name not in forced:
                reasons[spec.name] = "off: named in disabled_plugins"
            elif only is not None:
                cands.append(spec)
            elif not spec.default_enabled and spec.name not in opted_in and spec.name not in forced:
                reasons[spec.name] = "off: opt-in plugin (default_enabled = False) not named in enabled_plugins"
            else:
                cands.append(spec)
        candidates[kind] = by_priority(cands)

    provider = instantiate(provider_spec)
    live: dict[str, LivePlugin] = {provider_spec.name: provider}
    for kind in CHAIN_KINDS:
        for spec in candidates[kind]:
            live[spec.name] = instantiate(spec)
    all_cands = [s for kind in CHAIN_KINDS for s in candidates[kind]]

    schemas = {
        name: parse_schema(name, call_hook(lp, "get_config_schema")) for name, lp in live.items()
    }
    live_fields = [f for n in live for f in schemas[n]]
    known = {f.key for f in live_fields}
    other_fields = registry_fields(registry, live) if any(k not in known for k in user_config) else []
    known |= {f.key for f in other_fields}
    notes = check_unknown(user_config, known)
    secrets = secret_keys([*live_fields, *other_fields], user_config)
    refuse_placeholders(user_config, secrets)
    full_loose = effective_config(user_config, live_fields, strict=False)
    loose = freeze(redact(full_loose, secrets))
    for name, lp in live.items():
        lp.secrets = freeze(owned_secrets(name, schemas[name], full_loose, secrets))

    model_plugins = candidates["extension"] + candidates["feature"]
    # keyed on the real values: two API keys may see different model lists (the key is a one-way digest)
    key = models_key(provider_spec.name, [s.name for s in model_plugins], full_loose) if model_cache is not None else ""
    cached = model_cache.get(key) if model_cache is not None else None
    if cached is not None:
        models = cached
    else:
        models = model_list(provider, call_hook(provider, "get_models", own_config(provider, loose)))
        for spec in model_plugins:
            models = model_list(
                live[spec.name], call_hook(live[spec.name], "get_models", own_config(live[spec.name], loose), models)
            )
        models = freeze(list(models))
        if model_cache is not None:
            model_cache[key] = models

    provider_tags = string_list(
        provider, "get_tags", call_hook(provider, "get_tags", own_config(provider, loose), models)
    )
    own_tags = {
        s.name: string_list(
            live[s.name], "get_tags", call_hook(live[s.name], "get_tags", own_config(live[s.name], loose), models)
        )
        for s in all_cands
    }
    required = {s.name: string_list(live[s.name], "required_tags", call_hook(live[s.name], "required_tags"))
                for s in all_cands}
    forbidden = {s.name: string_list(live[s.name], "forbidden_tags", call_hook(live[s.name], "forbidden_tags"))
                 for s in all_cands}

    enabled = frozenset(s.name for s in all_cands)
    history: list[frozenset[str]] = [enabled]
    while True:
        tags = set(provider_tags)
        for name in enabled:
            tags |= own_tags[name]
        frozen_tags = FrozenList(sorted(tags))
        ids = {
            "providers": [provider_spec.name],
            **{_PLURAL[k]: [s.name for s in candidates[k] if s.name in enabled] for k in CHAIN_KINDS},
        }
        context = freeze(
            {
                "enabled_plugin_ids": ids,
                "disabled_plugins": sorted(disabled),
                "force_enabled_plugins": sorted(forced),
            }
        )
        nxt = set()
        for spec in all_cands:
            name = spec.name
            if name in forced:
                reasons[name] = "on: forced by force_enabled_plugins"
                nxt.add(name)
                continue
            verdict = call_hook(live[name], "is_enabled", own_config(live[name], loose), frozen_tags, models, context)
            if verdict is True:
                reasons[name] = "on: is_enabled returned True"
                nxt.add(name)
            elif verdict is False:
                reasons[name] = "off: is_enabled returned False (the plugin switched itself off for this config)"
            elif verdict is None:
                missing = required[name] - tags
                present = forbidden[name] & tags
                if missing:
                    reasons[name] = f"off: missing required tags {sorted(missing)}"
                elif present:
                    reasons[name] = f"off: forbidden tags present {sorted(present)}"
                else:
                    reasons[name] = "on: tag rules satisfied" if required[name] else "on: enabled by default"
                    nxt.add(name)
            else:
                raise PluginError(
                    name, "is_enabled", TypeError("bad return value"),
                    detail=f"must return True, False or None, got {verdict!r}",
                )
        new = frozenset(nxt)
        if new == enabled:
            break
        if new in history:
            cycle = history[history.index(new):]
            flipping = sorted(set().union(*cycle) - frozenset.intersection(*cycle))
            raise ConfigError(
                "plugin enablement does not settle: "
                f"{', '.join(flipping)} keep switching each other on and off through their tags",
                plugins=flipping,
            )
        history.append(new)
        enabled = new

    def refs(kind: str) -> tuple[PluginRef, ...]:
        return tuple(PluginRef(s) for s in candidates[kind] if s.name in enabled)

    extensions, features, tools = refs("extension"), refs("feature"), refs("tool")
    chain = [provider_spec.name, *extensions, *features, *tools]
    chain_fields = [f for n in chain for f in schemas[n]]
    full = effective_config(user_config, chain_fields, strict=True, secrets=secrets)
    config = freeze(redact(full, secrets))
    for name in chain:
        live[name].secrets = freeze(owned_secrets(name, schemas[name], full, secrets))
    return Resolution(
        provider=PluginRef(provider_spec),
        extensions=extensions,
        features=features,
        tools=tools,
        tags=tuple(sorted(tags)),
        models=tuple(models),
        reasons=FrozenDict(reasons),
        config=config,
        live={n: live[n] for n in chain},
        warnings=notes,
    )
