"""The app of ``agent-core serve``: its routes, over the state it holds.

Stateless on purpose: a route holds no session between requests. The facades'
conversation arrives whole in each request; the sessions API loads from the store, runs
one turn and saves with the revision it loaded, so any number of server processes can
share one store. Every route is a plain function of its request, reading the
:class:`~agent_core.server.state.ServerState` the app holds; the only per-process table is
the engine's own list of running requests (for ``DELETE /v1/requests/{id}``).

The routes, by wing: ``facades/`` (``/v1/chat/completions``, ``/v1/messages``,
``/v1/responses``, ``/v1/models``), ``sessions/`` (``/v1/sessions``, approvals, input,
actions and what the pipeline offers), ``console/`` (``/`` and its files); the front door
around them is ``access/``, the connection under them ``http/``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .. import AgentCore
from ..errors import ConfigError, StoreError
from .access.guard import Admission, Gate
from .access.settings import ServeSettings
from .access.tenants import Tenant, TokenTable, load_tokens_file
from .console.files import PUBLIC_PATHS, asset, page
from .facades.chat.facade import chat
from .facades.client_tools import ClientTools
from .facades.messages.count_tokens import count_tokens
from .facades.messages.facade import messages
from .facades.models import model, models
from .facades.responses.facade import responses
from .http.access_log import AccessLog, log_event
from .http.errors import ApiError
from .http.trace_context import with_trace_context
from .access.ids import path_id
from .http.wire import LIBRARY_ERRORS, on_error
from .metering.admin import operator_layers
from .metering.limits import limited
from .sessions.actions import ActionDesk, session_action
from .sessions.approvals import ApprovalDesk
from .sessions.catalog import actions, plugins, ui_schema
from .sessions.input import answer_approval, apply_input_completion, input_completions
from .sessions.lost_turns import sweep_lost_turns
from .sessions.routes import create_session, delete_session, get_session, list_sessions, turn
from .state import ServerState, state_of

__all__ = ["ROUTES", "create_app"]


async def health(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


async def readiness(request: Request) -> Response:
    """``GET /readyz``: whether this process can run turns now, for a load balancer choosing replicas.

    ``/healthz`` says the process answers; this asks the session store too (a listing that
    matches nothing, on a thread), so a replica whose database is out of reach is taken out of
    rotation instead of answering 503s. The reason names the store, never its URL.
    """
    state = state_of(request)
    try:
        await asyncio.to_thread(lambda: state.store.list(limit=1, prefix="\x00readyz"))
    except (StoreError, OSError) as exc:
        reason = f"the session store cannot be reached ({type(exc).__name__})"
        return JSONResponse({"status": "unready", "reason": reason}, status_code=503, headers={"retry-after": "5"})
    return JSONResponse({"status": "ready"})


async def cancel(request: Request) -> Response:
    """``DELETE /v1/requests/{id}``: cancel a running request, here or in another process on the store."""
    state = state_of(request)
    rid = path_id(request, "request_id")
    internal = state.tenant(request).scope(rid)
    state.approvals.withdraw(internal)  # a question still open would hold the cancel up
    if state.core.cancel_request(internal):
        for choice in range(1, state.settings.max_choices):  # the other choices of an n > 1 request
            state.core.cancel_request(state.tenant(request).scope(f"{rid}.{choice}"))
        return Response(status_code=204)
    if state.relay is not None:
        try:
            if await state.relay.forward(internal):
                return Response(status_code=204)  # another process that shares the store ran it
        except OverflowError:
            raise ApiError(503, "server_busy", "too many cancels are waiting for the other server processes",
                           headers={"retry-after": "1"}) from None
    where = "in any server process on this store" if state.relay is not None else "in this server process"
    raise ApiError(404, "request_not_found", f"no request {rid!r} is running {where}")


ROUTES = [
    Route("/", page, methods=["GET"]),
    Route("/console/{name}", asset, methods=["GET"]),
    Route("/healthz", health, methods=["GET"]),
    Route("/readyz", readiness, methods=["GET"]),
    Route("/v1/chat/completions", chat, methods=["POST"]),
    Route("/v1/messages", messages, methods=["POST"]),
    Route("/v1/messages/count_tokens", count_tokens, methods=["POST"]),
    Route("/v1/responses", responses, methods=["POST"]),
    Route("/v1/models", models, methods=["GET"]),
    Route("/v1/models/{model_id:path}", model, methods=["GET"]),
    Route("/v1/requests/{request_id}", cancel, methods=["DELETE"]),
    Route("/v1/requests/{request_id}/approvals/{call_id}", answer_approval, methods=["POST"]),
    Route("/v1/input/completions", input_completions, methods=["POST"]),
    Route("/v1/input/completions/apply", apply_input_completion, methods=["POST"]),
    Route("/v1/sessions", create_session, methods=["POST"]),
    Route("/v1/sessions", list_sessions, methods=["GET"]),
    Route("/v1/sessions/{session_id}", get_session, methods=["GET"]),
    Route("/v1/sessions/{session_id}", delete_session, methods=["DELETE"]),
    Route("/v1/sessions/{session_id}/turns", turn, methods=["POST"]),
    Route("/v1/sessions/{session_id}/actions/{action_id}", session_action, methods=["POST"]),
    Route("/v1/plugins", plugins, methods=["GET"]),
    Route("/v1/ui-schema", ui_schema, methods=["GET"]),
    Route("/v1/actions", actions, methods=["GET"]),
]


def _lifespan(state: ServerState, metrics: Any) -> Callable[[Any], contextlib.AbstractAsyncContextManager[None]]:
    """The app's lifespan: the cancel relay, the sweep for lost turns and what the metrics serve with (the workers'
    sockets) while it serves;
    on shutdown, after the grace period, cancel what still runs and let the turns save."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        if state.relay is not None:
            await state.relay.start()
        if metrics is not None:
            await metrics.start()
        sweep = (asyncio.ensure_future(sweep_lost_turns(state.store_if_open))
                 if hasattr(state.store_if_open, "asave_lost_turns") else None)
        yield
        if sweep is not None:
            sweep.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweep
        if metrics is not None:
            await metrics.close()
        if state.relay is not None:
            await state.relay.close()
        cancelled = len(state.running) + state.cut  # those still running, and those already unwound
        for rid in list(state.running):
            state.core.cancel_request(rid)
        if state.tasks:
            await asyncio.wait(list(state.tasks), timeout=10)
        state.action_desk.close()
        if hasattr(state.core, "aclose"):  # what plugins keep for the process: the MCP tool's connections
            await state.core.aclose()
        if state.access is not None:
            await state.access.drained(timeout=2)
        log_event(logging.INFO, "stop",
                  f"stopped; cancelled {cancelled} request{'s' * (cancelled != 1)} still running after the grace "
                  "period" if cancelled else "stopped", cancelled=cancelled)

    return lifespan


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
            (:mod:`agent_core.server.fleet.peers`).
        settings: who may connect, from where, and the limits (default :class:`ServeSettings`:
            loopback host names only, no cross-site pages, the documented limits).
        metrics: a :class:`~agent_core.server.metering.metrics.Metrics` to measure requests and model calls
            with; None: nothing is measured.
        admin_token: the bearer token of the operator's routes (``GET /metrics`` when ``metrics`` can
            be scraped, ``GET /v1/admin/tenants/usage``); None: no such routes (:mod:`.metering.admin`).

    A request whose config names no provider runs on the operator config's ``provider``,
    else ``settings.default_provider``, else ``echo`` (see :func:`~.state.default_provider`). Each
    request is logged to the ``agent_core.server`` logger (:mod:`agent_core.server.http.access_log`).

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
    default = Tenant("", settings.policy())
    tokens = _tokens(settings, token, default)
    state = ServerState(core, store, config or {}, retries, settings, default, tokens)
    state.approvals = ApprovalDesk()  # the core's approval callback when the application gave none
    state.action_desk = ActionDesk(settings.max_actions, settings.tenant_max_actions)
    if core.approval is None:  # a sessions-API turn's client answers ask_user (docs/server.md, Tool approvals)
        core.approval = state.approvals
    if cancel_url is not None:  # cancels and approval answers reach the process that runs the request
        from .fleet.peers import PeerDesk, open_relay

        state.relay = open_relay(cancel_url, PeerDesk(core, state.approvals, settings.max_choices))
    handlers: Mapping[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
        cls: on_error for cls in (Exception, HTTPException, ApiError, *LIBRARY_ERRORS)
    }
    app = Starlette(routes=ROUTES, exception_handlers=dict(handlers), lifespan=_lifespan(state, metrics))
    app.state.server = state
    state.access = AccessLog(_front_door(app, state, cancel_url, metrics, admin_token), state=app.state)
    return state.access


def _tokens(settings: ServeSettings, token: str | None, default: Tenant) -> TokenTable | None:
    """Who may connect: the tenants of the tokens file, or the one token's, or anyone (None)."""
    if settings.tokens_file is not None:
        if token:
            raise ConfigError("give either a token or a tokens file, not both (a tokens file names every tenant)")
        return TokenTable(load_tokens_file(settings.tokens_file, default.policy))
    return TokenTable.single(token, default) if token else None


def _front_door(app: Any, state: ServerState, cancel_url: str | None, metrics: Any, admin_token: str | None) -> Any:
    """The layers a request passes before the routes: the Gate, the operator's, CORS when allowed, Admission, the
    tenants' limits, the trace context.

    The access log goes around all of them, so the requests the Gate refuses are logged too.
    """
    settings, tokens = state.settings, state.tokens
    # a client's traceparent parents the spans of its turn (the otel feature's; a no-op without the API);
    # tenants' limits, counted in the store for every process on it (metering.limits), inside the token check
    inner = limited(with_trace_context(app), state.core, tokens, cancel_url)
    wrapped: Any = Admission(inner, settings, tokens, state.default, PUBLIC_PATHS)
    if settings.cors_origins:
        wrapped = CORSMiddleware(
            wrapped, allow_origins=list(settings.cors_origins), allow_methods=["GET", "POST", "DELETE"],
            allow_headers=["authorization", "content-type", "if-match", "x-request-id", "x-session-id"],
            expose_headers=["etag", "retry-after", "x-request-id", "x-session-revision"],
        )
    wrapped = operator_layers(wrapped, state.core, metrics, admin_token, cancel_url)  # metrics, /metrics, admin routes
    return Gate(wrapped, allowed_hosts=settings.allowed_hosts, cors_origins=settings.cors_origins)
