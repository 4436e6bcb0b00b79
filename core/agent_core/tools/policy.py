"""Tool policy: what running a turn's calls needs, and what ``tool_pre`` / ``tool_post`` decide.

The tool loop (:mod:`agent_core.tools.loop`) runs a turn's calls; this
module holds the policy it applies to each:

* the :class:`~agent_core.tools.kit.ToolKit` it is handed holds what is
  settled once per request (routing table, interop registry, lifecycle
  actions, the request's id, token and timeout);
* :func:`tool_pre` (with :func:`approve`) and :func:`tool_post`, the
  lifecycle actions around one call;
* :class:`PreOutcome` and :func:`read_hook_extras`, the ``tool_pre``
  vocabulary of seed 000/001's HookResult beyond continue/deny/modify/ask:
  ``context_injection`` (with ``context_injection_role`` and ``ephemeral``),
  ``user_message`` (with ``user_message_level``) and ``suppress_output``;
* :func:`message_metadata`, our one extension of that vocabulary: a
  ``tool_pre`` or ``tool_post`` action may return ``tool_message_metadata``,
  merged into the call's ``tool`` message (a policy's decision belongs with
  the result it decided, not in a side table);
* :func:`place`, which puts a result right after its call even when later
  messages exist (pending calls answered by a later request);
* :func:`held`, which runs a tool and keeps its ``tool_result`` event back
  until ``tool_post`` has had its say, optionally with its output hidden.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Generator, Mapping
from typing import Any

import msgspec

from ..errors import PluginError
from ..plugins.answers import frozen_map
from ..plugins.hooks import LivePlugin, call_hook
from ..plugins.lifecycle import action_defaults, run_action
from ..runtime.effects import Call
from ..values.events import Outcome, ToolProgressEvent, ToolResultEvent
from ..values.frozen import freeze, thaw
from ..values.messages import Message, Session
from ..values.views import session_view
from .approval import (
    TIMED_OUT,
    ApprovalRequest,
    acall_with_timeout,
    call_with_timeout,
    decision_allows,
)
from .kit import ToolKit
from .toolkit import Routed, is_async_callable

__all__ = [
    "DEFAULT_APPROVAL_TIMEOUT", "TOOL_PRE_VERDICTS", "PreOutcome", "approve", "held", "message_metadata",
    "place", "read_hook_extras", "tool_failure", "tool_post", "tool_pre", "read_verdict",
]

#: seconds an ``ask_user`` approval may take before its ``approval_default`` applies (seed 001's default)
DEFAULT_APPROVAL_TIMEOUT = 300.0

#: what a ``tool_pre`` action may answer in ``action`` (or ``decision``); left out, it means continue
TOOL_PRE_VERDICTS = ("continue", "allow", "inject_context", "modify", "deny", "ask_user", "ask")

_INJECTION_ROLES = ("system", "user", "assistant")
_NOTICE_LEVELS = ("info", "warning", "error")
#: tool message metadata the engine writes itself; an action cannot replace it
_ENGINE_KEYS = ("tool_call_id", "tool_name")


@dataclasses.dataclass
class PreOutcome:
    """What the ``tool_pre`` actions decided about one call."""

    payload: Any
    denial: str | None = None
    suppress: bool = False
    injections: list[tuple[str, Message, bool]] = dataclasses.field(default_factory=list)
    notices: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)
    metadata: dict[str, Any] = dataclasses.field(default_factory=dict)  # for the tool message


def message_metadata(plugin: LivePlugin, res: Mapping[str, Any], lifecycle: str) -> Mapping[str, Any] | None:
    """An action's ``tool_message_metadata``, checked: a mapping that leaves the engine's keys alone."""
    extra = res.get("tool_message_metadata")
    if extra is None:
        return None
    if not isinstance(extra, Mapping):
        raise PluginError(plugin.name, "execute_action", TypeError(type(extra).__name__),
                          detail=f"{lifecycle} action returned tool_message_metadata that is not a mapping: "
                                 f"{type(extra).__name__}")
    clash = sorted(k for k in _ENGINE_KEYS if k in extra)
    if clash:
        raise PluginError(plugin.name, "execute_action", ValueError(clash[0]),
                          detail=f"{lifecycle} action's tool_message_metadata may not set {', '.join(clash)} "
                                 "(the engine's own keys)")
    return extra


def checked_text(plugin: LivePlugin, res: Mapping[str, Any], key: str, kind_key: str,
                 kinds: tuple[str, ...], where: str = "") -> tuple[str | None, str]:
    """An action result's text under ``key`` and its kind under ``kind_key`` (the first of ``kinds`` by default).

    The text is None when the result has none; a text that is not a string, or a kind not in
    ``kinds``, is the plugin's error, named with both keys.
    """
    text = res.get(key)
    kind = res.get(kind_key) or kinds[0]
    if text is not None and (not isinstance(text, str) or kind not in kinds):
        raise PluginError(plugin.name, "execute_action", ValueError(kind),
                          detail=f"{where}{key} must be text and {kind_key} one of {', '.join(kinds)}; "
                                 f"got {type(text).__name__} / {kind!r}")
    return text, kind


def read_hook_extras(plugin: LivePlugin, res: Mapping[str, Any], verdict: Any, out: PreOutcome) -> None:
    """Collect a tool_pre result's context injection, user message and output suppression."""
    text, role = checked_text(plugin, res, "context_injection", "context_injection_role", _INJECTION_ROLES)
    if verdict == "inject_context" and not text:
        raise PluginError(plugin.name, "execute_action", ValueError("no context_injection"),
                          detail="tool_pre action 'inject_context' needs a non-empty 'context_injection' text")
    if text:
        msg = Message(role, text, {"injected_by": plugin.name})
        out.injections.append((plugin.name, msg, bool(res.get("ephemeral"))))
    note, level = checked_text(plugin, res, "user_message", "user_message_level", _NOTICE_LEVELS)
    if note is not None:
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


def held(
    run: Generator[Any, Any, Message], hide: bool = False
) -> Generator[Any, Any, tuple[Message, ToolResultEvent | None]]:
    """Drive a tool run, keeping its ``tool_result`` event back (returned with the message).

    The caller announces the result once ``tool_post`` has run, so the event
    carries the message as it is stored. With ``hide`` the output is kept
    from the user: no progress parts, no display.
    """
    send: Any = None
    error: BaseException | None = None
    shown: ToolResultEvent | None = None
    while True:
        try:
            item = run.throw(error) if error is not None else run.send(send)
        except StopIteration as stop:
            return stop.value, shown
        send, error = None, None
        if isinstance(item, ToolResultEvent):
            shown = msgspec.structs.replace(item, display=None, suppressed=True) if hide else item
            continue
        if hide and isinstance(item, ToolProgressEvent):
            continue
        try:
            send = yield item
        except GeneratorExit:  # closed early (the stream was dropped): close the tool run too
            run.close()
            raise
        except Exception as exc:  # noqa: BLE001 - handed back to the tool run, as the driver would
            error = exc


def tool_failure(failures: list[str]) -> Outcome:
    return Outcome("stopped", "tool_failure", "stop_on_tool_error: " + "; ".join(failures))


def tool_pre(kit: ToolKit, r: Routed, session: Session, native: Any, state: Any) -> Generator[Any, Any, PreOutcome]:
    """Ask every ``tool_pre`` action about one call (the HookResult vocabulary of seed 000).

    ``action``: ``continue`` | ``modify`` (``data.payload``) | ``deny`` |
    ``inject_context`` | ``ask_user``; beside it ``context_injection``
    (+ ``context_injection_role``, ``ephemeral``), ``user_message`` (+
    ``user_message_level``), ``suppress_output`` and the approval keys.
    """
    out = PreOutcome(r.call.payload)
    for plugin, action in kit.lifecycle.get("tool_pre", ()):
        call_info = {"id": r.call.call_id, "name": r.call.tool_name, "payload": out.payload,
                     "payload_kind": r.call.payload_kind, "payload_format": r.call.payload_format,
                     "plugin": r.tool.plugin.name if r.tool else None}
        ctx = {"lifecycle": "tool_pre", "trigger_source": "core", "config": kit.config, "core": kit.core,
               "session": session_view(session), "tool_call": call_info, "request_id": kit.request_id,
               "native_messages": native, "stream": kit.stream}
        raw = call_hook(plugin, "execute_action", action["id"], session, native, freeze(action_defaults(action)),
                        freeze(ctx), state)
        try:  # a policy that forgot to answer, or answered out of its vocabulary, must not let the call through
            verdict = read_verdict(action["id"], raw)
        except ValueError as exc:
            raise PluginError(plugin.name, "execute_action", exc, detail=str(exc)) from None
        res = frozen_map(plugin, "execute_action", raw, "tool_pre action result")
        reason = res.get("reason") or ""
        read_hook_extras(plugin, res, verdict, out)
        extra = message_metadata(plugin, res, "tool_pre")
        if extra:
            out.metadata.update(extra)
        if verdict == "modify":
            data = res.get("data")
            out.payload = data.get("payload", out.payload) if isinstance(data, Mapping) else res.get(
                "payload", out.payload)
        elif verdict == "deny":
            out.denial = f"tool call denied by {plugin.name}" + (f": {reason}" if reason else "")
            return out
        elif verdict in ("ask_user", "ask"):
            allowed, why = yield from approve(kit, plugin, r, out.payload, res)
            if not allowed:
                out.denial = f"tool call not approved ({plugin.name}{why})" + (f": {reason}" if reason else "")
                return out
    return out


def read_verdict(action_id: Any, result: Any) -> str:
    """The verdict of a ``tool_pre`` action's answer, read the same way by the engine and ``check_plugin``.

    ``action`` (or our alias ``decision``) left out means continue, as in seed 001's
    HookResult. Anything the call could slip through by mistake refuses it instead (the
    policy fails closed): an action outside :data:`TOOL_PRE_VERDICTS` (``None`` included),
    or a ``reason`` with no action, which only a refusal or a change would give.

    Raises:
        ValueError: the answer gives no usable verdict; the message says what to return.
    """
    if not isinstance(result, Mapping):
        said = "None" if result is None else f"a {type(result).__name__}"
        raise ValueError(f"the tool_pre action {action_id!r} returned {said}, so the request stops rather than run "
                         "the tool (a policy fails closed). Return a mapping such as {'action': 'continue'} to let "
                         "it run, or 'deny' (with a 'reason'), 'modify', 'ask_user'")
    key = "action" if "action" in result else "decision" if "decision" in result else None
    if key is None:
        if result.get("reason"):
            raise ValueError(f"the tool_pre action {action_id!r} gave a reason but no action; the request stops "
                             "rather than run the tool. Return {'action': 'deny', 'reason': ...} to refuse the "
                             "call, or {'action': 'continue'} to let it run")
        return "continue"
    verdict = result[key]
    if isinstance(verdict, str) and verdict in TOOL_PRE_VERDICTS:
        return verdict
    raise ValueError(f"the tool_pre action {action_id!r} returned the unknown {key} {verdict!r}; the request stops "
                     "rather than run the tool. Use one of "
                     + ", ".join(repr(v) for v in TOOL_PRE_VERDICTS if v not in ("allow", "ask")))


def approve(
    kit: ToolKit, plugin: LivePlugin, r: Routed, payload: Any, res: Mapping[str, Any]
) -> Generator[Any, Any, tuple[bool, str]]:
    """An ``ask_user`` verdict: ask the application's approval callback, or apply ``approval_default``."""
    default = res.get("approval_default") or res.get("default") or "deny"
    if default not in ("allow", "deny"):
        raise PluginError(plugin.name, "execute_action", ValueError(default),
                          detail=f"approval_default must be 'allow' or 'deny', got {default!r}")
    timeout = res.get("approval_timeout", DEFAULT_APPROVAL_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise PluginError(plugin.name, "execute_action", ValueError(timeout),
                          detail=f"approval_timeout must be a positive number of seconds, got {timeout!r}")
    callback = kit.approval
    if callback is None:
        return default == "allow", ""
    request = ApprovalRequest(
        request_id=kit.request_id, call_id=r.call.call_id, tool_name=r.call.tool_name,
        plugin=plugin.name, payload=thaw(payload),
        prompt=str(res.get("approval_prompt") or f"Allow {r.call.tool_name}?"),
        options=list(res.get("approval_options") or ["allow", "deny"]), default=default, timeout=float(timeout),
    )
    is_async = is_async_callable(callback)
    try:
        answer = yield Call(
            None if is_async else (lambda: call_with_timeout(callback, request, float(timeout))),
            (lambda: acall_with_timeout(callback, request, float(timeout))) if is_async else None,
            label="approval callback",
        )
    except Exception as exc:  # noqa: BLE001 - a broken callback must not run the tool
        raise PluginError("approval", "approval_callback", exc) from exc
    if answer is TIMED_OUT:
        return default == "allow", f", no answer within {timeout:g} s"
    return decision_allows(answer, default), ""


def tool_post(
    kit: ToolKit, r: Routed, msg: Message, session: Session, pos: int, native: Any, state: Any
) -> tuple[Session, int, Message]:
    """Place the call's ``tool`` message at ``pos``, then run every ``tool_post`` action.

    ``session_metadata`` they return is merged into the session and
    ``tool_message_metadata`` into the placed message (each action sees what
    the previous ones left). Returns the session, the next index and the
    message as stored.
    """
    placed, nxt = place(session, msg, pos)
    for plugin, action in kit.lifecycle.get("tool_post", ()):
        ctx = {"lifecycle": "tool_post", "trigger_source": "core", "config": kit.config, "core": kit.core,
               "session": session_view(placed), "request_id": kit.request_id,
               "tool_call": {"id": r.call.call_id, "name": r.call.tool_name, "payload": r.call.payload},
               "tool_result": msg.tool_result, "tool_message": msg.as_mapping()}
        res = run_action(plugin, action, placed, native, ctx, state)
        if isinstance(res.get("session_metadata"), Mapping):
            session = session.with_metadata(res["session_metadata"])
            placed = placed.with_metadata(res["session_metadata"])
        extra = message_metadata(plugin, res, "tool_post")
        if extra:
            msg = msg.with_metadata(extra)
            placed, nxt = place(session, msg, pos)
    return placed, nxt, msg
