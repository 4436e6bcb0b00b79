"""Fitting a facade's fields to the provider the client chose.

An API's field has one name on the wire but different config keys depending on
the provider that serves it: Anthropic's ``stop_sequences`` is the ``openai``
provider's ``stop``. Whether a field can be honoured depends on the plugins that
will actually run for this request, not on whether any installed plugin knows
the key; otherwise a ``response_format`` sent to a provider that ignores it would
be dropped without a word.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import AbstractSet, Any

from ..http.errors import ApiError
from .server_tools import fit_server_tools

__all__ = ["ALIASES", "FACADE_DEFAULTS", "declared_by", "declared_for", "declared_keys", "fit_config", "fit_to_provider", "keys_by_plugin", "likely_declared",
           "with_extra_fields"]

#: config the facades run with unless the operator's config sets the key (see :func:`fit_config`):
#: one upstream attempt per client attempt (a stale pooled connection is still resent at once)
FACADE_DEFAULTS: dict[str, Any] = {"rate_limit_retries": 0, "max_retries": 0}

#: a config key -> the keys that mean the same for another provider, in order of preference
ALIASES: dict[str, tuple[str, ...]] = {
    "stop_sequences": ("stop",),
    "stop": ("stop_sequences",),
    "max_completion_tokens": ("max_tokens",),
    "max_tokens": ("max_completion_tokens",),
}


_keys_cache: weakref.WeakKeyDictionary[Any, tuple[tuple[tuple[str, ...], ...], dict[str, frozenset[str]]]] = \
    weakref.WeakKeyDictionary()


#: per core: the keys_by_plugin answer it was made from, and the declared keys by running plugins' names
_declared_memo: weakref.WeakKeyDictionary[Any, tuple[Any, dict[tuple[str, ...], frozenset[str]]]] = \
    weakref.WeakKeyDictionary()


def keys_by_plugin(core: Any) -> Mapping[str, frozenset[str]]:
    """Each registered plugin's declared config keys, by plugin name.

    Asking every plugin for its schema makes an instance of each and parses what
    it returns (more than the rest of a small request's work), and two routes asked on
    every request; the answer changes only when plugins are registered, so it is
    kept per core and made again when the registered names change.
    """
    # spelled out, not a generator: asked three times a request, and the answer is cached
    names = (core.plugins("provider"), core.plugins("extension"), core.plugins("feature"), core.plugins("tool"))
    cached = _keys_cache.get(core)
    if cached is not None and cached[0] == names:
        return cached[1]
    keys: dict[str, set[str]] = {}
    for entry in core.get_config_schema():
        keys.setdefault(entry["plugin"], set()).add(entry["key"])
    frozen = {name: frozenset(found) for name, found in keys.items()}
    _keys_cache[core] = (names, frozen)
    return frozen


#: per core: the keys_by_plugin answer it was made from, and every key it names
_all_memo: weakref.WeakKeyDictionary[Any, tuple[Any, frozenset[str]]] = weakref.WeakKeyDictionary()
#: per core and chosen provider (None: any): the keys_by_plugin answer, and the keys likely declared
_likely_memo: weakref.WeakKeyDictionary[Any, dict[Any, tuple[Any, frozenset[str]]]] = weakref.WeakKeyDictionary()


def declared_keys(core: Any) -> frozenset[str]:
    """Every key a registered plugin declares (kept until the registrations change)."""
    by_plugin = keys_by_plugin(core)
    known = _all_memo.get(core)
    if known is None or known[0] is not by_plugin:
        known = _all_memo[core] = (by_plugin, frozenset().union(*by_plugin.values()))
    return known[1]


def likely_declared(core: Any, provider: Any) -> frozenset[str]:
    """The keys the chosen provider (every provider when none is named) or any non-provider plugin declares."""
    by_plugin = keys_by_plugin(core)
    memo = _likely_memo.setdefault(core, {})  # per registered provider: a few entries at most
    known = memo.get(provider) if provider is None or isinstance(provider, str) else None
    if known is not None and known[0] is by_plugin:  # made from the same registrations
        return known[1]
    providers = set(core.plugins("provider"))
    keys = frozenset().union(*(keys for name, keys in by_plugin.items()
                               if name not in providers or provider is None or name == provider))
    if provider is None or (isinstance(provider, str) and provider in providers):  # no made-up names: kept small
        memo[provider] = (by_plugin, keys)
    return keys


def declared_for(core: Any, config: Mapping[str, Any]) -> set[str]:
    """The config keys declared by the plugins that run for ``config`` (and the engine's own)."""
    return declared_by(core, core.resolve(config))


def declared_by(core: Any, resolution: Any) -> set[str]:
    """The config keys declared by the plugins ``resolution`` runs (and the engine's own).

    Kept per set of running plugins (a server runs the same few all day), made
    again when the registrations change; the caller gets its own copy.
    """
    from ...host_kit import ENGINE_KEYS

    by_plugin = keys_by_plugin(core)
    names = resolution.enabled  # plugin refs: names (str), so the tuple is its own key
    memo = _declared_memo.get(core)
    if memo is None or memo[0] is not by_plugin:
        memo = _declared_memo[core] = (by_plugin, {})
    known = memo[1].get(names)
    if known is None:
        declared = set(ENGINE_KEYS)
        for name in names:
            declared |= by_plugin.get(name, frozenset())
        known = frozenset(declared)
        if len(memo[1]) < 256:
            memo[1][names] = known
    return set(known)


def fit_to_provider(config: dict[str, Any], client_keys: Iterable[str], declared: set[str],
                    fields: Mapping[str, str], droppable: Callable[[str, Any], bool]) -> bool:
    """Rename each key the client set to one the running plugins read, or refuse it (400 naming the field).

    ``fields`` maps a config key to the wire field it came from, for the message (the key
    itself when absent); ``droppable(key, value)`` says whether leaving the key out changes
    nothing a provider without it could honour (a token limit for a provider that counts no
    tokens, a user id, ``tool_choice: "auto"``). True when ``config`` changed.
    """
    changed = False
    for key in list(client_keys):
        if key in declared or key not in config or key in ("model", "provider"):
            continue
        target = next((alias for alias in ALIASES.get(key, ()) if alias in declared), None)
        changed = True
        if target is None and droppable(key, config[key]):
            del config[key]
            continue
        if target is None:
            field = fields.get(key, key)
            raise ApiError(400, "invalid_request_error",
                           f"{field}: the selected model's provider does not support it, so it cannot be honoured",
                           param=field)
        config[target] = config.pop(key)
    return changed


def fit_config(core: Any, operator: Mapping[str, Any], config: dict[str, Any], client: Mapping[str, Any],
               fields: Mapping[str, str], droppable: Callable[[str, Any], bool], stream: bool,
               server_tools: bool = True) -> Any:
    """Fit the client's fields to the plugins that run, add the facade's keys; the resolution, when it still holds.

    Which fields can be honoured depends on the plugins that run (:func:`fit_to_provider`),
    so the config is resolved here; the engine can then take that resolution instead of
    making its own (about a third of a non-streamed request's CPU), but only if it was made
    for the config the request runs with. So the facade's keys go in first: the retry policy
    for each key the chosen provider or a plugin of another kind declares, taken out again
    (and the resolution with it) when no running plugin does. A field renamed or dropped
    also leaves the resolution unused: the engine resolves the config as it ends up.

    ``operator`` is the operator's own config: the retry policy applies where it set none (``docs/server.md``): the clients
    of an API gateway retry on their own (the SDKs do, with the upstream's ``retry-after``),
    so a 429 or a 5xx passed on at once keeps one client retry one upstream request;
    retrying here too would multiply them (3 x 3 = 9 requests). ``server_tools``: whether the
    operator's tool plugins may run in the server's own loop (:mod:`.server_tools`).
    """
    likely = likely_declared(core, config.get("provider"))
    added = {k: v for k, v in FACADE_DEFAULTS.items() if k in likely and k not in operator}
    replaced = {k: config[k] for k in added if k in config}
    config.update(added)
    config.update(max_iterations=1, run_pending_tool_calls=False, stream=stream)
    if stream:  # send the headers once the upstream answers, not at the first token (as the runner's open_stream does)
        config["announce_answer"] = True
    resolution = core.resolve(config)
    if fit_server_tools(core, config, resolution, operator, server_tools):
        resolution = core.resolve(config)  # the operator's tools run, or are kept out: resolved as it runs
    declared = declared_by(core, resolution)
    changed = fit_to_provider(config, client, declared, fields, droppable)
    for key in added.keys() - declared:
        changed = True
        if key in replaced:
            config[key] = replaced[key]
        else:
            del config[key]
    return None if changed else resolution


def with_extra_fields(config: dict[str, Any], rest: Mapping[str, Any], installed: AbstractSet[str], api: str) -> None:
    """Add the body fields ``api`` does not document, each as the config key of its name.

    Only a key some installed plugin reads (``installed``) is taken (``top_k`` for a provider
    that reads it); any other is a 400 naming the field, as a typo would be, never dropped.
    """
    for key, value in rest.items():
        if key in config or key in ("provider", "client_tools") or key not in installed:
            raise ApiError(400, "invalid_request_error",
                           f"{key}: not a field of the {api} API, and no plugin of this server reads it", param=key)
        config[key] = value
