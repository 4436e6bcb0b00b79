"""The effective config: the caller's flat dict, plus plugin defaults, type-checked.

Plugins describe their keys with ``get_config_schema()`` in either of two
forms, both accepted here:

* flat: ``{"model": {"type": "string", "default": "m"}}``
* JSON Schema: ``{"type": "object", "properties": {"model": {...}}}``

A key's ``type`` is a JSON Schema type name or a list of them. Values the
caller gives are checked against the declaring plugin's type; two enabled
plugins that declare one key with different types cannot both be satisfied
and raise :class:`ConfigError` naming both.

Secrets
-------
A key is secret when its schema entry says ``"secret": true`` (or
``"format": "password"``), or when its name is a credential's name
(:func:`is_secret_name`: ``api_key``, ``*_secret``, ``password``,
``authorization``, ``*_token`` but never a token count such as
``max_tokens``). A secret value is handed only to the plugins that declare
the key; every other reader (other plugins, ``Resolution.config``, UI
schema output, error texts) sees :data:`REDACTED` in its place.

Unknown keys
------------
A key that no registered plugin declares and the engine does not read is
most likely a typo: :func:`unknown_key_notes` names it with the closest
known key, which the engine reports as an :class:`UnknownConfigKeyWarning`
(or a :class:`ConfigError` under ``strict_config: true``).
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError

__all__ = [
    "ENGINE_KEYS",
    "REDACTED",
    "FieldSpec",
    "check_engine_keys",
    "effective_config",
    "is_secret_name",
    "owned_secrets",
    "parse_schema",
    "redact",
    "refuse_placeholders",
    "schema_fields",
    "secret_keys",
    "unknown_key_notes",
]

#: What a secret value looks like to everyone but the plugin that declared it.
REDACTED = "<redacted>"

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
    secret: bool = False

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


# Credential names, matched whole or as the last ``_`` part of a key (never as a
# substring: "max_tokens" must stay visible).
_SECRET_NAMES = frozenset(
    {"api_key", "apikey", "secret", "password", "passwd", "authorization", "token", "private_key", "secret_key",
     "access_key", "credentials"}
)
_SECRET_SUFFIXES = ("_api_key", "_apikey", "_secret", "_password", "_passwd", "_token", "_private_key",
                    "_secret_key", "_access_key", "_credentials")
# Token *counts* and limits, which end like a credential but are plain numbers.
_COUNT_PREFIXES = ("max_", "min_", "num_", "n_")


def is_secret_name(key: str) -> bool:
    """Whether ``key`` names a credential whatever its schema says.

    Secret: ``api_key``, ``*_api_key``, ``secret``, ``*_secret``,
    ``password``, ``*_password``, ``authorization``, ``token``, ``*_token``
    (e.g. ``access_token``) and a few more credential names. Never a token
    count or limit (``max_tokens``, ``max_completion_tokens``,
    ``max_output_tokens``, ``max_token``): whole names and ``_`` suffixes
    only, never a substring.
    """
    name = key.lower().replace("-", "_")
    if name in _SECRET_NAMES:
        return True
    if name.startswith(_COUNT_PREFIXES) or name.endswith(("_tokens", "_count", "_limit", "_budget")):
        return False
    return name.endswith(_SECRET_SUFFIXES)


def _shown(key: str, value: Any, secret: bool = False) -> str:
    """The value as an error message may quote it: secrets are never echoed."""
    if secret or is_secret_name(key):
        return REDACTED
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


#: plugin name -> (a private copy of the schema it last returned, that schema's fields)
_parsed: dict[str, tuple[Any, tuple[FieldSpec, ...]]] = {}


def parse_schema(plugin: str, raw: Any) -> tuple[FieldSpec, ...]:
    """Normalize a plugin's config schema into field specs.

    Every request asks each candidate plugin for its schema, and a provider's is costly
    to parse (a secret-name check per key); a schema equal to the one the
    same plugin name gave last time gets the fields parsed then. The comparison is
    with a copy made when it was parsed, so a plugin changing its schema (or the dict
    it returned) is parsed again.

    Raises:
        ConfigError: the schema is not a mapping of key -> field description.
    """
    if raw is None:
        return ()
    last = _parsed.get(plugin)
    if last is not None and _same(last[0], raw):
        return last[1]
    try:
        kept = copy.deepcopy(raw)
    except Exception:  # noqa: BLE001 - a value that cannot be copied: parsed every time
        return _parse_schema(plugin, raw)
    fields = _parse_schema(plugin, kept)
    _parsed[plugin] = (copy.deepcopy(kept), fields)  # the fields' defaults are the first copy's, nobody else's
    return fields


def _same(kept: Any, raw: Any) -> bool:
    try:
        return bool(kept == raw)
    except Exception:  # noqa: BLE001 - a value whose == raises: parse it afresh
        return False


def _parse_schema(plugin: str, raw: Any) -> tuple[FieldSpec, ...]:
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
        secret = desc.get("secret") is True or desc.get("format") == "password" or is_secret_name(str(key))
        out.append(FieldSpec(key, plugin, types, desc["default"] if "default" in desc else _NO_DEFAULT, secret))
    return tuple(out)


def secret_keys(fields: Iterable[FieldSpec], config: Mapping[str, Any]) -> frozenset[str]:
    """The keys whose values are secret: marked in any schema, or named like a credential."""
    named = {k for k in config if isinstance(k, str) and is_secret_name(k)}
    return frozenset({f.key for f in fields if f.secret} | named)


def refuse_placeholders(config: Mapping[str, Any], secrets: Collection[str]) -> None:
    """Refuse a secret whose value is the :data:`REDACTED` placeholder.

    That happens when a redacted view (``resolve().config``, a plugin's
    config) is passed back as a request config: the real value is gone, and
    sending the placeholder would only fail later, at the API, as a bad key.

    Raises:
        ConfigError: naming the key.
    """
    for key in sorted(secrets):
        if config.get(key) == REDACTED:
            raise ConfigError(
                f"config key {key!r} holds the placeholder {REDACTED!r}, not a value: a redacted copy of a config "
                "(such as resolve().config) was passed back; pass the original config",
                key=key,
            )


def redact(config: Mapping[str, Any], secrets: Collection[str]) -> dict[str, Any]:
    """``config`` with every set secret value replaced by :data:`REDACTED`."""
    return {k: REDACTED if k in secrets and v is not None else v for k, v in config.items()}


def owned_secrets(
    plugin: str, fields: Iterable[FieldSpec], config: Mapping[str, Any], secrets: Collection[str]
) -> dict[str, Any]:
    """The secret values ``plugin`` may see: those of the keys it declares itself."""
    return {
        f.key: config[f.key]
        for f in fields
        if f.plugin == plugin and f.key in secrets and config.get(f.key) is not None
    }


#: Keys the engine reads besides ``ENGINE_KEYS`` (never reported as unknown).
_ENGINE_EXTRA_KEYS = frozenset({"tools"})


def unknown_key_notes(config: Mapping[str, Any], known: Collection[str]) -> list[tuple[str, str | None, str]]:
    """``(key, closest known key or None, note)`` for each key of ``config`` that nothing declares.

    ``known`` holds every key some registered plugin's schema declares (a
    mapping to the declaring plugin names it in the note); the engine's own keys are added here. The note names the key and, when one
    is close, the known key it probably meant. Keys are quoted, values never.
    """
    pool = set(known) | set(ENGINE_KEYS) | _ENGINE_EXTRA_KEYS
    notes = []
    for key in config:
        if not isinstance(key, str) or key in pool:
            continue
        close = difflib.get_close_matches(key, sorted(pool), n=1, cutoff=0.6)
        owner = known.get(close[0]) if close and isinstance(known, Mapping) else None
        hint = f"; did you mean `{close[0]}`?" if close else ""
        if owner:
            hint += (f" (plugin {owner!r} declares it in its config schema, and runs on its default until the key "
                     "is spelt so)")
        note = f"config key `{key}` is not declared by any installed plugin{hint}"
        notes.append((key, close[0] if close else None, note))
    return notes


ENGINE_KEYS: dict[str, tuple[str, ...]] = {
    "provider": ("string",),
    "stream": ("boolean",),
    "max_iterations": ("integer",),
    "enabled_plugins": ("array",),
    "disabled_plugins": ("array",),
    "force_enabled_plugins": ("array",),
    "strict_config": ("boolean",),
    "stop_on_tool_error": ("boolean",),
    "run_pending_tool_calls": ("boolean",),
    "tool_timeout_s": ("number",),
    "announce_answer": ("boolean",),
    "session_plugins": ("string",),
    "validate_tool_arguments": ("boolean",),
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
    user: Mapping[str, Any], fields: Sequence[FieldSpec], *, strict: bool = True,
    secrets: Collection[str] = (),
) -> dict[str, Any]:
    """Fill defaults from ``fields`` (in chain order) into ``user`` and type-check.

    With ``strict`` off (used while resolving, before the enabled set is
    known) conflicts and bad values are not reported. Values of ``secrets``
    keys are never quoted in an error.

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
                    f"got {type(user[key]).__name__} ({_shown(key, user[key], key in secrets or f.secret)})",
                    key=key,
                    plugins=[f.plugin],
                )
    return out
