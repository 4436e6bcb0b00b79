"""One turn's tool calls: what running them needs, and what ``tool_pre`` decided.

The request pipeline (:mod:`agent_core.pipeline`) runs a turn's calls; this
module holds the plain pieces it uses for that:

* :class:`ToolKit`, everything settled once per request (routing table,
  interop registry, lifecycle actions);
* :class:`PreOutcome` and :func:`read_hook_extras`, the ``tool_pre``
  vocabulary of seed 000/001's HookResult beyond continue/deny/modify/ask:
  ``context_injection`` (with ``context_injection_role`` and ``ephemeral``),
  ``user_message`` (with ``user_message_level``) and ``suppress_output``;
* :func:`place`, which puts a result right after its call even when later
  messages exist (pending calls answered by a later request);
* :func:`suppressed`, which runs a tool with its output hidden from the user.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Generator, Mapping
from typing import Any

import msgspec

from .errors import PluginError
from .events import Outcome, ToolProgressEvent, ToolResultEvent
from .hooks import LivePlugin
from .tool_interop import ToolInteropRegistry
from .tools import LiveTool
from .types import Message, Session

__all__ = [
    "DEFAULT_APPROVAL_TIMEOUT", "PreOutcome", "ToolKit", "place", "read_hook_extras", "suppressed", "tool_failure",
]

#: seconds an ``ask_user`` approval may take before its ``approval_default`` applies (seed 001's default)
DEFAULT_APPROVAL_TIMEOUT = 300.0

_INJECTION_ROLES = ("system", "user", "assistant")
_NOTICE_LEVELS = ("info", "warning", "error")


@dataclasses.dataclass
class ToolKit:
    """What running tool calls needs, settled once per request."""

    registry: ToolInteropRegistry
    tools: list[LiveTool]
    names: set[tuple[str, str]]
    emitted: list[str]
    accepted: tuple[str, ...]
    lifecycle: Mapping[str, Any]
    config: Any


@dataclasses.dataclass
class PreOutcome:
    """What the ``tool_pre`` actions decided about one call."""

    payload: Any
    denial: str | None = None
    suppress: bool = False
    injections: list[tuple[str, Message, bool]] = dataclasses.field(default_factory=list)
    notices: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)


def read_hook_extras(plugin: LivePlugin, res: Mapping[str, Any], verdict: Any, out: PreOutcome) -> None:
    """Collect a tool_pre result's context injection, user message and output suppression."""
    text = res.get("context_injection")
    if verdict == "inject_context" and not (isinstance(text, str) and text):
        raise PluginError(plugin.name, "execute_action", ValueError("no context_injection"),
                          detail="tool_pre action 'inject_context' needs a non-empty 'context_injection' text")
    if text is not None:
        role = res.get("context_injection_role") or "system"
        if not isinstance(text, str) or role not in _INJECTION_ROLES:
            raise PluginError(plugin.name, "execute_action", ValueError(role),
                              detail="context_injection must be text and context_injection_role one of "
                                     f"{', '.join(_INJECTION_ROLES)}; got {type(text).__name__} / {role!r}")
        if text:
            msg = Message(role, text, {"injected_by": plugin.name})
            out.injections.append((plugin.name, msg, bool(res.get("ephemeral"))))
    note = res.get("user_message")
    if note is not None:
        level = res.get("user_message_level") or "info"
        if not isinstance(note, str) or level not in _NOTICE_LEVELS:
            raise PluginError(plugin.name, "execute_action", ValueError(level),
                              detail="user_message must be text and user_message_level one of "
                                     f"{', '.join(_NOTICE_LEVELS)}; got {type(note).__name__} / {level!r}")
        out.notices.append((plugin.name, note, level))
    if res.get("suppress_output"):
        out.suppress = True


def place(session: Session, message: Message, pos: int) -> tuple[Session, int]:
    """Put ``message`` at index ``pos`` (appending when ``pos`` is the end); return the next index."""
    msgs = session.messages
    if pos >= len(msgs):
        return session.with_message(message), len(msgs) + 1
    rebuilt = msgs[:pos].extended([message, *msgs[pos:]])
    return msgspec.structs.replace(session, messages=rebuilt), pos + 1


def suppressed(run: Generator[Any, Any, Message]) -> Generator[Any, Any, Message]:
    """Drive a tool run, hiding its output from the user: no progress parts, no display."""
    send: Any = None
    error: BaseException | None = None
    while True:
        try:
            item = run.throw(error) if error is not None else run.send(send)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        send, error = None, None
        if isinstance(item, ToolProgressEvent):
            continue
        if isinstance(item, ToolResultEvent):
            item = msgspec.structs.replace(item, display=None, suppressed=True)
        try:
            send = yield item
        except Exception as exc:  # noqa: BLE001 - handed back to the tool run, as the driver would
            error = exc


def tool_failure(failures: list[str]) -> Outcome:
    return Outcome("stopped", "tool_failure", "stop_on_tool_error: " + "; ".join(failures))
