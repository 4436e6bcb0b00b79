"""The operator's routes: ``GET /metrics`` and ``GET /v1/admin/tenants/usage``, to the admin token only.

They answer for every tenant, so no tenant's token opens them: this layer sits outside the
tenants' token check and wants ``Authorization: Bearer <admin token>`` (``agent-core serve
--admin-token``), compared in constant time. Without an admin token neither route exists
(404, as any unknown path). A wrong or missing token is a 401 that names the route, never
the token.
"""

from __future__ import annotations

import asyncio
import hmac
import inspect
import json
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["AdminLayer", "admin_routes", "operator_layers"]

_USAGE = "/v1/admin/tenants/usage"
#: what answers ``GET /metrics``: the body and its content type, at once or awaited
Scrape = Callable[[], "tuple[bytes, str] | Awaitable[tuple[bytes, str]]"]


def operator_layers(app: Any, core: Any, metrics: Any, token: str | None, ledger_url: str | None) -> Any:
    """``app`` measured when there are ``metrics`` (outside the tenants' token check, so its refusals count),
    behind the admin routes when there is a ``token`` (so a scrape is not measured as a request)."""
    if metrics is not None:
        if "server_metrics" not in core.plugins("feature"):  # model calls, through the engine's observers
            core.register_feature(metrics.feature())
        app = metrics.layer(app)
    return admin_routes(app, token, metrics.scrape if metrics is not None else None, ledger_url)


def admin_routes(app: Any, token: str | None, scrape: Scrape | None,
                 ledger_url: str | None) -> Any:
    """``app`` with the admin routes in front when there is an admin token; else ``app`` itself."""
    return app if not token else AdminLayer(app, token, scrape, ledger_url)


class AdminLayer:
    """The ASGI layer that answers the admin routes and passes every other request on."""

    def __init__(self, app: Any, token: str, scrape: Scrape | None,
                 ledger_url: str | None) -> None:
        self.app = app
        self._wanted = b"Bearer " + token.encode()
        self.scrape = scrape
        self.ledger_url = ledger_url
        self._ledger: Any = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        path = scope.get("path") if scope["type"] == "http" else None
        if path not in ("/metrics", _USAGE) or (path == "/metrics" and self.scrape is None):
            await self.app(scope, receive, send)
            return
        given = next((bytes(v) for k, v in scope.get("headers", ()) if k == b"authorization"), b"")
        if scope["method"] != "GET":
            await _answer(send, 405, json.dumps({"error": {"type": "method_not_allowed",
                                                           "message": f"{path} answers GET only"}}).encode())
        elif not hmac.compare_digest(given, self._wanted):
            await _answer(send, 401, json.dumps({"error": {"type": "authentication_error", "message":
                                                           f"{path} wants Authorization: Bearer <the admin token> "
                                                           "(agent-core serve --admin-token)"}}).encode())
        elif path == "/metrics":
            assert self.scrape is not None
            scraped = self.scrape()  # with --workers, an awaitable: the other workers are asked too
            body, kind = await scraped if inspect.isawaitable(scraped) else scraped
            await _answer(send, 200, body, kind)
        else:
            await _answer(send, 200, await self._usage())

    async def _usage(self) -> bytes:
        import msgspec

        if self.ledger_url is None:
            return b'{"object":"list","data":[]}'
        if self._ledger is None:
            from ...store import TenantLedger

            self._ledger = TenantLedger(self.ledger_url)
        rows = await asyncio.to_thread(self._ledger.usage)
        return msgspec.json.encode({"object": "list", "data": rows})


async def _answer(send: Any, status: int, body: bytes, kind: str = "application/json") -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", kind.encode()), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
