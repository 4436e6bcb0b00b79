"""The tool loop: run one turn's tool calls, and find the calls an earlier request left unanswered.

Per call, in order: read and route it, announce it (``tool_call`` events
for the whole turn first), ask ``tool_pre`` (:mod:`agent_core.tools.policy`),
run it (:func:`~agent_core.tools.run_tool_call`), place its ``tool``
message right after the call, then ``tool_post``, and only then announce
the result (``tool_result`` carries the message as stored, with what
``tool_pre``/``tool_post`` put in its metadata). Nothing here walks the
conversation: contexts get an O(1) session view and results are placed by
index, so a turn costs O(calls), whatever the length of the history.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Generator, Mapping
from typing import Any

import msgspec

from ..plugins.tool_interop import ToolInteropRegistry
from ..runtime.flight import RunCancelled
from ..values.events import UserMessageEvent
from ..values.frozen import FrozenDict
from ..values.messages import Message, Session
from ..values.views import session_view
from .execute import preview_event, run_tool_call
from .kit import ToolKit
from .policy import PreOutcome, held, place, tool_post, tool_pre
from .toolkit import Routed, inspect_call, route

__all__ = ["pending_calls", "run_tools"]


def run_tools(
    kit: ToolKit, calls: list[tuple[int, Any]], session: Session, native: Any, state: Any, iteration: int,
    added: list[Message], ephemeral: list[Message], insert_at: int | None = None, not_executed: str | None = None,
) -> Generator[Any, Any, tuple[Session, int, list[str]]]:
    """Route, preview, vet (``tool_pre``), run and record one turn's tool calls.

    Tool messages are appended, or placed from ``insert_at`` on (pending
    calls answered before later messages); each also goes to ``added``.
    Injected context goes after the turn's results (``ephemeral`` injections
    to ``ephemeral``, for the next provider call only). With ``not_executed``
    nothing runs: each call gets an error result saying so. Returns the
    session, how many messages were added, and a line per tool that failed.
    """
    routed = [route(inspect_call(kit.registry, c, i, kit.emitted), kit.tools, kit.names) for i, c in calls]
    if not_executed is not None:
        routed = [Routed(dataclasses.replace(r.call, error=not_executed), r.tool, r.descriptor) for r in routed]
    for r in routed:
        yield preview_event(kit.request_id, r, iteration)
    pos = len(session.messages) if insert_at is None else insert_at
    count = 0
    failures: list[str] = []
    injections: list[tuple[str, Message, bool]] = []
    flight, observer = kit.flight, kit.observer
    assert flight is not None
    for r in routed:
        if flight.cancelled:
            raise RunCancelled
        tctx = FrozenDict.from_frozen({"core": kit.core, "config": kit.config, "trigger_source": "core",
                                    "session": session_view(session), "request_id": kit.request_id})
        pre = PreOutcome(r.call.payload)
        if not_executed is None:
            pre = yield from tool_pre(kit, r, session, native, state)
        for plugin_name, text, level in pre.notices:
            yield UserMessageEvent(kit.request_id, plugin_name, text, level, r.call.call_id)
        if pre.denial is not None:
            r = Routed(dataclasses.replace(r.call, error=pre.denial), r.tool, r.descriptor)
        if observer is not None:
            observer.tool_started(iteration, r.call.call_id, r.call.tool_name, pre.payload)
        run = run_tool_call(r, pre.payload, tctx, kit.request_id, kit.accepted, token=flight.token, timeout=kit.timeout)
        msg, shown = yield from held(run, pre.suppress)
        if flight.cancelled:
            raise RunCancelled
        if pre.metadata:
            msg = msg.with_metadata(pre.metadata)
        session, pos, msg = tool_post(kit, r, msg, session, pos, native, state)
        if kit.guard is not None:
            kit.guard.check(f"the result of tool call {r.call.call_id!r}", msg, hook="execute_tool")
        if observer is not None:
            observer.tool_ended(r.call.call_id, msg)
        if shown is not None:
            yield msgspec.structs.replace(shown, message=msg)
        count += 1
        added.append(msg)
        if r.call.error is None and isinstance(msg.tool_result, Mapping) and not msg.tool_result.get("success"):
            failures.append(f"{r.call.tool_name!r} (call {r.call.call_id}): {msg.tool_result.get('error')}")
        injections.extend(pre.injections)
    session, placed = _inject(session, pos, injections, added, ephemeral)
    return session, count + placed, failures


def _inject(session: Session, pos: int, injections: list[tuple[str, Message, bool]], added: list[Message],
            ephemeral: list[Message]) -> tuple[Session, int]:
    """Injected context goes after the turn's tool results, never between a call and its result."""
    count = 0
    for _, message, is_ephemeral in injections:
        if is_ephemeral:
            ephemeral.append(message)
        else:
            session, pos = place(session, message, pos)
            count += 1
            added.append(message)
    return session, count


def pending_calls(
    session: Session, registry: ToolInteropRegistry, emitted: list[str]
) -> tuple[int, list[tuple[int, Any]]] | None:
    """Tool calls of the last assistant message that no ``tool`` message answers yet.

    Looks back only to the last assistant message, so the cost does not
    grow with the history. A call marked ``incomplete`` (its arguments
    were cut off) is never run and never answered. Returns where the
    results go (after the tool messages already following the call) and
    the unanswered calls with their index.
    """
    msgs = session.messages
    answered: set[Any] = set()
    for i in range(len(msgs) - 1, -1, -1):
        m = msgs[i]
        if m.role == "tool":
            answered.add(m.metadata.get("tool_call_id"))
            continue
        if m.role != "assistant":
            continue
        raw = m.metadata.get("tool_calls")
        if not isinstance(raw, (list, tuple)) or not raw:
            return None
        missing = [
            (j, c) for j, c in enumerate(raw)
            if not (isinstance(c, Mapping) and c.get("incomplete"))
            and registry.read_call(c, j, emitted).call_id not in answered
        ]
        if not missing:
            return None
        pos = i + 1
        while pos < len(msgs) and msgs[pos].role == "tool":
            pos += 1
        return pos, missing
    return None
