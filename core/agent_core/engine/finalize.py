"""After a provider call (steps 4d-4f of :mod:`agent_core.engine.run`): finalize, convert back, commit.

Extensions' then features' ``finalize``; ``from_native_messages`` (provider,
extensions, features); the ``response_finalize`` lifecycle actions, which may
replace the finals, merge session metadata or rewrite the native history;
then the new messages go into the session with the native history that
covers them (:func:`~agent_core.values.native_history.persistable`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..plugins.chains import Built, core_dicts, finalize_chain, from_native
from ..plugins.answers import frozen_list
from ..plugins.hooks import LivePlugin
from ..plugins.lifecycle import Lifecycle, run_action
from ..values.messages import Message, Session
from ..values.native_history import persistable, store_native
from ..values.views import session_view
from .secret_guard import SecretGuard

__all__ = ["Turn", "finalize_turn"]


class Turn:
    """One provider call's facts that finalize needs (where the turn's native messages start, ...)."""

    __slots__ = ("stored", "request_time", "turn_start", "iteration", "ctx")

    def __init__(self, stored: Any, request_time: Any, iteration: int, ctx: Any) -> None:
        self.stored = stored  # the native history before initialize_request
        self.request_time = request_time  # what the provider was called with
        self.turn_start = len(request_time)
        self.iteration = iteration
        self.ctx = ctx


def finalize_turn(
    provider: LivePlugin, chain: Sequence[LivePlugin], lifecycle: Lifecycle, turn: Turn,
    finals: Any, native: Any, state: Any, session: Session, *, request_id: str, stream: bool, core: Any,
    guard: SecretGuard | None = None,
) -> tuple[list[Message], Session, Any, Any]:
    """Steps 4d (the chain's ``finalize``) to 4f; returns the new messages, session, native history, state.

    Raises:
        SecretInSessionError: ``guard`` found a declared secret's value in what the call adds.
    """
    ctx = turn.ctx
    finals, native, state = finalize_chain(chain, finals, native, state, ctx)
    built: Built = {}
    core_msgs = from_native(provider, chain, finals, state, ctx, built)

    session_meta: dict[str, Any] = {}
    for plugin, action in lifecycle.get("response_finalize", ()):
        lctx = {
            "lifecycle": "response_finalize", "trigger_source": "core", "config": ctx["config"],
            "session": session_view(session), "core": core, "final_messages": core_msgs,
            "native_final_messages": finals, "native_messages": native, "stream": stream,
            "turn_native_start_index": turn.turn_start, "request_id": request_id,
        }
        result = run_action(plugin, action, session, native, lctx, state)
        if "final_messages" in result:
            core_msgs = core_dicts(plugin, "execute_action", result["final_messages"], built)
        if isinstance(result.get("session_metadata"), Mapping):
            session_meta.update(result["session_metadata"])
        if "native_messages" in result:
            native = frozen_list(plugin, "execute_action", result["native_messages"], "native_messages", native)

    messages = [built[id(m)][1] for m in core_msgs]  # each was built when it was checked
    if guard is not None and guard.needles:
        guard.check("a final message (its content or metadata)", messages)
        guard.check("the session metadata a response_finalize action set", session_meta)
        guard.check("the native history the provider call adds", list.__getitem__(native, slice(turn.turn_start, None)))
    session = session.with_messages(messages)
    if session_meta:
        session = session.with_metadata(session_meta)
    native = persistable(turn.stored, native, turn.turn_start, turn.request_time)
    session = store_native(session, provider.name, native)
    return messages, session, native, state
