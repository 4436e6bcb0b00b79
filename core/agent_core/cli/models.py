"""``agent-core models``: what each installed provider offers, and the model a command uses by default.

A provider whose API has a list endpoint (it declares ``list_models``) is asked for its
list; one that cannot be asked is shown with its own default model and the reason (no API
key for the public API, an unreachable server): a missing key is never sent to the public
API just to be refused. The configured provider's URL, model and key stay with it; the
other providers are asked on their own defaults. The default line is what ``agent-core
run`` with the same flags would use, and where that came from.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from typing import Any

import msgspec

from ..errors import AgentCoreError
from .commands import make_core
from .settings import config_sources, layered_config

__all__ = ["add_models"]

#: keys that belong to the provider they were set for, not to every provider listed
_PROVIDER_OWN = ("model", "base_url", "api_key", "extra_headers", "list_models")


class Offer(msgspec.Struct, frozen=True):
    """One provider's models: asked from its API (``listed``), or its default with the reason it was not."""

    provider: str
    models: tuple[str, ...]
    listed: bool
    note: str = ""


def _ids(models: Any) -> tuple[str, ...]:
    return tuple(str(m["id"]) for m in models if isinstance(m, Mapping) and m.get("id"))


def _can_list(core: Any, provider: str) -> bool:
    return any(e.get("plugin") == provider and e.get("key") == "list_models" for e in core.get_config_schema())


def _offer(core: Any, provider: str, config: dict[str, Any]) -> Offer:
    """What ``provider`` offers under ``config`` (its own keys kept only when it is the configured provider)."""
    mine = config.get("provider") == provider
    own = {k: v for k, v in config.items() if mine or k not in _PROVIDER_OWN}
    own["provider"] = provider
    try:
        fallback = _ids(core.get_models(own))
    except AgentCoreError as exc:
        return Offer(provider, (), False, f"cannot run: {exc}")
    if not _can_list(core, provider):
        return Offer(provider, fallback, False, "no list endpoint: the models it names")
    instance = getattr(core.resolve(own).live.get(provider), "instance", None)
    key_missing = getattr(instance, "key_missing", None)
    missing = key_missing(own) if callable(key_missing) else None
    if missing:
        return Offer(provider, fallback, False, f"not asked, ${missing} is not set: its default model")
    try:
        return Offer(provider, _ids(core.get_models({**own, "list_models": True})), True)
    except AgentCoreError as exc:
        return Offer(provider, fallback, False, f"could not list: {exc}; its default model")


def _default(core: Any, config: dict[str, Any], sources: Mapping[str, str]) -> tuple[str, str]:
    """(``provider/model`` a command uses with this config, where each half came from)."""
    model = config.get("model")
    if model is None:  # the provider's own default, as a request would use it (never asking the API)
        offline = {k: v for k, v in config.items() if k != "list_models"}
        model = (_ids(core.get_models(offline))[:1] or ("?",))[0]
    why = [f"provider from {sources['provider']}" if "provider" in sources else "no provider set: the offline echo",
           f"model from {sources['model']}" if "model" in sources else "the provider's default model"]
    return f"{config['provider']}/{model}", "; ".join(why)


def _models(args: argparse.Namespace) -> int:
    config = layered_config(args)
    core = make_core(args, provider=config["provider"], config=config, keep_going=True)
    providers = [args.only] if args.only else list(core.plugins("provider"))
    offers = [_offer(core, name, config) for name in providers]
    default, why = _default(core, config, config_sources(args))
    if args.json:
        print(json.dumps({"default": default, "default_from": why,
                          "providers": [msgspec.to_builtins(o) for o in offers]}))
        return 0
    out = sys.stdout
    out.write(f"default  {default} ({why})\n")
    for offer in offers:
        how = f"listed by its API: {len(offer.models)} models" if offer.listed else offer.note
        out.write(f"{offer.provider} ({how})\n")
        out.writelines(f"  {model}\n" for model in offer.models)
    return 0


def add_models(sub: Any, common: argparse.ArgumentParser) -> None:
    from . import add_command

    models = add_command(
        sub, "models", parents=[common], help="the models each installed provider offers, and the default",
        examples=(("agent-core models", "every provider; the public APIs only with their key set"),
                  ("agent-core models --provider openai --base-url http://127.0.0.1:11434/v1",
                   "what a local Ollama serves"),
                  ("agent-core models --only anthropic", "one provider, whatever the default")))
    models.add_argument("--only", metavar="PROVIDER", help="list only this provider")
    models.add_argument("--json", action="store_true", help="one JSON object")
    models.set_defaults(func=_models)
