"""The effective config: the caller's flat dict, plus plugin defaults, type-checked.

Plugins describe their keys with ``get_config_schema()`` in either of two
forms, both accepted here:

* flat: ``{"model": {"type": "string", "default": "m"}}``
* JSON Schema: ``{"type": "object", "properties": {"model": {...}}}``

A key's ``type`` is a JSON Schema type name or a list of them. Values the
caller gives are checked against the declaring plugin's type; two enabled
plugins that declare one key with different types cannot both be satisfied
and raise :class:`ConfigError` naming both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import ConfigError

__all__ = ["ENGINE_KEYS", "FieldSpec", "check_engine_keys", "effective_config", "parse_schema", "schema_fields"]

_PY_TYPES: dict[str, Any] = {
    "string": str,
    "number": (int, float),
    "integer": int,
    "boolean": bool,
    "array": (list, tuple),
    "object": Mapping,
    "null": type(None),
}

_NO_DEFAULT = object()


@dataclass(frozen=True)
class FieldSpec:
    key: str
    plugin: str
    types: tuple[str, ...]  # empty: any type
    default: Any = _NO_DEFAULT

    @property
    def has_default(self) -> bool:
        return self.default is not _NO_DEFAULT


def type_ok(value: Any, types: Sequence[str]) -> bool:
    if not types:
        return True
    for t in types:
        py = _PY_TYPES.get(t)
        if py is None:
            return True  # a type we do not know: do not second-guess the plugin
        if t in ("number", "integer") and isinstance(value, bool):
            continue
        if isinstance(value, py):
            return True
    return False


_SECRET_HINTS = ("key", "token", "secret", "password", "authorization")


def _shown(key: str, value: Any) -> str:
    """The value as an error message may quote it: secrets are never echoed."""
    if any(h in key.lower() for h in _SECRET_HINTS):
        return "<redacted>"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _describe(types: Sequence[str]) -> str:
    return " or ".join(types) if types else "any"


def schema_fields(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    """The key -> description mapping of a config schema in either form.

    A JSON Schema object has a string ``type`` or ``properties`` (a schema
    with ``properties`` but no ``type`` is still one); in the flat form every
    value is a field description. The one reading of a schema, shared by
    :func:`parse_schema` and ``AgentCore.get_config_schema``.
    """
    if isinstance(raw.get("type"), str) or "properties" in raw:
        props = raw.get("properties")
        return props if isinstance(props, Mapping) else {}
    return raw


def parse_schema(plugin: str, raw: Any) -> tuple[FieldSpec, ...]:
    """Normalize a plugin's config schema into field specs.

    Raises:
        ConfigError: the schema is not a mapping of key -> field description.
    """
    if raw is None:
        return ()
    if not isinstance(raw, Mapping):
        raise ConfigError(f"plugin {plugin!r}: get_config_schema() must return a mapping", plugins=[plugin])
    fields = schema_fields(raw)
    out = []
    for key, desc in fields.items():
        if not isinstance(desc, Mapping):
            raise ConfigError(
                f"plugin {plugin!r}: config schema entry {key!r} must be a mapping like "
                "{'type': 'string', 'default': ...}",
                key=key,
                plugins=[plugin],
            )
        t = desc.get("type")
        types = (t,) if isinstance(t, str) else tuple(t) if isinstance(t, (list, tuple)) else ()
        out.append(FieldSpec(key, plugin, types, desc["default"] if "default" in desc else _NO_DEFAULT))
    return tuple(out)


ENGINE_KEYS: dict[str, tuple[str, ...]] = {
    "provider": ("string",),
    "stream": ("boolean",),
    "max_iterations": ("integer",),
    "enabled_plugins": ("array",),
    "disabled_plugins": ("array",),
    "force_enabled_plugins": ("array",),
    "stop_on_tool_error": ("boolean",),
    "run_pending_tool_calls": ("boolean",),
    "tool_timeout_s": ("number",),
}


def check_engine_keys(config: Mapping[str, Any]) -> None:
    """Type-check the keys the engine itself reads."""
    for key, types in ENGINE_KEYS.items():
        if key in config and config[key] is not None and not type_ok(config[key], types):
            raise ConfigError(
                f"config key {key!r} must be {_describe(types)}, got {type(config[key]).__name__} "
                f"({_shown(key, config[key])})",
                key=key,
            )
    for key in ("enabled_plugins", "disabled_plugins", "force_enabled_plugins"):
        for item in config.get(key) or ():
            if not isinstance(item, str):
                raise ConfigError(f"config key {key!r} must list plugin names (strings), got {item!r}", key=key)
    mi = config.get("max_iterations")
    if mi is not None and mi < 1:
        raise ConfigError(f"config key 'max_iterations' must be at least 1, got {mi}", key="max_iterations")


def effective_config(
    user: Mapping[str, Any], fields: Sequence[FieldSpec], *, strict: bool = True
) -> dict[str, Any]:
    """Fill defaults from ``fields`` (in chain order) into ``user`` and type-check.

    With ``strict`` off (used while resolving, before the enabled set is
    known) conflicts and bad values are not reported.

    Raises:
        ConfigError: a value has the wrong type, or two plugins declare one
            key with different types (names the key, plugins and types).
    """
    out = dict(user)
    seen: dict[str, FieldSpec] = {}
    for f in fields:
        prior = seen.get(f.key)
        if prior is None:
            seen[f.key] = f
        elif strict and prior.types and f.types and set(prior.types) != set(f.types):
            raise ConfigError(
                f"config key {f.key!r} is declared by {prior.plugin!r} as {_describe(prior.types)} "
                f"and by {f.plugin!r} as {_describe(f.types)}; both plugins are enabled",
                key=f.key,
                plugins=[prior.plugin, f.plugin],
            )
        if f.key not in out and f.has_default:
            out[f.key] = f.default
    if strict:
        for key, f in seen.items():
            if key in user and user[key] is not None and not type_ok(user[key], f.types):
                raise ConfigError(
                    f"config key {key!r} (declared by plugin {f.plugin!r}) must be {_describe(f.types)}, "
                    f"got {type(user[key]).__name__} ({_shown(key, user[key])})",
                    key=key,
                    plugins=[f.plugin],
                )
    return out
