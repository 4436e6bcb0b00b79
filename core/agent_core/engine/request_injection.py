"""``llm_request``: context a feature adds to one provider call, and never to the session.

Some context belongs on the wire but not in the conversation: a configured
system prompt, today's date, a reminder. Stored, it would be sent again on
every later call (one more copy each time) and would outlive a config change.
So before each provider call of a request (the first, and every call after
tool results) the run asks the actions bound to the ``llm_request`` trigger;
each may answer with seed 000's injection keys, ``context_injection`` (text)
and ``context_injection_role`` (``system`` by default, ``user``,
``assistant``). The injected core messages are converted by the same
``to_native_messages`` chain as the history, for this call only, so every
provider receives them in its own shape (OpenAI a ``system`` message,
Anthropic the top-level ``system`` field, which its ``initialize_request``
builds from system natives) and nothing about a provider's request layout
leaks into features. System injections go in front of the history, the
others after it. The native history the run keeps is the one from before the
injection (:class:`~agent_core.engine.finalize.Turn` ``stored``), so neither the
session nor the stored native history ever holds a copy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..plugins.chains import to_native
from ..plugins.hooks import LivePlugin
from ..plugins.lifecycle import Lifecycle, run_action
from ..tools.policy import checked_text
from ..values.frozen import FrozenList
from ..values.messages import Message, Session
from ..values.views import session_view

__all__ = ["LLM_REQUEST", "inject", "request_injections"]

#: the trigger name of actions asked before each provider call
LLM_REQUEST = "llm_request"

_ROLES = ("system", "user", "assistant")


def request_injections(
    lifecycle: Lifecycle, session: Session, native: Any, state: Any, ctx: Any, *, core: Any, request_id: str,
    stream: bool,
) -> tuple[list[Message], list[Message]]:
    """Ask every ``llm_request`` action; returns (messages for the front, messages for the end).

    Raises:
        PluginError: an injection that is not text, or a role outside system/user/assistant.
    """
    front: list[Message] = []
    back: list[Message] = []
    for plugin, action in lifecycle.get(LLM_REQUEST, ()):
        lctx = {
            "lifecycle": LLM_REQUEST, "trigger_source": "core", "config": ctx["config"], "core": core,
            "session": session_view(session), "native_messages": native, "request_id": request_id,
            "iteration": ctx["iteration"], "stream": stream,
        }
        res = run_action(plugin, action, session, native, lctx, state)
        text, role = checked_text(plugin, res, "context_injection", "context_injection_role", _ROLES, "llm_request: ")
        if text:
            (front if role == "system" else back).append(Message(role, text, {"injected_by": plugin.name}))
    return front, back


def inject(
    provider: LivePlugin, chain: Sequence[LivePlugin], native: Any, front: list[Message], back: list[Message],
    state: Any, ctx: Any,
) -> Any:
    """``native`` for one call: ``front`` converted before it, ``back`` after it (the input is not changed)."""
    if front:
        native = FrozenList.joined(to_native(provider, chain, front, state, ctx), native)
    if back:
        native = FrozenList.joined(native, to_native(provider, chain, back, state, ctx))
    return native
