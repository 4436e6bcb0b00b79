"""The routes of ``agent-core serve``: an OpenAI-compatible facade and a sessions API.

Stateless on purpose: a handler holds no session between requests. The
facade's conversation arrives whole in each request; the sessions API loads
from the store, runs one turn and saves with the revision it loaded, so any
number of server processes can share one store. The only per-process table is
the engine's own list of running requests (for ``DELETE /v1/requests/{id}``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import msgspec
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .. import AgentCore
from ..errors import ConfigError, UnknownConfigKeyWarning
from .access_log import AccessLog, log_event
from .admin import operator_layers
from .actions_api import ActionDesk, session_action
from .approvals import ApprovalDesk
from .bodies import json_depth
from .client_tools import ClientTools
from .console_files import PUBLIC_PATHS, ConsoleFiles
from .count_tokens import count_tokens
from .errors import ApiError
from .facade import FacadeRoutes
from .fields import keys_by_plugin
from .gate import session_plugin_mode
from .guard import TENANT_KEY, Admission, Gate
from .http import (
    LIBRARY_ERRORS,
    on_error,
    path_id,
    plain,
)
from .input_api import InputRoutes
from .limits import limited
from .messages_api import MessagesRoutes
from .responses_api import ResponsesRoutes
from .sessions_api import SessionRoutes
from .settings import ServeSettings
from .tenants import Tenant, TenantStore, TokenTable, load_tokens_file
from .trace_context import with_trace_context

__all__ = ["create_app"]

_decode = msgspec.json.Decoder().decode


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


class _Server(FacadeRoutes, MessagesRoutes, ResponsesRoutes, SessionRoutes, InputRoutes):
    def __init__(self, core: AgentCore, store: Any, config: Mapping[str, Any], retries: int,
                 settings: ServeSettings, default: Tenant, tokens: TokenTable | None = None) -> None:
        self.core = core
        self.approvals = ApprovalDesk()  # the core's approval callback when the application gave none
        self.action_desk = ActionDesk(settings.max_actions, settings.tenant_max_actions)
        self.console = ConsoleFiles()
        self.retries = retries
        self._tasks: set[asyncio.Future[None]] = set()  # running turns (kept referenced until they end)
        self._running: set[str] = set()  # engine ids of the requests this process runs (cancelled at shutdown)
        self._cut = 0  # turns whose request task was cancelled while they ran (the server's grace ran out)
        self.relay: Any = None  # a PgCancelRelay when cancels reach the other processes
        self._store = store
        self.config = dict(config)
        self.settings = settings
        self.default = default
        self.tokens = tokens
        self.access: AccessLog | None = None  # the app's outer layer, which counts the requests in flight
        self.default_provider, self.default_source = default_provider(
            self.config, settings, list(core.plugins("provider")))
        # The operator's config with the default provider filled in. Model names (resolve_model) still
        # read the operator's own: a mistyped model must be a 404, not an answer from echo.
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

    # -- who asks, and what they may set -----------------------------------------

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

    def _declared(self) -> frozenset[str]:
        """Every key a registered plugin declares (kept until the registrations change)."""
        by_plugin = keys_by_plugin(self.core)
        known = self.__dict__.get("_declared_memo")
        if known is None or known[0] is not by_plugin:
            known = self.__dict__["_declared_memo"] = (by_plugin, frozenset().union(*by_plugin.values()))
        return known[1]

    # -- facade ------------------------------------------------------------

    async def cancel(self, request: Request) -> Response:
        rid = path_id(request, "request_id")
        internal = self.tenant(request).scope(rid)
        self.approvals.withdraw(internal)  # a question still open would hold the cancel up
        if self.core.cancel_request(internal):
            for choice in range(1, self.settings.max_choices):  # the other choices of an n > 1 request
                self.core.cancel_request(self.tenant(request).scope(f"{rid}.{choice}"))
            return Response(status_code=204)
        if self.relay is not None:
            try:
                if await self.relay.forward(internal):
                    return Response(status_code=204)  # another process that shares the store ran it
            except OverflowError:
                raise ApiError(503, "server_busy", "too many cancels are waiting for the other server processes",
                               headers={"retry-after": "1"}) from None
        where = "in any server process on this store" if self.relay is not None else "in this server process"
        raise ApiError(404, "request_not_found", f"no request {rid!r} is running {where}")

    async def health(self, request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    # -- plugins, UI, actions --------------------------------------------------

    def _query_config(self, request: Request) -> dict[str, Any]:
        """The config of a GET: one query parameter per key (JSON values, as ``-c``), through the policy."""
        client: dict[str, Any] = {}
        depth = self.settings.max_json_depth
        for key, raw in request.query_params.items():
            try:
                value = _decode(raw)
            except RecursionError:
                raise ApiError(400, "invalid_request_error", f"query parameter {key!r} nests too deeply",
                               param=key) from None
            except (msgspec.DecodeError, msgspec.ValidationError):
                value = raw  # a bare word: the string itself
            if json_depth(value, depth) > depth:
                raise ApiError(400, "invalid_request_error",
                               f"query parameter {key!r} nests deeper than {depth} levels", param=key)
            client[key] = value
        return self.config_for(request, client)

    async def plugins(self, request: Request) -> Response:
        config = self._query_config(request)
        res = await asyncio.to_thread(self.core.resolve, config)
        on = {str(res.provider), *map(str, res.extensions), *map(str, res.features), *map(str, res.tools)}
        data = [
            {"kind": kind, "name": name, "enabled": name in on,
             "reason": res.reasons.get(name) or "off: not the selected provider"}
            for kind in ("provider", "extension", "feature", "tool") for name in self.core.plugins(kind)
        ]
        return JSONResponse({"object": "list", "data": data, "warnings": list(res.warnings)})

    async def ui_schema(self, request: Request) -> Response:
        elements = await asyncio.to_thread(self.core.get_ui_schema, self._query_config(request))
        allowed = self.tenant(request).policy.allow
        for element in elements:  # which settings a client may send in its config (the console shows those)
            if element.get("ui_type") == "config" and "key" in element:
                element["client_settable"] = element["key"] in allowed
        return JSONResponse({"object": "list", "data": json.loads(json.dumps(elements, default=plain))})

    async def actions(self, request: Request) -> Response:
        actions = await asyncio.to_thread(self.core.get_actions, self._query_config(request))
        return JSONResponse({"object": "list", "data": json.loads(json.dumps(actions, default=plain))})

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Any) -> AsyncIterator[None]:
        """On shutdown, after the server's grace period: cancel what still runs, let turns save."""
        if self.relay is not None:
            await self.relay.start()
        yield
        if self.relay is not None:
            await self.relay.close()
        cancelled = len(self._running) + self._cut  # those still running, and those already unwound
        for rid in list(self._running):
            self.core.cancel_request(rid)
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=10)
        self.action_desk.close()
        if hasattr(self.core, "aclose"):  # what plugins keep for the process: the MCP tool's connections
            await self.core.aclose()
        if self.access is not None:
            await self.access.drained(timeout=2)
        log_event(logging.INFO, "stop",
                  f"stopped; cancelled {cancelled} request{'s' * (cancelled != 1)} still running after the grace "
                  "period" if cancelled else "stopped", cancelled=cancelled)

    def routes(self) -> list[Route]:
        return [
            Route("/", self.console.page, methods=["GET"]),
            Route("/console/{name}", self.console.asset, methods=["GET"]),
            Route("/healthz", self.health, methods=["GET"]),
            Route("/v1/chat/completions", self.chat, methods=["POST"]),
            Route("/v1/messages", self.messages, methods=["POST"]),
            Route("/v1/messages/count_tokens", functools.partial(count_tokens, self), methods=["POST"]),
            Route("/v1/responses", self.responses, methods=["POST"]),
            Route("/v1/models", self.models, methods=["GET"]),
            Route("/v1/models/{model_id:path}", self.model, methods=["GET"]),
            Route("/v1/requests/{request_id}", self.cancel, methods=["DELETE"]),
            Route("/v1/requests/{request_id}/approvals/{call_id}", self.answer_approval, methods=["POST"]),
            Route("/v1/input/completions", self.input_completions, methods=["POST"]),
            Route("/v1/input/completions/apply", self.apply_input_completion, methods=["POST"]),
            Route("/v1/sessions", self.create_session, methods=["POST"]),
            Route("/v1/sessions", self.list_sessions, methods=["GET"]),
            Route("/v1/sessions/{session_id}", self.get_session, methods=["GET"]),
            Route("/v1/sessions/{session_id}", self.delete_session, methods=["DELETE"]),
            Route("/v1/sessions/{session_id}/turns", self.turn, methods=["POST"]),
            Route("/v1/sessions/{session_id}/actions/{action_id}", functools.partial(session_action, self),
                  methods=["POST"]),
            Route("/v1/plugins", self.plugins, methods=["GET"]),
            Route("/v1/ui-schema", self.ui_schema, methods=["GET"]),
            Route("/v1/actions", self.actions, methods=["GET"]),
        ]


def create_app(core: AgentCore | None = None, store: Any = None, token: str | None = None, *,
               config: Mapping[str, Any] | None = None, retries: int = 3, cancel_url: str | None = None,
               settings: ServeSettings | None = None, metrics: Any = None, admin_token: str | None = None) -> Any:
    """The ASGI app of ``agent-core serve``.

    Args:
        core: the pipeline (default :meth:`AgentCore.discover`). The ``client_tools``
            tool plugin is registered on it, so OpenAI clients' ``tools`` reach the model.
        store: a session store for ``/v1/sessions`` (default: ``open_store()``, opened on first use).
        token: when set, every route wants ``Authorization: Bearer <token>`` (one tenant; for
            several, name a tokens file in ``settings``).
        config: the operator's config, which every request starts from (e.g. ``base_url``). A
            request may override only the keys ``settings`` allows (see :class:`ConfigPolicy`).
        retries: how often a turn without ``If-Match`` starts again after losing a save race
            (each retry is another model call; see ``docs/store.md``).
        cancel_url: the store's URL (``postgresql://`` or ``sqlite:///``): ``DELETE /v1/requests/{id}`` and
            approval answers then also reach requests running in the other processes on that store
            (:mod:`agent_core.server.peers`).
        settings: who may connect, from where, and the limits (default :class:`ServeSettings`:
            loopback host names only, no cross-site pages, the documented limits).
        metrics: a :class:`~agent_core.server.metrics.Metrics` to measure requests and model calls
            with; None: nothing is measured.
        admin_token: the bearer token of the operator's routes (``GET /metrics`` when ``metrics`` can
            be scraped, ``GET /v1/admin/tenants/usage``); None: no such routes (:mod:`.admin`).

    A request whose config names no provider runs on the operator config's ``provider``,
    else ``settings.default_provider``, else ``echo`` (see :func:`default_provider`). Each
    request is logged to the ``agent_core.server`` logger (:mod:`agent_core.server.access_log`).

    Raises:
        ConfigError: a tokens file that cannot be read, both ``token`` and a tokens file, or a
            ``default_provider`` that is not installed.
    """
    settings = settings or ServeSettings()
    if core is None:
        off = (config or {}).get("disabled_plugins") or ()  # a broken package the operator switched off
        core = AgentCore.discover(tools=[ClientTools], disabled=[n for n in off if isinstance(n, str)])
    elif "client_tools" not in core.plugins("tool"):
        core.register_tool(ClientTools)
    policy = settings.policy()
    default = Tenant("", policy)
    tokens = None
    if settings.tokens_file is not None:
        if token:
            raise ConfigError("give either a token or a tokens file, not both (a tokens file names every tenant)")
        tokens = TokenTable(load_tokens_file(settings.tokens_file, policy))
    elif token:
        tokens = TokenTable.single(token, default)
    server = _Server(core, store, config or {}, retries, settings, default, tokens)
    if core.approval is None:  # a sessions-API turn's client answers ask_user (docs/server.md, Tool approvals)
        core.approval = server.approvals
    if cancel_url is not None:  # cancels and approval answers reach the process that runs the request
        from .peers import PeerDesk, open_relay

        server.relay = open_relay(cancel_url, PeerDesk(core, server.approvals, settings.max_choices))
    handlers: Mapping[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
        cls: on_error for cls in (Exception, HTTPException, ApiError, *LIBRARY_ERRORS)
    }
    app = Starlette(routes=server.routes(), exception_handlers=dict(handlers), lifespan=server.lifespan)
    app.state.server = server
    # a client's traceparent parents the spans of its turn (the otel feature's; a no-op without the API)
    # tenants' limits, counted in the store for every process on it (.limits), inside the token check
    inner = limited(with_trace_context(app), core, tokens, cancel_url)
    wrapped: Any = Admission(inner, settings, tokens, default, PUBLIC_PATHS)
    if settings.cors_origins:
        wrapped = CORSMiddleware(
            wrapped, allow_origins=list(settings.cors_origins), allow_methods=["GET", "POST", "DELETE"],
            allow_headers=["authorization", "content-type", "if-match", "x-request-id", "x-session-id"],
            expose_headers=["etag", "retry-after", "x-request-id", "x-session-revision"],
        )
    wrapped = operator_layers(wrapped, core, metrics, admin_token, cancel_url)  # metrics, /metrics, admin routes
    # Outermost, so the requests the Gate refuses are logged too.
    server.access = AccessLog(Gate(wrapped, allowed_hosts=settings.allowed_hosts, cors_origins=settings.cors_origins),
                              state=app.state)
    return server.access
