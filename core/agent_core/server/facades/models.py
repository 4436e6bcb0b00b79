"""Model names as clients write them, and the ``/v1/models`` routes.

The server's own name for a model is ``provider/model`` (``openai/gpt-4o-mini``) or a
provider alone (``echo``). Clients written for one API send that API's bare names
(``gpt-4o-mini``, ``claude-sonnet-4-5``), and some tools add a provider prefix of their
own, so a client configured for ``openai/gpt-4o-mini`` through LiteLLM ends up sending
``gpt-4o-mini``. The operator can therefore name aliases and a default provider; a name
is read as: an alias, then ``provider/model`` with an installed provider, then the
default provider's model. Anything else is a 404 naming the model, with the closest names
the server knows when one is close (``opnai/gpt-4o``: did you mean ``openai/gpt-4o``?).
"""

from __future__ import annotations

import asyncio
import difflib
from collections.abc import Mapping, Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ... import ConfigPolicy
from ..http.errors import ApiError
from ..state import ServerState, state_of

__all__ = ["close_names", "model", "model_name", "models", "resolve_model"]

_MOST_SUGGESTIONS = 3
#: a request that names a provider and nothing else, as the model list asks for each provider
_NAMING_A_PROVIDER = ConfigPolicy(allow=frozenset({"provider"}))


def close_names(model: str, providers: Sequence[str], known: Sequence[str] = ()) -> list[str]:
    """The names a mistyped ``model`` most likely meant, best first (at most three).

    ``known`` holds the names the server answers to (``provider/model`` ids, aliases). A
    mistyped provider in front (``opnai/gpt-4o``) is mended first; then whole names are
    compared, a known ``provider/model`` also by its model part alone, since a client that
    sends ``gpt-4o-mnii`` meant a bare name.
    """
    found: list[str] = []
    head, slash, tail = model.partition("/")
    if slash and tail and head not in providers:
        found += [f"{name}/{tail}" for name in difflib.get_close_matches(head, providers, n=2)]
    by_bare = {name.partition("/")[2]: name for name in known if "/" in name}
    candidates = {*providers, *known, *by_bare}
    found += [by_bare.get(name, name) for name in difflib.get_close_matches(model, candidates, n=_MOST_SUGGESTIONS,
                                                                              cutoff=0.75)]
    return list(dict.fromkeys(found))[:_MOST_SUGGESTIONS]


def resolve_model(model: str, providers: Sequence[str], *, aliases: Mapping[str, str] | None = None,
                  default_provider: str | None = None, known: Sequence[str] = ()) -> str:
    """The server's name (``provider/model`` or ``provider``) for the model a client asked for.

    Args:
        model: the name the client sent.
        providers: the installed providers.
        aliases: the operator's model names (``{"fast": "openai/gpt-4o-mini"}``).
        default_provider: the provider of a name that names none; None: such a name is a 404.
        known: further names the server knows (``provider/model`` ids), read only to suggest
            one in the 404 (:func:`close_names`).

    Raises:
        ApiError: 400 without a model; 404 when no installed provider answers to it, with a
            "did you mean" when a known name is close.
    """
    if not model:
        raise ApiError(400, "invalid_request_error",
                       "model is required: a provider name, or provider/model (e.g. 'echo', 'openai/gpt-4o-mini')",
                       param="model")
    if aliases and model in aliases:
        return aliases[model]
    if model.partition("/")[0] in providers:
        return model
    if default_provider is not None and default_provider in providers:
        return f"{default_provider}/{model}"
    installed = ", ".join(providers)
    close = close_names(model, providers, [*(aliases or {}), *known])
    hint = "" if default_provider else "; name it as provider/model, or start the server with --default-provider"
    mean = f". Did you mean {' or '.join(map(repr, close))}?" if close else ""
    raise ApiError(404, "model_not_found",
                   f"model {model!r}: no provider named {model.partition('/')[0]!r} (installed: {installed}){hint}"
                   f"{mean}", param="model")


def _model_object(model_id: str, provider: str) -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": 0, "owned_by": provider}


def model_name(state: ServerState, model: str) -> str:
    """The server's name for the model a client asked for, by the operator's aliases and default provider.

    Raises:
        ApiError: as :func:`resolve_model`; a 404 suggests the known names closest to ``model``.
    """
    settings = state.settings
    providers = state.core.plugins("provider")
    try:
        return resolve_model(model, providers, aliases=settings.model_aliases,
                             default_provider=settings.default_provider or state.config.get("provider"))
    except ApiError as exc:
        if exc.status != 404:
            raise
    # Only a name that matches nothing pays for the list of known names, to suggest one.
    return resolve_model(model, providers, aliases=settings.model_aliases,
                         default_provider=settings.default_provider or state.config.get("provider"),
                         known=_known_models(state))


def _known_models(state: ServerState) -> list[str]:
    """The ``provider/model`` ids the providers name without asking their upstream (their default models)."""
    known = state.known_models
    if known is None:
        # No list_models: no upstream call for a suggestion. No model: it is meant for the config's provider.
        config = state.config
        offline = {k: v for k, v in config.items() if k not in ("list_models", "model")}
        known = []
        if config.get("provider") and config.get("model"):
            known.append(f"{config['provider']}/{config['model']}")
        for provider in state.core.plugins("provider"):
            try:
                listed = state.core.get_models({**offline, "provider": provider})
            except Exception:  # noqa: BLE001, S112 - a suggestion is a courtesy; a provider that cannot list gives none
                continue
            known += [f"{provider}/{m['id']}" for m in listed
                      if isinstance(m, Mapping) and isinstance(m.get("id"), str)]
        known += [m for m in state.settings.models or () if "/" in m and not any(c in m for c in "*?[")]
        state.known_models = known
    return known


def _models_of(state: ServerState, provider: str) -> list[Any] | None:
    """The models ``provider`` lists on the operator's config as a request naming only it runs on.

    That is ``ConfigPolicy.merge``'s rule: the operator's ``model`` and endpoint keys stay with
    the provider they were set for, and another provider lists its own default model, on its
    own URL with its own key. None when its key is missing (every request to it would fail).
    """
    config = _NAMING_A_PROVIDER.merge(state.config, {"provider": provider})
    resolution = state.core.resolve(config)
    instance = getattr(resolution.live.get(provider), "instance", None)
    key_missing = getattr(instance, "key_missing", None)
    if callable(key_missing) and key_missing(config):  # every request to it would fail: not offered
        return None
    return list(resolution.models)


async def _listed(state: ServerState, provider: str) -> list[str] | None:
    """The model ids ``provider`` lists, or None when it cannot list (no credentials, no network)."""
    try:
        listed = await asyncio.to_thread(_models_of, state, provider)
    except Exception:  # noqa: BLE001 - a provider that cannot list is answered for, not fatal
        return None
    if listed is None:
        return None
    return [m["id"] for m in listed if isinstance(m, Mapping) and isinstance(m.get("id"), str)]


async def models(request: Request) -> Response:
    """``GET /v1/models``: what this client may use, the aliases too, and the server's default."""
    state = state_of(request)
    policy = state.tenant(request).policy
    data = []
    for provider in state.core.plugins("provider"):
        for mid in await _listed(state, provider) or ():
            if policy.offers(provider, mid):
                data.append(_model_object(f"{provider}/{mid}", provider))
    for alias, target in state.settings.model_aliases.items():
        provider, _, mid = target.partition("/")
        if policy.offers(provider, mid or None):
            data.append(_model_object(alias, provider))
    return JSONResponse({"object": "list", "data": data, "default": _default_offered(state, policy)})


def _default_offered(state: ServerState, policy: ConfigPolicy) -> str | None:
    """What a request naming no model runs on (``provider`` or ``provider/model``), if this client may use it.

    OpenAI's clients ignore the field; the console's model picker reads it, so it offers
    "the server's default" only where a turn naming no model would not be refused.
    """
    provider = state.default_provider
    if provider is None:
        return None
    model = state.config.get("model") if state.config.get("provider") == provider else None
    if not policy.offers(provider, model if isinstance(model, str) else None):
        return None
    return f"{provider}/{model}" if isinstance(model, str) and model else str(provider)


async def model(request: Request) -> Response:
    """``GET /v1/models/{id}``: the id as the client wrote it (an SDK percent-encodes a slash; the route gets it decoded)."""
    state = state_of(request)
    asked = request.path_params["model_id"]
    name = model_name(state, asked)
    provider, _, mid = name.partition("/")
    missing = ApiError(404, "model_not_found", f"model {asked!r} does not exist or is not offered here",
                       param="model")
    if not state.tenant(request).policy.offers(provider, mid or None):
        raise missing
    if mid and state.config.get("list_models"):  # only then is the provider's list the upstream's own
        listed = await _listed(state, provider)
        if listed is not None and mid not in listed:
            raise missing
    return JSONResponse(_model_object(asked, provider))
