"""Tenant limits that hold across server processes: concurrent requests, requests and tokens a minute, a budget.

A tenant of the tokens file may have a ``limits`` table::

    [[tenants]]
    name = "alice"
    token_sha256 = "..."
    models = ["openai/gpt-4o-mini"]          # what it may use (the config policy's, already)
    limits = { max_concurrent = 4, requests_per_minute = 60, tokens_per_minute = 100000, budget_usd = 5.0 }

The numbers live in the store's database (:class:`~agent_core.store.tenant_ledger.TenantLedger`),
so they hold for every worker and replica on that store. :class:`LimitsLayer` sits inside
the token check (it knows the tenant) and around the routes that call a model: it asks the
ledger to admit the request (one transaction), answers 429 with ``retry-after`` or 402 in
the route's own error shape when a limit is reached, and settles the request's tokens and
cost when it ends (one more). Tokens and cost come from :class:`UsageWatch`, an observer
the server registers on its pipeline: tokens as the provider reported them, and the cost
the ``usage`` feature put on each answer from the operator config's ``prices`` (dollars
per million tokens). Without a price for the model, or with ``usage`` off, a request
costs nothing and a budget never runs out: the operator sets ``prices`` with a budget.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from typing import Any

from ... import RequestObserver
from ...errors import ConfigError
from ...plugin_kit import Feature
from ...store import Refused, TenantLedger
from ..http.failures import Failure, dialect_of, render
from ..access.guard import TENANT_KEY
from .metrics import SCOPE

__all__ = ["LimitsLayer", "UsageWatch", "limited"]

_SPENT = "agent_core.spent"  # [tokens, dollars] of the request, filled in by UsageWatch
_MODEL_ROUTES = frozenset({"/v1/chat/completions", "/v1/messages", "/v1/responses"})


def _limited_route(path: str) -> bool:
    return path in _MODEL_ROUTES or (path.startswith("/v1/sessions/") and path.endswith("/turns"))


def limited(app: Any, core: Any, tokens: Any, url: str | None) -> Any:
    """``app`` behind :class:`LimitsLayer` when a tenant has limits and the store is known; else ``app`` itself."""
    if tokens is None or not tokens.limited():
        return app
    if url is None:
        raise ConfigError("a tenant of the tokens file has limits, which are counted in the store: give create_app "
                          "the store's URL (cancel_url), as agent-core serve does")
    if UsageWatch.name not in core.plugins("feature"):
        core.register_feature(UsageWatch)
    return LimitsLayer(app, TenantLedger(url))


class LimitsLayer:
    """The ASGI layer that admits and settles limited tenants' model requests (see the module docstring)."""

    def __init__(self, app: Any, ledger: TenantLedger) -> None:
        self.app = app
        self.ledger = ledger
        self._renewing: asyncio.Task[None] | None = None
        self.in_flight = 0  # this process's admitted requests still running

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        tenant = scope.get(TENANT_KEY) if scope["type"] == "http" else None
        if tenant is None or tenant.limits is None or not _limited_route(scope["path"]):
            await self.app(scope, receive, send)
            return
        verdict = await asyncio.to_thread(self.ledger.admit, tenant.name, tenant.limits)
        if isinstance(verdict, Refused):
            await self._refuse(scope, send, verdict)
            return
        self.in_flight += 1
        if self._renewing is None or self._renewing.done():
            self._renewing = asyncio.ensure_future(self._renew())
        spent = scope[_SPENT] = [0, 0.0]
        token = SCOPE.set(scope)
        try:
            await self.app(scope, receive, send)
        finally:
            SCOPE.reset(token)
            self.in_flight -= 1
            settle = asyncio.ensure_future(asyncio.to_thread(self.ledger.settle, tenant.name, verdict.rid,
                                                             spent[0], spent[1]))
            await asyncio.shield(settle)  # a cancelled request is still settled

    async def _renew(self) -> None:
        """While requests of this process run, keep their rows counted (one statement a third of the hold)."""
        while self.in_flight:
            await asyncio.sleep(self.ledger.hold_s / 3)
            with contextlib.suppress(Exception):  # a database away now: the next tick tries again
                await asyncio.to_thread(self.ledger.renew)

    async def _refuse(self, scope: Any, send: Any, refused: Refused) -> None:
        headers = {"retry-after": str(refused.retry_after)} if refused.retry_after is not None else {}
        failure = Failure(status=refused.status, kind=refused.kind, message=refused.message, headers=headers)
        response = render(failure, dialect_of(scope["path"]))

        async def no_receive() -> dict[str, Any]:
            return {"type": "http.disconnect"}

        await response({"type": "http"}, no_receive, send)


class UsageWatch(Feature):
    """Adds up a limited request's tokens and cost for :class:`LimitsLayer` (an observer; nothing per chunk)."""

    name = "tenant_usage"
    version = "1.0.0"
    default_enabled = True

    def observe_request(self, config: Any, *, context: Any = None) -> Any:
        scope = SCOPE.get()
        if scope is None or _SPENT not in scope:
            return None
        return _Watch(scope[_SPENT])


class _Watch(RequestObserver):
    def __init__(self, spent: list[Any]) -> None:
        self.spent = spent

    def provider_call_ended(self, iteration: int, messages: Any) -> None:
        for message in messages:
            usage = message.metadata.get("usage")
            if not isinstance(usage, Mapping):
                continue
            count = sum(int(usage.get(k) or 0) for k in ("input_tokens", "output_tokens")
                        if isinstance(usage.get(k) or 0, int))
            self.spent[0] += count
            self.spent[1] += _cost(usage)


def _cost(usage: Mapping[str, Any]) -> float:
    """The dollars the ``usage`` feature put on a message (none without a price for its model: 0)."""
    cost = usage.get("cost")
    return float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost >= 0 else 0.0
