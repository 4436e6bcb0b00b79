"""Whose config wins: the operator's, with only the keys a client may choose taken from a request.

A request handler runs with two configs. The operator's (a server's ``-c``
flags and config file, or whatever the handler was built with) says where
requests go, with which credentials and what they may touch: ``base_url``,
``api_key``, ``extra_headers``, ``files_root``, ``enabled_plugins``, system
prompts, tool policies, prices. The client's (a turn's ``config``, the fields
of a Chat Completions body) is hostile until checked: left to merge freely it
can point the operator's key at a server of its own (``base_url``) or switch
on a tool that reads the operator's files.

:class:`ConfigPolicy` is that check as a value. Its ``allow`` set names the
keys a client may set (by default what a chat client legitimately chooses:
sampling and length, ``tool_choice``, ``response_format``, ``stop``,
``seed``, ``user``, ``metadata``); any other key is refused with
:class:`~agent_core.errors.ConfigNotAllowedError` naming it, before anything
runs. The model is chosen through ``model`` (``"provider/model"``) or
``provider`` + ``model``, and ``models`` narrows which ones: a client picks
among the installed providers but always runs on the operator's base URL and
credentials, because those keys stay the operator's.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Collection, Iterable, Mapping
from typing import Any

import msgspec

from ..errors import ConfigError, ConfigNotAllowedError

__all__ = ["CAP_KEYS", "DEFAULT_CLIENT_KEYS", "ConfigPolicy", "string_keys"]

#: What a chat client may set by default: its model, how the model samples and how long it may
#: answer, the shape of the answer, who is asking, and its own function tools (which a server
#: only offers to the model and never runs).
DEFAULT_CLIENT_KEYS: frozenset[str] = frozenset({
    "provider", "model",
    "temperature", "top_p", "top_k", "seed", "stop", "stop_sequences",
    "presence_penalty", "frequency_penalty",
    "max_tokens", "max_completion_tokens", "reasoning_effort", "thinking_budget", "verbosity",
    "logit_bias", "logprobs", "top_logprobs", "modalities", "audio", "prediction", "web_search_options",
    "tool_choice", "response_format", "parallel_tool_calls",
    "include", "reasoning_summary", "truncation", "max_tool_calls",
    "user", "metadata", "safety_identifier", "prompt_cache_key", "service_tier",
    "client_tools",
})

#: Keys whose operator value is a ceiling for the client's, in families that bound the same thing:
#: OpenAI reads ``max_completion_tokens`` over ``max_tokens``, so a cap on either caps both.
CAP_KEYS: tuple[tuple[str, ...], ...] = (("max_tokens", "max_completion_tokens"), ("thinking_budget",),
                                         ("max_iterations",), ("top_logprobs",))

_MODEL_KEYS = ("provider", "model")
#: What the operator set for its own provider. A request that switches provider runs without them: the
#: other provider's key (from its environment) must never go to the operator's base_url, nor the
#: operator's key or headers to the other provider's API.
_ENDPOINT_KEYS = ("base_url", "api_key", "extra_headers")
_OWN: Any = object()  # merge's ``bound`` left out: the operator config's own provider


def string_keys(value: Any, not_mapping: str, not_string: str) -> Mapping[str, Any]:
    """``value`` when it is a mapping with string keys; else a ConfigError led by the caller's words.

    Config that comes from outside (a request, a plugin's overrides) is checked for shape
    before any key is looked at, so the message says which kind of value was wrong.
    """
    if not isinstance(value, Mapping):
        raise ConfigError(f"{not_mapping}, got {type(value).__name__}")
    for key in value:
        if not isinstance(key, str):
            raise ConfigError(f"{not_string}, got {key!r}")
    return value


class ConfigPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """Which keys of a request's own config may override the operator's.

    Args:
        allow: the config keys a client may set (default :data:`DEFAULT_CLIENT_KEYS`).
            ``provider`` and ``model`` are the model choice: leave them out to pin the
            operator's model.
        models: when given, the models a client may choose, as ``provider`` (any model of
            it) or ``provider/model`` patterns (``*`` and ``?`` match as in file names:
            ``openai/gpt-4o*``). ``None``: any model of any installed provider.
        how_to_allow: the end of a refusal's message, telling the operator how to allow the
            key; ``{key}`` is replaced by the key.

    Example::

        policy = ConfigPolicy(models=("openai/gpt-4o-mini",)).allowing("system_prompt")
        config = policy.merge(operator_config, body["config"], providers=core.plugins("provider"))
        result = core.request(session, config)
    """

    allow: frozenset[str] = DEFAULT_CLIENT_KEYS
    models: tuple[str, ...] | None = None
    how_to_allow: str = "add '{key}' to the ConfigPolicy's allow set"

    def __post_init__(self) -> None:
        if not isinstance(self.allow, frozenset):
            msgspec.structs.force_setattr(self, "allow", frozenset(self.allow))
        if self.models is not None and not isinstance(self.models, tuple):
            msgspec.structs.force_setattr(self, "models", tuple(self.models))

    def allowing(self, *keys: str) -> ConfigPolicy:
        """This policy with ``keys`` allowed too."""
        return msgspec.structs.replace(self, allow=self.allow | frozenset(keys))

    def offers(self, provider: str, model: str | None = None) -> bool:
        """Whether a client may choose ``provider`` (and ``model``) under this policy."""
        return self.models is None or _matches(self.models, provider, model)

    def merge(self, operator: Mapping[str, Any], client: Mapping[str, Any] | None, *,
              providers: Collection[str] | None = None, bound: Any = _OWN) -> dict[str, Any]:
        """The config to run: ``operator``'s keys, overridden by the keys of ``client`` it allows.

        A client's ``None`` value is ignored rather than unsetting the operator's value (a
        cap the operator set stays set), and the operator's value of a length key
        (:data:`CAP_KEYS`) is a ceiling: the request gets the smaller of the two. When the client switches to another provider, the
        operator's ``model``, ``base_url``, ``api_key`` and ``extra_headers`` (meant for its own
        provider) are dropped: the chosen provider runs on its own URL and its own key.

        Args:
            operator: the operator's config; trusted as it is.
            client: the request's own config; every key is checked.
            providers: the installed provider names; when given, a model whose provider is not
                among them is refused.
            bound: the provider the operator's ``base_url``, ``api_key`` and ``extra_headers`` are
                for (default: ``operator``'s ``provider``; ``None``: the operator named none, and
                they go with whichever provider runs).

        Raises:
            ConfigNotAllowedError: a key the policy does not allow, or a model outside ``models``
                (``key`` names it); nothing was merged.
            ConfigError: ``client`` is not a mapping with string keys, or ``provider``/``model``
                are not strings.
        """
        if client is None:
            self.choose_model(operator, {})  # naming nothing still may not reach a default outside ``models``
            return dict(operator)
        for key in string_keys(client, "a request's config must be an object", "config keys must be strings"):
            if key not in self.allow:
                raise ConfigNotAllowedError(
                    f"config key {key!r} is set by the operator, not by a request; to let requests set it, "
                    + self.how_to_allow.replace("{key}", key),
                    key=key,
                )
        merged = dict(operator)
        merged.update({k: v for k, v in client.items() if v is not None and k not in _MODEL_KEYS})
        _keep_caps(operator, merged)
        choice = self.choose_model(operator, client, providers=providers)
        if choice is not None:
            provider, model = choice
            if provider is not None and provider != operator.get("provider"):
                merged.pop("model", None)
                merged["provider"] = provider
            owner = operator.get("provider") if bound is _OWN else bound
            if provider is not None and owner is not None and provider != owner:
                for key in _ENDPOINT_KEYS:  # meant for the operator's provider, not the one chosen
                    merged.pop(key, None)
            if model is not None:
                merged["model"] = model
        return merged

    def choose_model(self, operator: Mapping[str, Any], client: Mapping[str, Any], *,
                     providers: Collection[str] | None = None) -> tuple[str | None, str | None] | None:
        """``(provider, model)`` the client chose, checked; ``None`` when it chose nothing.

        Either part is ``None`` when it is left to the operator's config (or the defaults).

        ``model`` may carry its provider (``"openai/gpt-4o-mini"``; the rest may hold more
        slashes: ``"openai/meta-llama/llama-3"``) or be a provider's name alone (``"echo"``);
        otherwise it names a model of ``provider`` (the client's, else the operator's).

        Raises:
            ConfigNotAllowedError: the model is not among ``models`` (``key="model"``).
            ConfigError: an unknown provider, or a value that is not a string.
        """
        provider, model = client.get("provider"), client.get("model")
        if provider is None and model is None:
            if (self.models is not None and operator.get("provider") is not None
                    and not _matches(self.models, operator["provider"], operator.get("model"))):
                # naming no model must not reach the operator's default when the list leaves it out
                shown = "/".join(str(v) for v in (operator["provider"], operator.get("model")) if v)
                raise ConfigNotAllowedError(
                    f"this request names no model, and the server's default {shown!r} is not one "
                    f"it may use; name one of: {', '.join(self.models)}", key="model")
            return None
        for key, value in (("provider", provider), ("model", model)):
            if value is not None and (not isinstance(value, str) or not value):
                raise ConfigError(f"config key {key!r} must be a non-empty string, got {value!r}", key=key)
        known = set(providers) if providers is not None else None
        if provider is None:
            head, slash, tail = model.partition("/")
            if slash and tail and (known is None or head in known):
                provider, model = head, tail
            elif known is not None and model in known:
                provider, model = model, None
            else:
                provider = operator.get("provider")
        if known is not None and provider is not None and provider not in known:
            raise ConfigError(f"no provider named {provider!r} is installed (installed: {', '.join(sorted(known))})",
                              key="provider")
        if self.models is not None:
            effective = model
            if effective is None and provider == operator.get("provider"):
                effective = operator.get("model")
            if not _matches(self.models, provider, effective):
                shown = f"{provider}/{effective}" if effective else str(provider)
                raise ConfigNotAllowedError(
                    f"model {shown!r} is not one this server offers (allowed: {', '.join(self.models)})",
                    key="model",
                )
        return provider, model


def _matches(patterns: Iterable[str], provider: str | None, model: Any) -> bool:
    for pattern in patterns:
        if "/" not in pattern:
            if pattern == provider:
                return True
        elif provider is not None and isinstance(model, str) and fnmatch.fnmatchcase(f"{provider}/{model}", pattern):
            return True
    return False


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _keep_caps(operator: Mapping[str, Any], merged: dict[str, Any]) -> None:
    """Lower each key of a cap family in ``merged`` to the smallest operator value of that family."""
    for family in CAP_KEYS:
        caps = [operator[k] for k in family if _number(operator.get(k))]
        if not caps:
            continue
        ceiling = min(caps)
        for key in family:
            if _number(merged.get(key)) and merged[key] > ceiling:
                merged[key] = ceiling
