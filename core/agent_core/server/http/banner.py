"""The lines ``agent-core serve`` prints once it listens: what a newcomer needs to use it.

Where it answers (and where its web console is), where sessions go, who may connect, which providers and models it
offers and which provider a request without one gets, and where the docs are. Nothing
secret: the store's URL is the store's own display form (password redacted), tokens
are counted, never shown, and no config value is printed, only provider names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["describe"]

_MOST_ALIASES = 4  # beyond these, a count: the banner stays a screenful


def _docs() -> str:
    """docs/server.md of the checkout agent-core runs from, if it is one; else its name in the project."""
    checkout = Path(__file__).resolve().parents[4] / "docs" / "server.md"
    return str(checkout) if checkout.is_file() else "docs/server.md in the agent-core project"


def _auth(server: Any) -> tuple[str, str]:
    """(mode for the JSON field, the words for a person)."""
    tokens = server.tokens
    if tokens is None:
        return "none", "none: anyone who can connect may use it (give --token or --tokens-file to require one)"
    if server.settings.tokens_file is not None:
        tenants = len(tokens.tenants())
        return "tenants", f"{tenants} tenant{'s' * (tenants != 1)} from {server.settings.tokens_file}"
    return "token", "one token (Authorization: Bearer ..., or x-api-key)"


def _models(server: Any) -> str:
    settings = server.settings
    offered = ", ".join(settings.models) if settings.models is not None else "any model of any installed provider"
    aliases = [f"{name} -> {target}" for name, target in settings.model_aliases.items()]
    if len(aliases) > _MOST_ALIASES:
        aliases[_MOST_ALIASES:] = [f"{len(aliases) - _MOST_ALIASES} more"]
    return offered + (f"; aliases: {', '.join(aliases)}" if aliases else "")


def _default(server: Any) -> tuple[str | None, str]:
    """(the provider a request naming none runs on, or None; the words for a person)."""
    name, source = server.default_provider, server.default_source
    if name is None:
        return None, "none: a request names its provider (model: provider/model, or config provider)"
    if source != "config" and not server.settings.policy().offers(name):
        return None, f"none: {name} is not among --models, so a request names its provider"
    why = {"config": "the config's provider", "flag": "--default-provider", "only": "the only provider installed",
           "echo": "the offline provider, which answers with the message; -c provider=NAME to change"}[source]
    return name, f"{name} ({why})"


def describe(server: Any, address: str) -> tuple[str, dict[str, Any]]:
    """The start banner of ``server`` (the app's ``state.server``) listening at ``address``: text and fields."""
    store = server.store_if_open
    store_text = getattr(store, "url", None) or (type(store).__name__ if store is not None else "opened on first use")
    mode, auth = _auth(server)
    providers = list(server.core.plugins("provider"))
    models = _models(server)
    default, default_text = _default(server)
    rows = (
        ("console", f"{address}/ (chat in a browser)"),
        ("store", str(store_text)),
        ("auth", auth),
        ("providers", ", ".join(providers)),
        ("default", default_text),
        ("models", models),
        ("docs", f"{_docs()} (routes, flags, errors); GET {address}/v1/models lists the models"),
    )
    text = f"agent-core serve: listening on {address} (Ctrl+C to stop)\n" + "\n".join(
        f"  {name:<11}{value}" for name, value in rows)
    fields = {"address": address, "console": f"{address}/", "store": str(store_text), "auth": mode, "providers": providers,
              "default_provider": default, "models": models, "docs": _docs()}
    return text, fields
