"""Asking the application whether a tool call may run.

A feature's ``tool_pre`` lifecycle action can answer ``{"action": "ask_user",
"approval_prompt": ..., "approval_default": "deny"}``. The engine then calls
the ``approval`` callback given to :class:`~agent_core.AgentCore` with an
:class:`ApprovalRequest`; the callback (sync or async) answers ``True`` /
``False``, ``"allow"`` / ``"deny"``, or a mapping with a ``decision`` key.
Without a callback, the feature's ``approval_default`` decides (deny when it
gives none): a headless server never runs a tool nobody approved.

The callback gets ``approval_timeout`` seconds (default 300, as in seed 001);
when it has not answered by then, ``approval_default`` decides too. A sync
callback therefore runs in a helper thread the request waits on; a callback
that never returns leaves only that (daemon) thread behind.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

__all__ = ["TIMED_OUT", "ApprovalRequest", "acall_with_timeout", "call_with_timeout", "decision_allows"]

#: what the ``*_with_timeout`` helpers return when the callback did not answer in time
TIMED_OUT: Any = object()


class ApprovalRequest(msgspec.Struct, frozen=True):
    request_id: str
    call_id: str
    tool_name: str | None
    plugin: str
    payload: Any
    prompt: str
    options: list[str]
    default: str = "deny"
    timeout: float = 300.0


def call_with_timeout(callback: Callable[[ApprovalRequest], Any], request: ApprovalRequest, timeout: float) -> Any:
    """Call a sync callback, waiting at most ``timeout`` seconds; :data:`TIMED_OUT` after that."""
    box: dict[str, Any] = {}
    done = threading.Event()

    def ask() -> None:
        try:
            box["answer"] = callback(request)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the request's thread
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=ask, name=f"approval-{request.call_id}", daemon=True).start()
    if not done.wait(timeout):
        return TIMED_OUT
    if "error" in box:
        raise box["error"]
    return box["answer"]


async def acall_with_timeout(
    callback: Callable[[ApprovalRequest], Any], request: ApprovalRequest, timeout: float
) -> Any:
    """Await an async callback for at most ``timeout`` seconds; :data:`TIMED_OUT` after that."""
    try:
        return await asyncio.wait_for(callback(request), timeout)
    except asyncio.TimeoutError:
        return TIMED_OUT


def decision_allows(answer: Any, default: str) -> bool:
    """Read a callback's answer; anything unrecognised falls back to ``default``."""
    if isinstance(answer, Mapping):
        answer = answer.get("decision", answer.get("action"))
    if isinstance(answer, bool):
        return answer
    if isinstance(answer, str):
        if answer.lower() in ("allow", "approve", "approved", "yes", "continue"):
            return True
        if answer.lower() in ("deny", "denied", "no", "reject"):
            return False
    return default == "allow"
