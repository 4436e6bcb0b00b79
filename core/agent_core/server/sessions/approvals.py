"""Tool approvals over HTTP: a sessions-API turn asks its client, who answers with a POST.

Theory of operation. A feature's ``tool_pre`` action may answer ``ask_user``; the engine
then awaits the ``approval`` callback of the core. The server installs an
:class:`ApprovalDesk` there (when the application gave none). A turn of the sessions
API registers its stream with the desk under the engine's request id while it runs;
when the engine asks about one of that request's calls, the desk puts an ``approval``
frame in the turn's stream and waits for
``POST /v1/requests/{request_id}/approvals/{call_id}``. The engine's own
``approval_timeout`` bounds the wait, after which ``approval_default`` decides.

A request nobody listens to (a facade completion, a turn whose client left) gets no
answer from the desk, so ``approval_default`` decides at once, as it did before the desk
existed: a server never runs a tool nobody approved. Cancelling a request withdraws its
open questions (denied), so a cancel is not held up by a question nobody will answer.

Answers are looked up by the tenant-scoped request id, so one tenant cannot answer for
another; they reach only the server process that runs the turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Literal

import msgspec

from ... import ApprovalRequest, thaw

__all__ = ["ApprovalBody", "ApprovalDesk", "ApprovalNote"]


class ApprovalBody(msgspec.Struct, forbid_unknown_fields=True):
    """``POST /v1/requests/{id}/approvals/{call_id}``: the person's answer."""

    decision: Literal["allow", "deny"]


class ApprovalNote:
    """An ``approval`` frame for a turn's stream: a call waits for its client's answer."""

    type = "approval"  # read by the stream's readers beside the engine's events; never an output

    def __init__(self, frame: dict[str, Any]) -> None:
        self.frame = frame


class ApprovalDesk:
    """The server's approval callback: asks the turn's client, waits for its answer."""

    def __init__(self) -> None:
        self._listeners: dict[str, tuple[str, Callable[[ApprovalNote], None]]] = {}
        self._waiting: dict[tuple[str, str], asyncio.Future[str]] = {}

    def listen(self, rid: str, client_rid: str, notify: Callable[[ApprovalNote], None]) -> None:
        """Send the questions about request ``rid`` (the engine's id) to ``notify``; ``client_rid`` is shown."""
        self._listeners[rid] = (client_rid, notify)

    def forget(self, rid: str) -> None:
        """The turn ended or its client left: nobody answers for ``rid`` any more."""
        self._listeners.pop(rid, None)
        self.withdraw(rid)

    def withdraw(self, rid: str) -> None:
        """Deny every open question of ``rid`` (it was cancelled)."""
        for key, future in list(self._waiting.items()):
            if key[0] == rid and not future.done():
                future.set_result("deny")

    def answer(self, rid: str, call_id: str, decision: str) -> bool:
        """Answer the open question about ``call_id`` of ``rid``; False when none is open."""
        future = self._waiting.get((rid, call_id))
        if future is None or future.done():
            return False
        future.set_result(decision)
        return True

    async def __call__(self, request: ApprovalRequest) -> Any:
        listener = self._listeners.get(request.request_id)
        if listener is None:
            return None  # nobody to ask: the action's approval_default decides
        client_rid, notify = listener
        key = (request.request_id, request.call_id)
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._waiting[key] = future
        try:
            notify(ApprovalNote({
                "type": "approval", "request_id": client_rid, "call_id": request.call_id,
                "tool_name": request.tool_name, "plugin": request.plugin, "prompt": request.prompt,
                "payload": thaw(request.payload), "options": list(request.options), "default": request.default,
                "timeout_s": request.timeout,
            }))
            return await future
        finally:
            self._waiting.pop(key, None)
