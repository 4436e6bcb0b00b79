"""Asking the application whether a tool call may run.

A feature's ``tool_pre`` lifecycle action can answer ``{"action": "ask_user",
"approval_prompt": ..., "approval_default": "deny"}``. The engine then calls
the ``approval`` callback given to :class:`~agent_core.AgentCore` with an
:class:`ApprovalRequest`; the callback (sync or async) answers ``True`` /
``False``, ``"allow"`` / ``"deny"``, or a mapping with a ``decision`` key.
Without a callback, the feature's ``approval_default`` decides (deny when it
gives none): a headless server never runs a tool nobody approved.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

__all__ = ["ApprovalRequest", "decision_allows"]


class ApprovalRequest(msgspec.Struct, frozen=True):
    request_id: str
    call_id: str
    tool_name: str | None
    plugin: str
    payload: Any
    prompt: str
    options: list[str]
    default: str = "deny"


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
