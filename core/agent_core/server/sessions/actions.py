"""``POST /v1/sessions/{id}/actions/{action}``: a plugin's action on a stored session, bounded and cancellable.

An action is plugin code that may run for long and may spend money (``compact_native_history``
in ``summarize`` mode asks the model). So, unlike a store call, it does not run on the default
thread pool, which every store call of every route shares, and it is held to limits of its own:

- **Threads of its own**: at most ``max_actions`` run at once in a process, on a pool of that
  size; beyond it the action is 503 with ``retry-after``, before anything runs.
- **Per tenant**: at most ``tenant_max_actions`` of one tenant at once (429 beyond).
- **One per session**: an action takes the session's lease (as a turn does) for its whole run,
  so a second action or a turn on that session is told the session is busy (409) *before* it
  runs, rather than paying for a model call and losing the save race afterwards.
- **Cancelled with its client**: the action runs in flight under a request id of its own; a
  client that hangs up cancels it, its model calls included, and a call it would start after
  that is refused.
- **Paid calls only when allowed**: an action's model calls are refused (403) unless the
  operator started the server with ``--paid-actions``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ...errors import ConflictError
from ..http.bodies import aparse_body
from .bodies import ActionBody
from ..http.errors import ApiError
from ..access.ids import if_match, path_id
from ..http.wire import etag, plain, watch_hangup
from ..state import state_of

__all__ = ["ActionDesk", "session_action"]


class ActionDesk:
    """The process's action pool and who holds its places (all on the event loop: no lock needed)."""

    def __init__(self, total: int, each: int) -> None:
        self.total, self.each = total, each
        self.running = 0
        self.by_tenant: dict[str, int] = {}
        self._pool: ThreadPoolExecutor | None = None

    @property
    def pool(self) -> ThreadPoolExecutor:
        if self._pool is None:  # made on first use: most servers never run an action
            self._pool = ThreadPoolExecutor(max_workers=self.total, thread_name_prefix="agent-core-action")
        return self._pool

    @contextlib.contextmanager
    def place(self, tenant: str) -> Iterator[None]:
        """A place for one action of ``tenant``, or a refusal that says which limit was reached."""
        if self.running >= self.total:
            raise ApiError(503, "server_busy", f"this server process runs {self.total} actions already "
                           "(max_actions); retry shortly", headers={"retry-after": "1"})
        if self.by_tenant.get(tenant, 0) >= self.each:
            raise ApiError(429, "tenant_busy", f"this tenant runs {self.each} actions already "
                           "(tenant_max_actions); retry once one has ended", headers={"retry-after": "1"})
        self.running += 1
        self.by_tenant[tenant] = self.by_tenant.get(tenant, 0) + 1
        try:
            yield
        finally:
            self.running -= 1
            left = self.by_tenant[tenant] - 1
            if left:
                self.by_tenant[tenant] = left
            else:
                del self.by_tenant[tenant]

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)


async def session_action(request: Request) -> Response:
    """Run an action on a stored session and save what it changed, at the revision it was loaded at."""
    state = state_of(request)
    sid, action_id = path_id(request, "session_id"), request.path_params["action_id"]
    if len(action_id) > 200:
        raise ApiError(400, "invalid_request_error", "the action id is longer than 200 characters", param="action_id")
    body = await aparse_body(await request.body(), ActionBody, max_depth=state.settings.max_json_depth,
                             empty_ok=True)
    config = state.config_for(request, body.config)
    tenant = state.tenant(request)
    store = state.store_for(request)
    with state.action_desk.place(tenant.name):
        stored = await store.aget(sid)
        want = if_match(request)
        if want is not None and want != stored.revision:
            raise ConflictError(sid, expected=want, current=stored.revision)
        rid = tenant.scope(f"action-{uuid.uuid4().hex}")
        lease = await _lease(state, tenant.scope(sid), sid, rid)
        stop = watch_hangup(request, lambda: state.core.cancel_request(rid))
        try:
            run = functools.partial(state.core.execute_action, stored.session, action_id, body.params or {}, config,
                                    request_id=rid, side_requests=state.settings.paid_actions)
            result = await asyncio.get_running_loop().run_in_executor(state.action_desk.pool, run)
            revision = await store.aput(result.session, expected_revision=stored.revision)
        finally:
            stop()
            if lease is not None:
                await lease.arelease()
    payload = json.loads(json.dumps(result.payload, default=plain))
    return JSONResponse({"id": sid, "revision": revision, "payload": payload}, headers=etag(revision))


async def _lease(state: Any, scoped: str, sid: str, rid: str) -> Any:
    """The session's lease for the action's run, or a 409 when a turn or another action holds it."""
    raw = state.store
    if getattr(raw, "leases", None) is None:  # a store without leases: actions race as turns do there
        return None
    lease = await raw.leases.atry_lease(scoped, request_id=rid)
    if lease is None:
        raise ApiError(409, "session_busy", f"session {sid!r} is running a turn or another action; retry once it "
                       "has ended", headers={"retry-after": "1"})
    return lease
