"""What the app holds for its routes: one :class:`ServerState`, at ``app.state.server``.

Every route is a plain function of its request; what it needs beyond the request (the
pipeline, the operator's config and settings, the store, who is asking, what runs in
this process) it reads from this value, found with :func:`state_of`. Nothing in it
belongs to one request: the server stays stateless between requests (``docs/server.md``),
and the only per-process tables are the engine ids of the turns it runs, for the cancel
route and the shutdown.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Mapping
from typing import Any

from starlette.requests import Request

from .. import AgentCore
from ..errors import ConfigError, UnknownConfigKeyWarning
from .access.gate import session_plugin_mode
from .access.guard import TENANT_KEY
from .access.settings import ServeSettings
from .access.tenants import Tenant, TenantStore, TokenTable

__all__ = ["ServerState", "default_provider", "operator_notes", "state_of"]


def default_provider(config: Mapping[str, Any], settings: ServeSettings,
                     providers: list[str]) -> tuple[str | None, str | None]:
    """The provider a request that names none runs on, and where that choice came from.

    The operator's config first, then ``--default-provider``, then the only provider
    installed, then ``echo``: a newcomer's first turn then answers, offline, as the CLI's
    does, instead of a 400 asking which provider. ``(None, None)`` when none applies.

    Raises:
        ConfigError: ``--default-provider`` names a provider that is not installed.
    """
    if config.get("provider"):
        return str(config["provider"]), "config"
    if settings.default_provider:
        if settings.default_provider not in providers:
            raise ConfigError(f"--default-provider {settings.default_provider!r} is not an installed provider "
                              f"(installed: {', '.join(providers)})", key="default_provider")
        return settings.default_provider, "flag"
    if len(providers) == 1:
        return providers[0], "only"
    if "echo" in providers:
        return "echo", "echo"
    return None, None


def operator_notes(core: AgentCore, config: Mapping[str, Any]) -> tuple[str, ...]:
    """The operator's config resolved once, before the server listens; its warnings (keys nothing declares).

    Every request starts from this config, so a provider that is not installed or a value
    of the wrong type would fail each one of them: the server refuses to start instead,
    as ``agent-core run`` refuses to run.

    Raises:
        ConfigError: the config cannot resolve; the message says it is the server's own.
    """
    # list_models would ask the upstream for its models: a start-up check makes no network call
    offline = {k: v for k, v in config.items() if k != "list_models"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnknownConfigKeyWarning)  # returned, to be logged once at start
        try:
            return tuple(core.resolve(offline).warnings)
        except ConfigError as exc:
            raise ConfigError(f"the server's own config (--config, $AGENT_CORE_*, -c): {exc}", key=exc.key,
                              plugins=exc.plugins) from None


class ServerState:
    """The pipeline, the operator's config and settings, the store, and the turns this process runs.

    ``approvals`` and ``action_desk`` are the sessions wing's per-process desks (the questions
    waiting for a person, the action pool), set by :func:`~agent_core.server.app.create_app`.
    """

    def __init__(self, core: AgentCore, store: Any, config: Mapping[str, Any], retries: int,
                 settings: ServeSettings, default: Tenant, tokens: TokenTable | None = None) -> None:
        self.core = core
        self.retries = retries
        self.tasks: set[asyncio.Future[None]] = set()  # running turns (kept referenced until they end)
        self.running: set[str] = set()  # engine ids of the requests this process runs (cancelled at shutdown)
        self.cut = 0  # turns whose request task was cancelled while they ran (the server's grace ran out)
        self.relay: Any = None  # the relay to the other processes on the store (fleet.peers), when there are any
        self.approvals: Any = None  # the sessions wing's ApprovalDesk
        self.action_desk: Any = None  # the sessions wing's ActionDesk
        self.access: Any = None  # the app's outer layer (AccessLog), which counts the requests in flight
        self.known_models: list[str] | None = None  # names to suggest for a mistyped model (made on first need)
        self._store = store
        self.config = dict(config)
        self.settings = settings
        self.default = default
        self.tokens = tokens
        self.default_provider, self.default_source = default_provider(
            self.config, settings, list(core.plugins("provider")))
        # The operator's config with the default provider filled in. Model names (model_name)
        # still read the operator's own: a mistyped model must be a 404, not an answer from echo.
        self._with_default = (None if self.default_provider is None or self.default_source == "config"
                              else {**self.config, "provider": self.default_provider})
        self.config_notes = (operator_notes(core, self._with_default or self.config)
                             if self.default_provider is not None else ())

    @property
    def store_if_open(self) -> Any:
        """The store, or None when it is still to be opened on first use."""
        return self._store

    @property
    def store(self) -> Any:
        if self._store is None:  # opened on first use: the facade alone needs no database
            from ..store import open_store

            self._store = open_store()
        return self._store

    def tenant(self, request: Request) -> Tenant:
        return request.scope.get(TENANT_KEY) or self.default

    def store_for(self, request: Request) -> TenantStore:
        """The store as the asking tenant sees it: its own sessions only."""
        return TenantStore(self.store, self.tenant(request))

    def config_for(self, request: Request, client: Mapping[str, Any] | None) -> dict[str, Any]:
        """The operator's config with the keys of ``client`` the tenant's policy allows (403 otherwise).

        The default provider fills in only where the tenant may use it: a tenant limited to
        ``--models openai`` gets no echo behind its back (it is told to name a provider).
        """
        policy = self.tenant(request).policy
        base = self.config
        if self._with_default is not None and policy.offers(self.default_provider):
            base = self._with_default
        # the operator's URL and key are for the provider its config names (none: for whichever runs)
        merged = policy.merge(base, client, providers=self.core.plugins("provider"), bound=self.config.get("provider"))
        # a stored session's plugin list is client data: read only to opt in, and only where the tenant may
        merged.setdefault("session_plugins", session_plugin_mode(policy.allow))
        return merged


def state_of(request: Request) -> ServerState:
    """The state of the app serving ``request`` (starlette sets ``request.app`` to it)."""
    return request.app.state.server  # type: ignore[no-any-return]
