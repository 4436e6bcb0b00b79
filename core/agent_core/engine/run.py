"""One request, written once as a generator (see :mod:`agent_core.runtime.effects`).

Order of work for one request (binding; the plugin hooks' docs refer to it):

1. resolve plugins for the config (:mod:`agent_core.plugins.resolution`);
2. tools: ``init`` (+ ``prepare``), schemas, features' ``prepare_tools``,
   adapted schemas into ``config["tools"]``;
3. init chain: provider ``init(config)`` -> extensions -> features;
4. per provider call (at most ``max_iterations``):
   a. to native: provider ``to_native_messages`` -> extensions -> features,
      for the core messages the stored native history does not cover yet;
   b. ``llm_request`` lifecycle actions: context for this call only, converted
      by the same chain and never stored (:mod:`agent_core.engine.request_injection`);
      then ``initialize_request``: provider -> extensions -> features;
   c. the call: ``stream_api`` with, per chunk, provider ``process_chunk`` then
      each extension's (hot path; features never run here), or ``call_api``;
   d. finalize: provider ``finalize``; each extension's ``process_chunk``
      once with ``native_chunk=None`` for the finals it has not seen;
      extensions' ``finalize`` -> features' ``finalize``;
   e. from native: provider ``from_native_messages`` -> extensions -> features;
   f. ``response_finalize`` lifecycle actions;
   g. ``final`` events; when the last final asks for tools: preview events,
      ``tool_pre`` lifecycle, execution, ``tool`` messages, ``tool_post``;
5. ``done`` with the new session.

Each stage lives in its own module: :mod:`~agent_core.tools.kit` (2),
:mod:`~agent_core.plugins.chains` (3, a, b, e),
:mod:`~agent_core.engine.hot_loop` (c, the start of d), :mod:`~agent_core.engine.finalize`
(d-f), :mod:`~agent_core.tools.loop` and :mod:`~agent_core.tools.policy` (g),
:mod:`~agent_core.plugins.lifecycle` (actions). This module strings them together, one
method per step: :meth:`RequestRun._resolved` (1-2, then ``start``), ``_set_up`` (3), ``_answer_pending`` (tool
calls an earlier request left), ``_provider_call`` (4: ``_native_for_call`` a-b,
``_tools_asked`` g).

The run never calls back into the engine: :class:`AgentCore` hands it a
``resolve`` callback, the approval callback and the object contexts carry as
``core``. Everything a plugin is handed is frozen, and results are frozen on
the way back in only where they are new, so neither the per-chunk nor the
per-turn work grows with the length of the conversation.

Why one module: it is the numbered list above as one class, a method a step, so the
order of a request reads top to bottom in one place; each step's work lives elsewhere.
"""

from __future__ import annotations

import contextvars
import dataclasses
import time
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from ..errors import (
    AgentCoreError,
    InvalidValueError,
    LLMError,
    PluginError,
    ProviderRequestCancelled,
)
from ..plugins.chains import init_state, initialize_request, tail, to_native
from ..plugins.hooks import LivePlugin, cancel_provider_call
from ..plugins.lifecycle import lifecycle_table
from ..plugins.enablement import own_config
from ..plugins.resolution import Resolution
from ..runtime.effects import EffectCancelled
from ..runtime.flight import Flight, RunCancelled
from ..tools.kit import ToolKit
from ..tools.loop import pending_calls, run_tools
from ..tools.policy import tool_failure
from ..tools.toolkit import inspect_call, truncation
from ..values.events import (
    FINISHED,
    DoneEvent,
    ErrorEvent,
    FinalEvent,
    Outcome,
    StartEvent,
    error_info,
)
from ..values.frozen import FrozenDict, FrozenList, freeze
from ..values.messages import Message, Session
from ..values.native_history import load_native, prefix_digest, store_native
from .finalize import Turn, finalize_turn
from .hot_loop import call_provider
from .observe import ABANDONED, Observers, observers_for
from .repeats import AnsweredCalls
from .request_injection import inject, request_injections
from .secret_guard import SecretGuard
from .tally import UsageTally

__all__ = ["RequestRun", "error_info"]


@dataclass(frozen=True)
class Settled:
    """What a request settles before its first provider call (steps 1-3), for every call after."""

    provider: LivePlugin
    exts: list[LivePlugin]
    chain: list[LivePlugin]  # the extensions, then the features
    kit: ToolKit
    base_ctx: dict[str, Any]  # what each provider call's context starts from
    max_iter: int  # max_iterations
    stop_on_error: bool  # stop_on_tool_error


class RequestRun:
    """One request. Private, short-lived bookkeeping around frozen values.

    Args:
        resolve: resolves the plugins for this request (called once, inside
            the run, so a failure is reported like any other).
        core: what contexts carry as ``context["core"]``.
        approval: the application's approval callback, or None.
        on_finish: called when the run ends (the engine frees the request id).
    """

    def __init__(
        self,
        resolve: Callable[[], Resolution],
        session: Session,
        config: Mapping[str, Any],
        *,
        stream: bool,
        request_id: str,
        flight: Flight,
        core: Any = None,
        approval: Callable[..., Any] | None = None,
        final_sessions: bool = False,
        on_finish: Callable[[], None] | None = None,
    ) -> None:
        self.resolve = resolve
        self.input_session = session
        self.user_config = config
        self.stream = stream
        self.request_id = request_id
        self.flight = flight
        self.core = core
        self.approval = approval
        self.error: BaseException | None = None  # what request() raises
        self.outcome: Outcome = FINISHED
        self.usage = UsageTally()
        self.added: list[Message] = []
        self.ephemeral: list[Message] = []  # injected context for the next provider call only
        self.final_sessions = final_sessions  # finals carry the session (send_request_stream)
        self.on_finish = on_finish  # called once the run has ended, however it ended
        # For observers (agent_core.engine.observe): when and from which context the request was made.
        self.started_ns = time.time_ns()
        self.caller = contextvars.copy_context()
        self.observer: Observers | None = None
        self.answered = AnsweredCalls()  # the tool calls this request ran, by id

    def run(self) -> Generator[Any, Any, None]:
        try:
            yield from self._events()
        finally:
            if self.observer is not None:  # a no-op when done was reached; else nobody read to the end
                self.observer.request_ended(ABANDONED, self.usage.usage(), None)
            if self.on_finish is not None:
                self.on_finish()

    def _events(self) -> Generator[Any, Any, None]:
        session = self.input_session
        try:
            try:
                session = yield from self._run()
            except RecursionError as exc:
                # A last line: values are depth-checked where they come in, so
                # this means a plugin recursed on its own; still a typed error.
                raise InvalidValueError(f"a value or a plugin recursed too deeply: {exc}") from exc
        except (RunCancelled, EffectCancelled):
            self.outcome = Outcome("stopped", "cancelled", "cancelled by cancel_request")
            self.error = ProviderRequestCancelled(self.request_id)
            session = self.input_session
        except AgentCoreError as exc:
            reason = (
                "plugin_error" if isinstance(exc, PluginError)
                else "provider_error" if isinstance(exc, LLMError)
                else "cancelled" if isinstance(exc, ProviderRequestCancelled)
                else "invalid_input"
            )
            self.outcome = Outcome("stopped", reason, str(exc))  # type: ignore[arg-type]
            self.error = exc
            session = self.input_session
            if reason != "cancelled":
                yield ErrorEvent(self.request_id, error_info(exc))
        added = self.added if self.error is None else []
        usage = self.usage.usage()
        if self.observer is not None:
            self.observer.request_ended(self.outcome, usage, self.error)
        yield DoneEvent(self.request_id, session, self.outcome, usage, list(added))

    def _run(self) -> Generator[Any, Any, Session]:
        """Steps 1-4 of the module docstring; returns the new session (``done``, step 5, is :meth:`_events`')."""
        res, kit = yield from self._resolved()  # 1-2
        req, state = self._set_up(res, kit)  # 3
        session, go_on = yield from self._answer_pending(req, self.input_session, state)
        if not go_on:
            return session
        # The stored record's digests are memoized on the message vector; computing them on the
        # caller's vector (not only on the grown one) lets a request sent again from the same
        # session find them, so it costs O(new messages), not O(history).
        prefix_digest(session.messages, len(session.messages))
        for iteration in range(1, req.max_iter + 1):  # 4
            session, state, go_on = yield from self._provider_call(req, session, state, iteration)
            if not go_on:
                break
        return session

    def _resolved(self) -> Generator[Any, Any, tuple[Resolution, ToolKit]]:
        """Steps 1-2: resolve the plugins, set up the tools, and announce them (``start``).

        ``start`` comes once the tools are set up, so its ``warnings`` can say which tools a
        name clash left out; a cancel reaches the provider from the moment the plugins resolve.
        """
        wanted = self.user_config.get("provider") if isinstance(self.user_config, Mapping) else None
        try:
            res = self.resolve()
        except Exception:
            # every stream opens with ``start``, even one that cannot resolve its plugins
            yield StartEvent(self.request_id, str(wanted or ""), [], [], [])
            raise
        self.flight.attach(partial(cancel_provider_call, res.live[res.provider], self.request_id))
        start = partial(StartEvent, self.request_id, str(res.provider), [str(n) for n in res.extensions],
                        [str(n) for n in res.features], [str(n) for n in res.tools])
        try:
            kit = yield from ToolKit.for_request(res, self.core, request_id=self.request_id, flight=self.flight,
                                                 stream=self.stream, approval=self.approval)
        except Exception:
            yield start(list(res.warnings))
            raise
        yield start([*res.warnings, *kit.notes])
        return res, kit

    def _set_up(self, res: Resolution, kit: ToolKit) -> tuple[Settled, Any]:
        """Step 3: the init chain, on the config with the tools' schemas; returns its state."""
        live = res.live
        provider = live[res.provider]
        exts: list[LivePlugin] = [live[n] for n in res.extensions]
        chain = [*exts, *(live[n] for n in res.features)]
        config = kit.config
        state = init_state(provider, chain, lambda p: own_config(p, config))
        kit = dataclasses.replace(kit.with_lifecycle(lifecycle_table(chain, state)), guard=SecretGuard(live.values()))
        self.observer = self._observers(res, chain[len(exts):], config)
        if self.observer is not None:
            kit = dataclasses.replace(kit, observer=self.observer)
        base_ctx = {
            "core": self.core, "config": config, "request_id": self.request_id, "tags": list(res.tags),
            "models": list(res.models), "available_tools": kit.available, "tools": kit.offered,
            "tool_interop": kit.registry, "stream": self.stream,
        }
        return Settled(provider, exts, chain, kit, base_ctx, int(config.get("max_iterations") or 10),
                     bool(config.get("stop_on_tool_error"))), state

    def _observers(self, res: Resolution, features: list[LivePlugin], config: Any) -> Observers | None:
        """The features' observers (:mod:`.observe`), asked in the context the caller made the request in."""
        def context() -> Any:
            return freeze({"request_id": self.request_id, "provider": str(res.provider), "stream": self.stream,
                           "session_id": self.input_session.session_id, "started_ns": self.started_ns})

        return self.caller.run(observers_for, features, lambda p: own_config(p, config), context)

    def _answer_pending(self, req: Settled, session: Session, state: Any) -> Generator[Any, Any, tuple[Session, bool]]:
        """Tool calls an earlier request left unanswered (it stopped at ``max_turns``) are answered first.

        So the provider never sees a call without its result. With
        ``run_pending_tool_calls`` off each gets an error result instead of
        running. Returns the session and whether the request goes on (not when
        a tool failed under ``stop_on_tool_error``).
        """
        kit = req.kit
        pending = pending_calls(session, kit.registry, kit.emitted)
        if pending is None:
            return session, True
        pos, calls = pending
        skip = None if kit.config.get("run_pending_tool_calls", True) else (
            "tool call not executed: the request that asked for it stopped before running it, "
            "and run_pending_tool_calls is off"
        )
        native, _ = load_native(session, req.provider.name)
        session, _, failures = yield from run_tools(
            kit, calls, session, native, state, 0, self.added, self.ephemeral, pos, skip)
        return session, self._goes_on(req, failures)

    def _provider_call(
        self, req: Settled, session: Session, state: Any, iteration: int
    ) -> Generator[Any, Any, tuple[Session, Any, bool]]:
        """Step 4, once: the native history (a-b), the call and its finals (c-f), the tools they ask for (g).

        Returns the session, the state and whether another provider call follows.
        """
        if self.flight.cancelled:
            raise RunCancelled
        ctx = freeze({**req.base_ctx, "iteration": iteration})
        stored, native, state = self._native_for_call(req, session, state, ctx)
        turn = Turn(stored, native, iteration, ctx)
        observer = self.observer
        if observer is not None:
            observer.provider_call_started(iteration, session.messages)
        finals, native, state = yield from call_provider(
            req.provider, req.exts, native, state, stream=self.stream, request_id=self.request_id,
            flight=self.flight, iteration=iteration, ctx=ctx, billed=self.usage,
            on_first=None if observer is None else partial(observer.first_chunk, iteration),
        )
        self.usage.provider_calls += 1
        messages, session, native, state = finalize_turn(
            req.provider, req.chain, req.kit.lifecycle, turn, finals, native, state, session,
            request_id=self.request_id, stream=self.stream, core=self.core, guard=req.kit.guard,
        )
        if observer is not None:
            observer.provider_call_ended(iteration, messages)
        self.added.extend(messages)
        for m in messages:
            self._count_usage(m)
            yield FinalEvent(self.request_id, m, iteration, session if self.final_sessions else None)
        return (yield from self._tools_asked(req, messages, session, native, state, iteration))

    def _native_for_call(self, req: Settled, session: Session, state: Any, ctx: Any) -> tuple[Any, Any, Any]:
        """Steps 4a-b: the stored native history, and what this provider call sends; ``(stored, native, state)``.

        The stored history grows by the core messages it does not cover yet;
        the rest is for this call only: context a ``tool_pre`` action injected
        for the next call, the ``llm_request`` injections, ``initialize_request``.
        """
        provider, chain = req.provider, req.chain
        native, covered = load_native(session, provider.name)
        if covered < len(session.messages) or not native:
            native = FrozenList.joined(native, to_native(provider, chain, tail(session.messages, covered), state, ctx))
        stored = native
        if self.ephemeral:
            native = FrozenList.joined(native, to_native(provider, chain, self.ephemeral, state, ctx))
            self.ephemeral = []
        front, back = request_injections(req.kit.lifecycle, session, stored, state, ctx, core=self.core,
                                         request_id=self.request_id, stream=self.stream)
        native = inject(provider, chain, native, front, back, state, ctx)
        native, state = initialize_request(provider, chain, native, state, self.request_id, ctx)
        return stored, native, state

    def _tools_asked(
        self, req: Settled, messages: list[Message], session: Session, native: Any, state: Any, iteration: int,
    ) -> Generator[Any, Any, tuple[Session, Any, bool]]:
        """Step 4g: run the tools the last final asks for, unless the request ends here (``outcome`` says why)."""
        calls = _tool_calls(messages)
        stop = self._stop_before_tools(req, messages, calls, iteration)
        if stop is not None:
            self.outcome = stop
            return session, state, False
        session, n_added, failures = yield from run_tools(
            req.kit, list(enumerate(calls)), session, native, state, iteration, self.added, self.ephemeral
        )
        # keep the native record pointing at the same covered prefix
        session = store_native(session, req.provider.name, native, len(session.messages) - n_added)
        return session, state, self._goes_on(req, failures)

    def _stop_before_tools(
        self, req: Settled, messages: list[Message], calls: list[Any], iteration: int
    ) -> Outcome | None:
        """Why the request ends after this provider call instead of running ``calls``; None to run them."""
        if not calls:
            return FINISHED
        inspected = [inspect_call(req.kit.registry, c, i, req.kit.emitted) for i, c in enumerate(calls)]
        cut = truncation(_last_assistant_metadata(messages), calls, inspected)
        if cut is not None:
            # The partial answer stays in the session; nothing runs and the
            # model is not called again with arguments it never finished.
            return Outcome("stopped", "truncated", cut)
        repeated = self.answered.check(req.provider.name, calls)
        if repeated is not None:
            return repeated
        if iteration == req.max_iter:
            return Outcome(
                "stopped", "max_turns",
                f"the model still asked for tools after {req.max_iter} provider call(s) (max_iterations)",
            )
        return None

    def _goes_on(self, req: Settled, failures: list[str]) -> bool:
        """False, with the ``tool_failure`` outcome, when a tool failed under ``stop_on_tool_error``."""
        if failures and req.stop_on_error:
            self.outcome = tool_failure(failures)
            return False
        return True

    def _count_usage(self, m: Message) -> None:
        self.usage.add_reported(m.metadata.get("usage"))


def _last_assistant_metadata(messages: list[Message]) -> Mapping[str, Any]:
    last = next((m for m in reversed(messages) if m.role == "assistant"), None)
    return FrozenDict() if last is None else last.metadata


def _tool_calls(messages: list[Message]) -> list[Any]:
    calls = _last_assistant_metadata(messages).get("tool_calls")
    return list(calls) if isinstance(calls, (list, tuple)) else []
