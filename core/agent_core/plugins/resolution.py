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

:func:`resolve` is these steps in order: ``pick_provider`` (1),
``Switches.candidates`` (2, ordered as in 5; the config's plugin lists are
read once, into :class:`~agent_core.plugins.selection.Switches`),
:class:`ConfigSeen` (the config as the candidates see it, read once),
:func:`ask_models` (3) and :class:`~.enablement.Enablement` (4); the config of the enabled
plugins is settled last (:meth:`ConfigSeen.settled`).

A session may carry ``metadata["plugins"]``: an explicit list of the plugin
ids enabled for requests on it (the original platform's rule). It replaces
step 2's default: an unlisted extension, feature or tool is off (even when
forced), a listed one is a candidate as if named in ``enabled_plugins``;
``disabled_plugins`` and the tag rules still apply. The provider is always
the one the config names. Config ``session_plugins`` changes that rule for
sessions from clients: ``add`` only opts plugins in, ``ignore`` reads none.

``get_models`` results can be cached per config (``AgentCore(model_cache=
{})``): the key is a digest of the provider, the candidates and the config,
so a different config never reads another's models.

Each plugin's tags are asked for once per resolution (``get_tags`` must be
pure); ``is_enabled`` is asked each round because its inputs change. A hook
the plugin does not define is not called: its default answer is a constant
(no tags, no verdict, the models as they came), so it is used as it is. Most
bundled plugins define few of these hooks, and calling every default was
about two thirds of the hook calls a resolution made.

``AgentCore.resolve`` goes through :mod:`.replay`: a config resolved before is
resolved by asking the same hooks again and keeping the earlier outcome when
every answer is the same.

Config reaches each plugin through :func:`own_config`: the effective config
with secret values (see :mod:`agent_core.plugins.config`) shown as ``"<redacted>"``,
except the keys the plugin itself declares. ``Resolution.config`` is the
redacted view; a key no registered plugin declares is reported by an
:class:`~agent_core.errors.UnknownConfigKeyWarning` (``Resolution.warnings``),
or refused with :class:`ConfigError` under ``strict_config: true``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError
from ..values.frozen import FrozenDict, freeze
from ..values.request_config import RequestConfig
from .config import (_ENGINE_EXTRA_KEYS, ENGINE_KEYS, FieldSpec, check_engine_keys, effective_config, owned_secrets,
                     parse_schema, redact, refuse_placeholders, secret_keys)
from .enablement import CHAIN_KINDS, Enablement, own_config
from .hooks import LivePlugin, PluginSpec, call_hook
from .selection import (
    Switches,
    check_unknown,
    instantiate,
    model_list,
    models_key,
    pick_provider,
    registry_fields,
    session_plugins,
)
from .stubs import provider_streams

_ENGINE_OWNED = frozenset(ENGINE_KEYS) | _ENGINE_EXTRA_KEYS  # keys the engine reads itself

__all__ = ["PluginRef", "Resolution", "resolve", "session_plugins"]



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
    #: what ``AgentCore.resolve`` made it from, checked when a request is handed it (``engine/handed.py``)
    basis: Any = field(repr=False, compare=False, default=None)

    @property
    def enabled(self) -> tuple[PluginRef, ...]:
        return (self.provider, *self.extensions, *self.features, *self.tools)


def resolve(
    registry: Mapping[str, Sequence[PluginSpec]],
    user_config: Mapping[str, Any],
    *,
    only: frozenset[str] | None = None,
    model_cache: MutableMapping[str, Any] | None = None,
    basis: Any = None,
    on_live: Callable[[Mapping[str, LivePlugin]], None] | None = None,
) -> Resolution:
    """Resolve the plugins for ``user_config`` (see the module docstring).

    Plugin instances made here are the ones the request then uses, available
    in ``Resolution.live`` by name. ``only`` is a session's explicit plugin
    list; ``model_cache`` keeps ``get_models`` results per config; ``basis`` is
    stored on the result as it is (see ``agent_core.engine.handed``); ``on_live``
    is shown the plugin instances before any hook is called (see :mod:`.replay`).

    Raises:
        ConfigError: bad engine keys, unknown provider, a value of the wrong
            type, conflicting declarations, or oscillating enablement.
        PluginError: a plugin hook raised while resolving.
    """
    if not isinstance(user_config, Mapping):
        raise ConfigError(f"config must be a mapping, got {type(user_config).__name__}")
    check_engine_keys(user_config)
    provider_spec = pick_provider(registry.get("provider", ()), user_config)  # step 1
    provider_streams(provider_spec)  # a wrong ``streams`` declaration fails here, before anything runs
    switches = Switches.read(user_config, only)
    reasons: dict[str, str] = {provider_spec.name: "selected provider"}
    candidates = {kind: switches.candidates(registry.get(kind, ()), reasons) for kind in CHAIN_KINDS}  # step 2
    live = {provider_spec.name: instantiate(provider_spec)}
    live.update((spec.name, instantiate(spec)) for kind in CHAIN_KINDS for spec in candidates[kind])
    if on_live is not None:
        on_live(live)
    seen = ConfigSeen.read(registry, user_config, live)
    provider = live[provider_spec.name]
    models = ask_models(provider, [live[s.name] for s in candidates["extension"] + candidates["feature"]],
                        seen, model_cache)  # step 3
    enabled, tags = Enablement(provider, candidates, live, switches, seen.view, models).settle(reasons)  # step 4

    def refs(kind: str) -> tuple[PluginRef, ...]:
        return tuple(PluginRef(s) for s in candidates[kind] if s.name in enabled)  # in step 5's order

    extensions, features, tools = refs("extension"), refs("feature"), refs("tool")
    chain = [provider_spec.name, *extensions, *features, *tools]
    return Resolution(
        provider=PluginRef(provider_spec),
        extensions=extensions,
        features=features,
        tools=tools,
        tags=tuple(sorted(tags)),
        models=tuple(models),
        reasons=FrozenDict(reasons),
        config=seen.settled(user_config, chain, live),
        live={n: live[n] for n in chain},
        warnings=seen.notes,
        basis=basis,
    )


@dataclass(frozen=True)
class ConfigSeen:
    """The caller's config as the candidates see it while resolving: their schemas, the secrets, the redacted view.

    Attributes:
        schemas: plugin name -> its config fields.
        secrets: the keys whose values are secret.
        full: the effective config over every candidate's fields, secrets included.
        view: ``full`` with secret values redacted, frozen: what hooks get (through :func:`own_config`).
        notes: one sentence per key nothing declares.
    """

    schemas: Mapping[str, tuple[FieldSpec, ...]]
    secrets: frozenset[str]
    full: Mapping[str, Any]
    view: FrozenDict
    notes: tuple[str, ...]

    @classmethod
    def read(cls, registry: Mapping[str, Sequence[PluginSpec]], user_config: Mapping[str, Any],
             live: Mapping[str, LivePlugin]) -> ConfigSeen:
        """Ask each candidate's schema, check the keys, find the secrets; hand each plugin its own secrets.

        Raises:
            ConfigError: a key nothing declares under ``strict_config``, a
                redacted placeholder sent as a secret, a value of the wrong type.
        """
        schemas = {name: parse_schema(name, call_hook(lp, "get_config_schema")) for name, lp in live.items()}
        fields = [f for n in live for f in schemas[n]]
        known = {f.key: f.plugin for f in fields}  # each key with the plugin declaring it, for the notes
        # The other plugins' schemas are read only for a key neither the candidates nor the engine
        # own: the facades' engine keys (stream, max_iterations...) made every request read them all.
        others = registry_fields(registry, live) if any(k not in known and k not in _ENGINE_OWNED
                                                        for k in user_config) else []
        known.update((f.key, f.plugin) for f in others if f.key not in known)
        names = sorted({spec.name for specs in registry.values() for spec in specs})
        notes = check_unknown(user_config, known, names)
        secrets = secret_keys([*fields, *others], user_config)
        refuse_placeholders(user_config, secrets)
        full = effective_config(user_config, fields, strict=False)
        seen = cls(schemas, secrets, full, RequestConfig.from_frozen(freeze(redact(full, secrets))), notes)
        seen.hand_secrets(live, live, full)
        return seen

    def hand_secrets(self, live: Mapping[str, LivePlugin], names: Iterable[str], config: Mapping[str, Any]) -> None:
        """Give each named plugin the secret values of ``config`` it declares itself (see :func:`own_config`)."""
        for name in names:
            live[name].secrets = freeze(owned_secrets(name, self.schemas[name], config, self.secrets))

    def settled(self, user_config: Mapping[str, Any], chain: list[str], live: Mapping[str, LivePlugin]) -> FrozenDict:
        """The request's config over the enabled plugins' fields only (strictly typed), redacted; secrets handed anew."""
        full = effective_config(user_config, [f for n in chain for f in self.schemas[n]], strict=True,
                                secrets=self.secrets)
        self.hand_secrets(live, chain, full)
        return RequestConfig.from_frozen(freeze(redact(full, self.secrets)))  # a miss names the fix


def ask_models(provider: LivePlugin, others: list[LivePlugin], seen: ConfigSeen,
               cache: MutableMapping[str, Any] | None) -> Any:
    """Step 3: the provider's ``get_models``, then each candidate extension's and feature's, in order.

    With a ``cache``, the result is kept under a digest of the provider, the
    candidates and the real config values (two API keys may see different
    model lists; the key is one-way).
    """
    key = models_key(provider.name, [p.name for p in others], seen.full) if cache is not None else ""
    cached = cache.get(key) if cache is not None else None
    if cached is not None:
        return cached
    models = model_list(provider, call_hook(provider, "get_models", own_config(provider, seen.view)))
    for p in others:
        if "get_models" in p.defined:  # the default hands the models on as they are
            models = model_list(p, call_hook(p, "get_models", own_config(p, seen.view), models))
    models = freeze(list(models))
    if cache is not None:
        cache[key] = models
    return models
