"""The pieces :func:`agent_core.plugins.resolution.resolve` is built from: picking, instantiating and checking plugins.

Each is small and pure apart from the plugin hooks it calls; they live here so
``resolution.py`` reads as the resolution algorithm itself.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from ..errors import ConfigError, PluginError, UnknownConfigKeyWarning
from ..values.frozen import FrozenList, freeze
from .config import FieldSpec, parse_schema, unknown_key_notes
from .hooks import LivePlugin, PluginSpec, call_hook
from .near_miss import caller_level

__all__ = ["Switches", "by_priority", "check_unknown", "plugin_name_notes", "instantiate", "model_list", "models_key", "pick_provider",
           "registry_fields", "SESSION_PLUGIN_MODES", "session_plugins", "string_list", "tag_hint"]


@dataclass(frozen=True)
class Switches:
    """What the caller says about plugins: the config's three lists and the session's own list (``only``)."""

    disabled: frozenset[str]
    forced: frozenset[str]
    opted_in: frozenset[str]
    only: frozenset[str] | None

    @classmethod
    def read(cls, config: Mapping[str, Any], only: frozenset[str] | None) -> Switches:
        """``disabled_plugins``, ``force_enabled_plugins`` and ``enabled_plugins`` of ``config``, read once.

        Under ``session_plugins: "add"`` the session's list only opts plugins in, as
        ``enabled_plugins`` does: it switches nothing off that the config leaves on.
        """
        opted_in = frozenset(config.get("enabled_plugins") or ())
        if only is not None and config.get("session_plugins") == "add":
            opted_in, only = opted_in | only, None
        return cls(frozenset(config.get("disabled_plugins") or ()), frozenset(config.get("force_enabled_plugins") or ()),
                   opted_in, only)

    def off(self, spec: PluginSpec) -> str | None:
        """Why a registered plugin is not a candidate (a sentence for ``reasons``), or None when it is one."""
        name = spec.name
        if self.only is not None and name not in self.only:
            return "off: not in the session's metadata 'plugins' list"
        if name in self.disabled and name not in self.forced:
            return "off: named in disabled_plugins"
        if self.only is None and not spec.default_enabled and name not in self.opted_in and name not in self.forced:
            return "off: opt-in plugin (default_enabled = False) not named in enabled_plugins"
        return None

    def candidates(self, specs: Sequence[PluginSpec], reasons: dict[str, str]) -> list[PluginSpec]:
        """Step 2 for one kind: the plugins not switched off, by priority then name; ``reasons`` says why for the rest."""
        kept = []
        for spec in specs:
            why = self.off(spec)
            if why is None:
                kept.append(spec)
            else:
                reasons[spec.name] = why
        return by_priority(kept)


def registry_fields(registry: Mapping[str, Sequence[PluginSpec]], skip: Mapping[str, Any]) -> list[FieldSpec]:
    """Config fields of registered plugins that are not candidates (made only to read their schema)."""
    out: list[FieldSpec] = []
    for specs in registry.values():
        for spec in specs:
            if spec.name in skip:
                continue
            try:
                out.extend(parse_schema(spec.name, call_hook(LivePlugin(spec, spec.factory()), "get_config_schema")))
            except Exception:  # noqa: BLE001 - a plugin that does not run cannot break this request
                continue
    return out


def plugin_name_notes(user_config: Mapping[str, Any], names: Sequence[str]) -> list[tuple[str, str | None, str]]:
    """A note for each plugin that ``enabled_plugins`` and friends name but nothing installed is called.

    A misspelt name would otherwise switch nothing on (or off), silently.
    """
    notes = []
    for key in ("enabled_plugins", "disabled_plugins", "force_enabled_plugins"):
        listed = user_config.get(key)
        if not isinstance(listed, (list, tuple, FrozenList)):
            continue
        for name in listed:
            if not isinstance(name, str) or name in names:
                continue
            close = difflib.get_close_matches(name, sorted(names), n=1, cutoff=0.6)
            hint = f"; did you mean `{close[0]}`?" if close else ""
            notes.append((key, close[0] if close else None,
                          f"{key} names `{name}`, which is no installed plugin{hint}"))
    return notes


def check_unknown(user_config: Mapping[str, Any], known: set[str],
                  plugin_names: Sequence[str] | None = None) -> tuple[str, ...]:
    notes = unknown_key_notes(user_config, known)
    if plugin_names is not None:
        notes += plugin_name_notes(user_config, plugin_names)
    if notes and user_config.get("strict_config"):
        raise ConfigError("; ".join(note for _, _, note in notes) + " (strict_config is on)", key=notes[0][0])
    for key, suggestion, note in notes:
        warnings.warn(UnknownConfigKeyWarning(note, key=key, suggestion=suggestion), stacklevel=caller_level())
    return tuple(note for _, _, note in notes)




def by_priority(specs: Sequence[PluginSpec]) -> list[PluginSpec]:
    return sorted(specs, key=lambda s: (s.priority, s.name))


def instantiate(spec: PluginSpec) -> LivePlugin:
    try:
        return LivePlugin(spec, spec.factory())
    except Exception as exc:
        raise PluginError(spec.name, "__init__", exc) from exc


def string_list(plugin: LivePlugin, hook: str, value: Any) -> frozenset[str]:
    if value is None:
        return frozenset()
    if not isinstance(value, (list, tuple, set, frozenset)) or not all(isinstance(v, str) for v in value):
        raise PluginError(
            plugin.name, hook, TypeError("bad return value"), detail=f"must return a list of strings, got {value!r}"
        )
    return frozenset(value)


def model_list(plugin: LivePlugin, value: Any) -> Any:
    if value is None:
        return FrozenList()
    if not isinstance(value, (list, tuple)):
        raise PluginError(
            plugin.name, "get_models", TypeError("bad return value"),
            detail=f"must return a list of model descriptors, got {type(value).__name__}",
        )
    return freeze(value)


def pick_provider(specs: Sequence[PluginSpec], config: Mapping[str, Any]) -> PluginSpec:
    names = [s.name for s in specs]
    wanted = config.get("provider")
    if wanted is None:
        if len(specs) == 1:
            return specs[0]
        if not specs:
            raise ConfigError("no provider is registered; pass providers=[...] to AgentCore", key="provider")
        raise ConfigError(
            f"several providers are registered ({', '.join(sorted(names))}); say which with config['provider']",
            key="provider",
        )
    for s in specs:
        if s.name == wanted:
            return s
    close = difflib.get_close_matches(str(wanted), names, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise ConfigError(
        f"unknown provider {wanted!r}{hint}; registered providers: {', '.join(sorted(names)) or 'none'}",
        key="provider",
        plugins=[str(wanted)],
    )


#: What a session's ``metadata["plugins"]`` list does, by the config's ``session_plugins``:
#: ``obey`` (the default: the list is the session's plugins, the original platform's rule),
#: ``add`` (it only opts plugins in, like ``enabled_plugins``) or ``ignore`` (it is kept, not read).
#: A handler serving clients it does not trust sets ``ignore`` or ``add``: a list a client stored
#: must not switch off what the operator runs (``agent-core serve`` does, see docs/security.md).
SESSION_PLUGIN_MODES = ("obey", "add", "ignore")


def session_plugins(metadata: Mapping[str, Any], config: Mapping[str, Any] | None = None) -> frozenset[str] | None:
    """The explicit plugin list a session's metadata carries under ``"plugins"``, if the config reads it.

    Raises:
        ConfigError: ``plugins`` is not a list of plugin ids (strings), or ``session_plugins``
            is not one of :data:`SESSION_PLUGIN_MODES`.
    """
    mode = "obey" if config is None else config.get("session_plugins", "obey")
    if mode not in SESSION_PLUGIN_MODES:
        raise ConfigError(f"config key 'session_plugins' must be one of {', '.join(SESSION_PLUGIN_MODES)}, "
                          f"got {mode!r}", key="session_plugins")
    value = metadata.get("plugins")
    if value is None or mode == "ignore":
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or not all(isinstance(v, str) for v in value):
        raise ConfigError(
            f"session metadata 'plugins' must be a list of plugin ids (strings), got {value!r}", key="plugins"
        )
    return frozenset(value)


_key_encoder = msgspec.json.Encoder(enc_hook=repr, order="sorted")


def models_key(provider: str, candidates: Sequence[str], config: Mapping[str, Any]) -> str:
    raw = _key_encoder.encode([provider, list(candidates), config])
    return hashlib.blake2b(raw, digest_size=16).hexdigest()


def tag_hint(missing: Iterable[str], tags: Iterable[str]) -> str:
    """`` (did you mean 'streaming'?)`` for a required tag spelled almost like one this request has; else ``""``.

    A typo in ``required_tags`` only switches the plugin off, so the reason is the one place to say it.
    """
    missing, tags = frozenset(missing), frozenset(tags)
    if sum(map(len, missing)) + sum(map(len, tags)) > _REMEMBERED_CHARS:  # a plugin's own tags, made from config
        return _tag_hint.__wrapped__(missing, tags)
    return _tag_hint(missing, tags)


#: the most text a remembered hint's tags may hold, so 256 of them stay small whatever a plugin makes tags of
_REMEMBERED_CHARS = 4096


@functools.lru_cache(maxsize=256)
def _tag_hint(missing: frozenset[str], tags: frozenset[str]) -> str:
    # Remembered: a request whose config was not seen before is resolved again, and the same few
    # plugins are off for the same missing tags each time; difflib's matcher is the costly part.
    have = sorted(tags)
    pairs = [(m, close[0]) for m in sorted(missing) if (close := difflib.get_close_matches(m, have, n=1, cutoff=0.8))]
    if len(pairs) == 1:
        return f" (did you mean {pairs[0][1]!r}?)"
    return f" (did you mean {', '.join(f'{b!r} for {a!r}' for a, b in pairs)}?)" if pairs else ""
