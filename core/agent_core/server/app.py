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
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..engine import AgentCore
from .client_tools import ClientTools
from .errors import ApiError
from .facade import FacadeRoutes
from .http import (
    LIBRARY_ERRORS,
    BearerAuth,
    on_error,
    plain,
)
from .sessions_api import SessionRoutes

__all__ = ["create_app"]


class _Server(FacadeRoutes, SessionRoutes):
    def __init__(self, core: AgentCore, store: Any, token: str | None, config: Mapping[str, Any],
                 retries: int) -> None:
        self.core = core
        self.retries = retries
        self._tasks: set[asyncio.Future[None]] = set()  # running turns (kept referenced until they end)
        self._running: set[str] = set()  # ids of the requests this process runs (cancelled at shutdown)
        self.relay: Any = None  # a PgCancelRelay when cancels reach the other processes
        self._store = store
        self.token = token
        self.config = dict(config)

    @property
    def store(self) -> Any:
        if self._store is None:  # opened on first use: the facade alone needs no database
            from ..store import open_store

            self._store = open_store()
        return self._store

    # -- facade ------------------------------------------------------------

    def _declared(self) -> set[str]:
        return {entry["key"] for entry in self.core.get_config_schema()}

    async def cancel(self, request: Request) -> Response:
        rid = request.path_params["request_id"]
        if self.core.cancel_request(rid):
            return Response(status_code=204)
        if self.relay is not None and await asyncio.to_thread(self.relay.forward, rid):
            return Response(status_code=204)  # another process that shares the store ran it
        where = "in any server process on this store" if self.relay is not None else "in this server process"
        raise ApiError(404, "request_not_found", f"no request {rid!r} is running {where}")

    async def health(self, request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    # -- sessions ------------------------------------------------------------

    def _query_config(self, request: Request) -> dict[str, Any]:
        """The config of a GET: the server's keys, then one query parameter per key (JSON values, as ``-c``)."""
        config = dict(self.config)
        for key, raw in request.query_params.items():
            try:
                config[key] = json.loads(raw)
            except ValueError:
                config[key] = raw
        return config

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
        return JSONResponse({"object": "list", "data": json.loads(json.dumps(elements, default=plain))})

    async def actions(self, request: Request) -> Response:
        actions = await asyncio.to_thread(self.core.get_actions, self._query_config(request))
        return JSONResponse({"object": "list", "data": json.loads(json.dumps(actions, default=plain))})

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Any) -> AsyncIterator[None]:
        """On shutdown, after the server's grace period: cancel what still runs, let turns save."""
        if self.relay is not None:
            await asyncio.to_thread(self.relay.start)
        yield
        if self.relay is not None:
            await asyncio.to_thread(self.relay.close)
        for rid in list(self._running):
            self.core.cancel_request(rid)
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=10)

    def routes(self) -> list[Route]:
        return [
            Route("/healthz", self.health, methods=["GET"]),
            Route("/v1/chat/completions", self.chat, methods=["POST"]),
            Route("/v1/models", self.models, methods=["GET"]),
            Route("/v1/requests/{request_id}", self.cancel, methods=["DELETE"]),
            Route("/v1/sessions", self.create_session, methods=["POST"]),
            Route("/v1/sessions", self.list_sessions, methods=["GET"]),
            Route("/v1/sessions/{session_id}", self.get_session, methods=["GET"]),
            Route("/v1/sessions/{session_id}", self.delete_session, methods=["DELETE"]),
            Route("/v1/sessions/{session_id}/turns", self.turn, methods=["POST"]),
            Route("/v1/sessions/{session_id}/actions/{action_id}", self.session_action, methods=["POST"]),
            Route("/v1/plugins", self.plugins, methods=["GET"]),
            Route("/v1/ui-schema", self.ui_schema, methods=["GET"]),
            Route("/v1/actions", self.actions, methods=["GET"]),
        ]


def create_app(core: AgentCore | None = None, store: Any = None, token: str | None = None, *,
               config: Mapping[str, Any] | None = None, retries: int = 3, cancel_url: str | None = None) -> Any:
    """The ASGI app of ``agent-core serve``.

    Args:
        core: the pipeline (default :meth:`AgentCore.discover`). The ``client_tools``
            tool plugin is registered on it, so OpenAI clients' ``tools`` reach the model.
        store: a session store for ``/v1/sessions`` (default: ``open_store()``, opened on first use).
        token: when set, every route wants ``Authorization: Bearer <token>``.
        config: config keys every request starts from (e.g. ``base_url``); the request's own win.
        retries: how often a turn without ``If-Match`` starts again after losing a save race
            (each retry is another model call; see ``docs/store.md``).
        cancel_url: a ``postgresql://`` URL (the store's): ``DELETE /v1/requests/{id}`` then also
            reaches requests running in the other processes listening there (LISTEN/NOTIFY).
    """
    if core is None:
        core = AgentCore.discover(tools=[ClientTools])
    elif "client_tools" not in core.plugins("tool"):
        core.register_tool(ClientTools)
    server = _Server(core, store, token, config or {}, retries)
    if cancel_url is not None:
        from .relay import PgCancelRelay

        server.relay = PgCancelRelay(cancel_url, core.cancel_request)
    handlers: Mapping[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
        cls: on_error for cls in (Exception, HTTPException, ApiError, *LIBRARY_ERRORS)
    }
    app = Starlette(routes=server.routes(), exception_handlers=dict(handlers), lifespan=server.lifespan)
    app.state.server = server
    return BearerAuth(app, token) if token else app
