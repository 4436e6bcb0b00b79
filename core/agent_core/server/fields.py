"""Fitting a facade's fields to the provider the client chose.

An API's field has one name on the wire but different config keys depending on
the provider that serves it: Anthropic's ``stop_sequences`` is the ``openai``
provider's ``stop``. Whether a field can be honoured depends on the plugins that
will actually run for this request, not on whether any installed plugin knows
the key; otherwise a ``response_format`` sent to a provider that ignores it would
be dropped without a word.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .errors import ApiError

__all__ = ["ALIASES", "declared_for", "fit_to_provider", "with_extra_fields"]

#: a config key -> the keys that mean the same for another provider, in order of preference
ALIASES: dict[str, tuple[str, ...]] = {
    "stop_sequences": ("stop",),
    "stop": ("stop_sequences",),
    "max_completion_tokens": ("max_tokens",),
    "max_tokens": ("max_completion_tokens",),
}


def declared_for(core: Any, config: Mapping[str, Any]) -> set[str]:
    """The config keys declared by the plugins that run for ``config`` (and the engine's own)."""
    from ..plugin_kit import ENGINE_KEYS

    running = {str(ref) for ref in core.resolve(config).enabled}
    return {e["key"] for e in core.get_config_schema() if e["plugin"] in running} | set(ENGINE_KEYS)


def fit_to_provider(config: dict[str, Any], client_keys: Iterable[str], declared: set[str],
                    fields: Mapping[str, str], droppable: Callable[[str, Any], bool]) -> None:
    """Rename each key the client set to one the running plugins read, or refuse it (400 naming the field).

    ``fields`` maps a config key to the wire field it came from, for the message (the key
    itself when absent); ``droppable(key, value)`` says whether leaving the key out changes
    nothing a provider without it could honour (a token limit for a provider that counts no
    tokens, a user id, ``tool_choice: "auto"``).
    """
    for key in list(client_keys):
        if key in declared or key not in config or key in ("model", "provider"):
            continue
        target = next((alias for alias in ALIASES.get(key, ()) if alias in declared), None)
        if target is None and droppable(key, config[key]):
            del config[key]
            continue
        if target is None:
            field = fields.get(key, key)
            raise ApiError(400, "invalid_request_error",
                           f"{field}: the selected model's provider does not support it, so it cannot be honoured",
                           param=field)
        config[target] = config.pop(key)


def with_extra_fields(config: dict[str, Any], rest: Mapping[str, Any], installed: set[str], api: str) -> None:
    """Add the body fields ``api`` does not document, each as the config key of its name.

    Only a key some installed plugin reads (``installed``) is taken (``top_k`` for a provider
    that reads it); any other is a 400 naming the field, as a typo would be, never dropped.
    """
    for key, value in rest.items():
        if key in config or key in ("provider", "client_tools") or key not in installed:
            raise ApiError(400, "invalid_request_error",
                           f"{key}: not a field of the {api} API, and no plugin of this server reads it", param=key)
        config[key] = value
