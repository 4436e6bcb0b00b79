"""The request flow, written once as a generator (see :mod:`agent_core.effects`).

Order of work for one request (binding; the plugin hooks' docs refer to it):

1. resolve plugins for the config (:mod:`agent_core.resolution`);
2. tools: ``init`` (+ ``prepare``), schemas, features' ``prepare_tools``,
   adapted schemas into ``config["tools"]``;
3. init chain: provider ``init(config)`` -> extensions -> features;
4. per provider call (at most ``max_iterations``):
   a. to native: provider ``to_native_messages`` -> extensions -> features,
      for the core messages the stored native history does not cover yet;
   b. ``initialize_request``: provider -> extensions -> features;
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

Everything a plugin is handed is frozen. Results are frozen on the way back
in, which costs nothing for values that come back unchanged, so the per-chunk
work does not grow with the length of the conversation.
"""

from __future__ import annotations

import dataclasses
import threading
import warnings
from collections.abc import Generator, Mapping
from typing import TYPE_CHECKING, Any

from .effects import END, Call, CancellationToken, CloseIter, EffectCancelled, NextItem, OpenIter
from .errors import (
    ActionInputError,
    ConfigError,
    EmptyResponseError,
    InvalidValueError,
    LLMError,
    PluginError,
    ProviderRequestCancelled,
)
from .events import (
    FINISHED,
    DoneEvent,
    ErrorEvent,
    ErrorInfo,
    FinalEvent,
    Outcome,
    PartialEvent,
    StartEvent,
    Usage,
    UserMessageEvent,
)
from .frozen import FrozenDict, FrozenList, freeze, thaw
from .hooks import LivePlugin, call_hook, expect_tuple, frozen_list, frozen_map
from .native_history import load_native, persistable, store_native
from .resolution import Resolution, own_config
from .stubs import streams_for_real
from .tool_interop import ToolInteropRegistry
from .tool_turn import (
    DEFAULT_APPROVAL_TIMEOUT,
    PreOutcome,
    ToolKit,
    place,
    read_hook_extras,
    suppressed,
    tool_failure,
)
from .tools import (
    LiveTool,
    Routed,
    accepted_formats,
    adapt_all,
    build_catalog,
    inspect_call,
    interop_registry,
    is_async_callable,
    prepare_tools,
    preview_event,
    route,
    run_tool_call,
    truncation,
)
from .types import Message, PartialMessage, Session

if TYPE_CHECKING:
    from .engine import AgentCore

__all__ = ["Flight", "Pipeline", "RESERVED_CONTEXT_KEYS", "plugin_actions", "tool_timeout_of"]

#: context keys the engine owns; caller-supplied context cannot replace them
RESERVED_CONTEXT_KEYS = frozenset(
    {
        "core", "config", "trigger_source", "session", "lifecycle", "final_messages",
        "native_final_messages", "native_messages", "stream", "turn_native_start_index",
        "request_id", "tags", "models", "available_tools", "tools", "tool_interop", "iteration",
        "tool_call", "tool_result", "tool_message",
    }
)


class Flight:
    """An in-flight request, as ``cancel_request`` sees it."""

    __slots__ = ("request_id", "provider", "token", "_lock")

    def __init__(self, request_id: str) -> None:
        self.request_id = request_id
        self.provider: LivePlugin | None = None
        self.token = CancellationToken()  # what running tools get as ``cancellation``
        self._lock = threading.Lock()

    @property
    def cancelled(self) -> bool:
        return self.token.cancelled

    def cancel(self) -> None:
        self.token.cancel()
        with self._lock:
            provider = self.provider
        if provider is not None:
            try:
                call_hook(provider, "cancel_request", self.request_id)
            except PluginError as exc:
                warnings.warn(f"cancel_request of {provider.name!r} failed: {exc}", RuntimeWarning, stacklevel=2)

    def attach(self, provider: LivePlugin) -> None:
        with self._lock:
            self.provider = provider


class _Cancelled(Exception):
    pass


def tool_timeout_of(config: Mapping[str, Any]) -> float | None:
    """``tool_timeout_s``: seconds a tool call may run (None: no limit)."""
    value = config.get("tool_timeout_s")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or value == float("inf"):
        raise ConfigError(
            f"config key 'tool_timeout_s' must be a positive number of seconds (or null), got {value!r}",
            key="tool_timeout_s",
        )
    return float(value)


def merge_context(owned: dict[str, Any], extra: Mapping[str, Any] | None) -> FrozenDict:
    """Add caller context to the engine's; a clash keeps the engine's value (with a warning)."""
    if extra:
        for k, v in extra.items():
            if k in owned or k in RESERVED_CONTEXT_KEYS:
                warnings.warn(
                    f"context key {k!r} is reserved by the engine; the caller's value is ignored",
                    RuntimeWarning,
                    stacklevel=4,
                )
                continue
            owned[k] = v
    return freeze(owned)


def _core_dicts(plugin: LivePlugin, hook: str, value: Any) -> FrozenList:
    msgs = frozen_list(plugin, hook, value, "core messages")
    for m in msgs:
        try:
            Message.from_dict(m)
        except (TypeError, ValueError, KeyError) as exc:
            raise PluginError(plugin.name, hook, exc, detail=f"returned an invalid core message {m!r}: {exc}") from exc
    return msgs


def plugin_actions(plugin: LivePlugin, state: Any) -> list[FrozenDict]:
    """A plugin's ``get_actions``, checked: mappings with a string ``id`` and a well-formed trigger.

    Raises:
        PluginError: naming the plugin, the hook ``get_actions`` and what is wrong.
    """
    if not plugin.defines("get_actions"):
        return []
    got = call_hook(plugin, "get_actions", state)
    if got is None:
        return []
    if not isinstance(got, (list, tuple)):
        raise PluginError(plugin.name, "get_actions", TypeError("bad return value"),
                          detail=f"must return a list of actions, got {type(got).__name__}")
    out = []
    for action in got:
        if not isinstance(action, Mapping) or not isinstance(action.get("id"), str):
            raise PluginError(plugin.name, "get_actions", TypeError("bad action"),
                              detail=f"each action must be a mapping with a string 'id', got {action!r}")
        for key in ("trigger", "lifecycle"):
            trig = action.get(key)
            if trig is None or isinstance(trig, str):
                continue
            if not isinstance(trig, (list, tuple)) or not all(isinstance(t, str) for t in trig):
                raise PluginError(
                    plugin.name, "get_actions", TypeError("bad trigger"),
                    detail=f"action {action['id']!r}: {key!r} must be a lifecycle name or a list of them, "
                           f"got {trig!r}",
                )
        out.append(_frozen_action(plugin, action))
    return out


def _frozen_action(plugin: LivePlugin, action: Any) -> FrozenDict:
    try:
        return freeze(action)  # type: ignore[no-any-return]
    except InvalidValueError as exc:
        raise PluginError(plugin.name, "get_actions", exc) from exc


def error_info(exc: BaseException) -> ErrorInfo:
    if isinstance(exc, PluginError):
        return ErrorInfo("PluginError", str(exc), exc.plugin, exc.hook)
    if isinstance(exc, LLMError):
        return ErrorInfo(
            type(exc).__name__, str(exc), exc.provider, None, exc.status_code, getattr(exc, "retry_after", None)
        )
    return ErrorInfo(type(exc).__name__, str(exc))


class Pipeline:
    """One request. Private, short-lived bookkeeping around frozen values."""

    def __init__(
        self,
        core: AgentCore,
        session: Session,
        config: Mapping[str, Any],
        *,
        stream: bool,
        request_id: str,
        flight: Flight,
        resolution: Resolution | None = None,
        final_sessions: bool = False,
    ) -> None:
        self.core = core
        self.input_session = session
        self.user_config = config
        self.stream = stream
        self.request_id = request_id
        self.flight = flight
        self.resolution = resolution
        self.error: BaseException | None = None  # what request() raises
        self.outcome: Outcome = FINISHED
        self.usage = [0, 0, 0]
        self.added: list[Message] = []
        self.tool_timeout: float | None = None  # tool_timeout_s, read from the resolved config
        self.ephemeral: list[Message] = []  # injected context for the next provider call only
        self.final_sessions = final_sessions  # finals carry the session (send_request_stream)

    # -- the flow -------------------------------------------------------------

    def run(self) -> Generator[Any, Any, None]:
        session = self.input_session
        try:
            try:
                session = yield from self._run()
            except RecursionError as exc:
                # A last line: values are depth-checked where they come in, so
                # this means a plugin recursed on its own; still a typed error.
                raise InvalidValueError(f"a value or a plugin recursed too deeply: {exc}") from exc
        except (_Cancelled, EffectCancelled):
            self.outcome = Outcome("stopped", "cancelled", "cancelled by cancel_request")
            self.error = ProviderRequestCancelled(self.request_id)
            session = self.input_session
        except (
            PluginError, LLMError, ConfigError, ActionInputError, InvalidValueError, ProviderRequestCancelled
        ) as exc:
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
        yield DoneEvent(
            self.request_id, session, self.outcome,
            Usage(self.usage[0], self.usage[1], self.usage[2]), list(added),
        )

    def _run(self) -> Generator[Any, Any, Session]:
        try:
            res = self.resolution or self.core.resolve(self.user_config, session=self.input_session)
        except Exception:
            # every stream opens with ``start``, even one that cannot resolve its plugins
            wanted = self.user_config.get("provider") if isinstance(self.user_config, Mapping) else None
            yield StartEvent(self.request_id, str(wanted or ""), [], [], [])
            raise
        live = res.live
        provider: LivePlugin = live[res.provider]
        self.flight.attach(provider)
        exts: list[LivePlugin] = [live[n] for n in res.extensions]
        feats: list[LivePlugin] = [live[n] for n in res.features]
        tool_plugins: list[LivePlugin] = [live[n] for n in res.tools]
        yield StartEvent(
            self.request_id, str(res.provider), [str(n) for n in res.extensions],
            [str(n) for n in res.features], [str(n) for n in res.tools], list(res.warnings),
        )
        config: FrozenDict = res.config
        max_iter = int(config.get("max_iterations") or 10)
        self.tool_timeout = tool_timeout_of(config)

        prep_ctx = freeze({"core": self.core, "config": config, "provider": str(res.provider),
                           "tags": list(res.tags), "models": list(res.models), "request_id": self.request_id})
        tools: list[LiveTool] = yield from build_catalog(tool_plugins, config, prep_ctx)
        available = FrozenList._trusted([d for t in tools for d in t.schemas.values()])
        ctx0 = prep_ctx.merged({"available_tools": available, "tools": available})
        effective = prepare_tools(feats, config, available, ctx0)
        registry = interop_registry(provider, exts, tools, config)
        accepted = accepted_formats(provider, exts, config)
        config = config.set("tools", adapt_all(registry, list(effective), accepted))
        emitted = list(self._emitted(provider, exts, config))
        effective_names = {(d.plugin_name, d.tool_name) for d in effective}

        state = frozen_map(provider, "init", call_hook(provider, "init", own_config(provider, config)), "state")
        for p in (*exts, *feats):
            state = frozen_map(p, "init", call_hook(p, "init", own_config(p, config), state), "state")

        lifecycle = self._lifecycle_actions((*exts, *feats), state)
        session = self.input_session
        kit = ToolKit(registry, tools, effective_names, emitted, accepted, lifecycle, config)
        stop_on_error = bool(config.get("stop_on_tool_error"))
        base_ctx = {
            "core": self.core, "config": config, "request_id": self.request_id, "tags": list(res.tags),
            "models": list(res.models), "available_tools": available, "tools": effective,
            "tool_interop": registry, "stream": self.stream,
        }
        pname = str(res.provider)

        pending = self._pending_calls(session, registry, emitted)
        if pending is not None:
            # An earlier request stopped (max_turns) before running these: answer them first, so the
            # provider never sees a call without its result.
            pos, calls = pending
            skip = None if config.get("run_pending_tool_calls", True) else (
                "tool call not executed: the request that asked for it stopped before running it, "
                "and run_pending_tool_calls is off"
            )
            native, _ = load_native(session, pname)
            session, _, failures = yield from self._run_tools(kit, calls, session, native, state, 0, pos, skip)
            if failures and stop_on_error:
                self.outcome = tool_failure(failures)
                return session

        for iteration in range(1, max_iter + 1):
            if self.flight.cancelled:
                raise _Cancelled
            ctx = freeze({**base_ctx, "iteration": iteration})
            native, covered = load_native(session, pname)
            new_core = list(session.messages)[covered:]
            if new_core or not native:
                delta = self._to_native(provider, exts, feats, [m.as_mapping() for m in new_core], state, ctx)
                native = FrozenList._trusted([*native, *delta])
            stored = native  # what initialize_request adds below is for this provider call only
            if self.ephemeral:
                # context a tool_pre action injected for the next provider call only
                extra = self._to_native(provider, exts, feats, [m.as_mapping() for m in self.ephemeral], state, ctx)
                native = FrozenList._trusted([*native, *extra])
                self.ephemeral = []

            native, state = self._chain2(provider, "initialize_request", native, state,
                                         request_id=self.request_id, context=ctx)
            for p in (*exts, *feats):
                native, state = self._chain2(p, "initialize_request", native, state, context=ctx)
            turn_start = len(native)
            request_time = native

            finals, native, state = yield from self._call(provider, exts, native, state, iteration, ctx)
            self.usage[2] += 1

            for p in (*exts, *feats):
                out = expect_tuple(p, "finalize", call_hook(p, "finalize", finals, native, state, context=ctx), 3,
                                   "(final_messages, native_messages, state)")
                finals = frozen_list(p, "finalize", out[0], "final_messages")
                native = frozen_list(p, "finalize", out[1], "native_messages")
                state = frozen_map(p, "finalize", out[2], "state")

            core_msgs = _core_dicts(provider, "from_native_messages",
                                    call_hook(provider, "from_native_messages", finals, state, context=ctx))
            for p in (*exts, *feats):
                core_msgs = _core_dicts(p, "from_native_messages",
                                        call_hook(p, "from_native_messages", finals, core_msgs, state, context=ctx))

            session_meta: dict[str, Any] = {}
            for plugin, action in lifecycle.get("response_finalize", ()):
                lctx = {
                    "lifecycle": "response_finalize", "trigger_source": "core", "config": config,
                    "session": session.to_dict(), "core": self.core, "final_messages": core_msgs,
                    "native_final_messages": finals, "native_messages": native, "stream": self.stream,
                    "turn_native_start_index": turn_start, "request_id": self.request_id,
                }
                result = self._action(plugin, action, session, native, lctx, state)
                if "final_messages" in result:
                    core_msgs = _core_dicts(plugin, "execute_action", result["final_messages"])
                if isinstance(result.get("session_metadata"), Mapping):
                    session_meta.update(result["session_metadata"])
                if "native_messages" in result:
                    native = frozen_list(plugin, "execute_action", result["native_messages"], "native_messages")

            messages = [Message.from_dict(m) for m in core_msgs]
            session = session.with_messages(messages)
            if session_meta:
                session = session.with_metadata(session_meta)
            native = persistable(stored, native, turn_start, request_time)
            session = store_native(session, pname, native)
            self.added.extend(messages)
            for m in messages:
                self._count_usage(m)
                yield FinalEvent(self.request_id, m, iteration, session if self.final_sessions else None)

            calls = self._tool_calls(messages)
            if not calls:
                self.outcome = FINISHED
                return session
            inspected = [inspect_call(registry, c, i, emitted) for i, c in enumerate(calls)]
            cut = truncation(self._last_assistant_metadata(messages), calls, inspected)
            if cut is not None:
                # The partial answer stays in the session; nothing runs and the
                # model is not called again with arguments it never finished.
                self.outcome = Outcome("stopped", "truncated", cut)
                return session
            if iteration == max_iter:
                self.outcome = Outcome(
                    "stopped", "max_turns",
                    f"the model still asked for tools after {max_iter} provider call(s) (max_iterations)",
                )
                return session

            session, n_added, failures = yield from self._run_tools(
                kit, list(enumerate(calls)), session, native, state, iteration
            )
            # keep the native record pointing at the same covered prefix
            session = store_native(session, pname, native, len(session.messages) - n_added)
            if failures and stop_on_error:
                self.outcome = tool_failure(failures)
                return session
        return session  # pragma: no cover - the loop always returns

    def _run_tools(
        self, kit: ToolKit, calls: list[tuple[int, Any]], session: Session, native: Any, state: Any,
        iteration: int, insert_at: int | None = None, not_executed: str | None = None,
    ) -> Generator[Any, Any, tuple[Session, int, list[str]]]:
        """Route, preview, vet (``tool_pre``), run and record one turn's tool calls.

        Tool messages are appended, or placed from ``insert_at`` on (pending
        calls answered before later messages). With ``not_executed`` nothing
        runs: each call gets an error result saying so. Returns the session,
        how many messages were added, and a line per tool that failed.
        """
        routed = [route(inspect_call(kit.registry, c, i, kit.emitted), kit.tools, kit.names) for i, c in calls]
        if not_executed is not None:
            routed = [Routed(dataclasses.replace(r.call, error=not_executed), r.tool, r.descriptor) for r in routed]
        for r in routed:
            yield preview_event(self.request_id, r, iteration)
        pos = len(session.messages) if insert_at is None else insert_at
        added = 0
        failures: list[str] = []
        injections: list[tuple[str, Message, bool]] = []
        for r in routed:
            if self.flight.cancelled:
                raise _Cancelled
            tctx = {"core": self.core, "config": kit.config, "trigger_source": "core",
                    "session": session.to_dict(), "request_id": self.request_id}
            pre = PreOutcome(r.call.payload)
            if not_executed is None:
                pre = yield from self._tool_pre(kit.lifecycle, r, session, native, state, kit.config)
            for plugin_name, text, level in pre.notices:
                yield UserMessageEvent(self.request_id, plugin_name, text, level, r.call.call_id)
            if pre.denial is not None:
                r = Routed(dataclasses.replace(r.call, error=pre.denial), r.tool, r.descriptor)
            run = run_tool_call(r, pre.payload, freeze(tctx), self.request_id, kit.accepted,
                                token=self.flight.token, timeout=self.tool_timeout)
            msg = yield from (suppressed(run) if pre.suppress else run)
            if self.flight.cancelled:
                raise _Cancelled
            session, pos = place(session, msg, pos)
            added += 1
            self.added.append(msg)
            if r.call.error is None and isinstance(msg.tool_result, Mapping) and not msg.tool_result.get("success"):
                failures.append(f"{r.call.tool_name!r} (call {r.call.call_id}): {msg.tool_result.get('error')}")
            session = self._tool_post(kit.lifecycle, r, msg, session, native, state, kit.config)
            injections.extend(pre.injections)
        # injected context goes after the turn's tool results, never between a call and its result
        for _, message, ephemeral in injections:
            if ephemeral:
                self.ephemeral.append(message)
            else:
                session, pos = place(session, message, pos)
                added += 1
                self.added.append(message)
        return session, added, failures

    def _pending_calls(
        self, session: Session, registry: ToolInteropRegistry, emitted: list[str]
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

    # -- pieces ---------------------------------------------------------------

    def _emitted(self, provider: LivePlugin, exts: list[LivePlugin], config: Any) -> list[str]:
        out: list[str] = []
        for p in (provider, *exts):
            for f in call_hook(p, "emitted_tool_call_formats", config, None) or ():
                if f not in out:
                    out.append(f)
        return out

    def _chain2(self, p: LivePlugin, hook: str, native: Any, state: Any, **kw: Any) -> tuple[Any, Any]:
        out = expect_tuple(p, hook, call_hook(p, hook, native, state, **kw), 2, "(native_messages, state)")
        return frozen_list(p, hook, out[0], "native_messages"), frozen_map(p, hook, out[1], "state")

    def _to_native(
        self, provider: LivePlugin, exts: list[LivePlugin], feats: list[LivePlugin],
        core: list[Any], state: Any, ctx: Any,
    ) -> FrozenList:
        core_list = FrozenList._trusted(core)
        native = frozen_list(provider, "to_native_messages",
                             call_hook(provider, "to_native_messages", core_list, state, context=ctx), "native messages")
        for p in (*exts, *feats):
            native = frozen_list(p, "to_native_messages",
                                 call_hook(p, "to_native_messages", core_list, native, state, context=ctx),
                                 "native messages")
        return native

    def _call(
        self, provider: LivePlugin, exts: list[LivePlugin], native: Any, state: Any, iteration: int, ctx: Any
    ) -> Generator[Any, Any, tuple[FrozenList, FrozenList, FrozenDict]]:
        """Steps 4c-4d up to the extensions' closing ``process_chunk(None, ...)``."""
        spec = provider.spec
        can_stream = (spec.defines("stream_api") and streams_for_real(spec.cls)) or spec.defines("astream_api")
        can_call = spec.defines("call_api") or spec.defines("acall_api")
        rid = self.request_id
        seen: list[Any] = []
        unseen: list[Any] = []
        chunks = 0
        streamed = (self.stream and can_stream) or not can_call
        if streamed:
            sapi = provider.hook("stream_api") if spec.defines("stream_api") else None
            aapi = provider.hook("astream_api") if spec.defines("astream_api") else None
            try:
                handle = yield OpenIter(
                    (lambda: sapi(native, state, request_id=rid)) if sapi else None,
                    (lambda: aapi(native, state, request_id=rid)) if aapi else None,
                    label=f"provider {provider.name!r} stream",
                )
            except Exception as exc:
                raise self._provider_failure(provider, "stream_api", exc) from exc
            p_chunk = provider.hook("process_chunk")
            hot = [(e, e.hook("process_chunk")) for e in exts if e.defines("process_chunk")]
            flight = self.flight
            while True:
                try:
                    chunk = yield NextItem(handle)
                except Exception as exc:
                    raise self._provider_failure(provider, "stream_api", exc) from exc
                if chunk is END:
                    break
                if flight.cancelled:
                    yield CloseIter(handle)
                    raise _Cancelled
                chunks += 1
                try:
                    out = p_chunk(chunk, native, state)
                except (LLMError, ProviderRequestCancelled):
                    raise
                except Exception as exc:
                    raise PluginError(provider.name, "process_chunk", exc) from exc
                partials, finals, native, state = self._hot_out(provider, out)
                for ext, fn in hot:
                    try:
                        out = fn(chunk, partials, finals, native, state)
                    except (LLMError, ProviderRequestCancelled):
                        raise
                    except Exception as exc:
                        raise PluginError(ext.name, "process_chunk", exc) from exc
                    partials, finals, native, state = self._hot_out(ext, out)
                for p in partials:
                    yield PartialEvent(rid, self._partial(provider, p), iteration)
                if finals:
                    seen.extend(finals)
        # One call, one request: a stream that yields nothing is never followed
        # by call_api (that would be a second, billable request). Providers
        # whose stream_api is only a stub (see streams_for_real) were sent to
        # call_api above instead.
        if not streamed:
            capi = provider.hook("call_api") if spec.defines("call_api") else None
            acapi = provider.hook("acall_api") if spec.defines("acall_api") else None
            try:
                out = yield Call(
                    (lambda: capi(native, state, request_id=rid)) if capi else None,
                    (lambda: acapi(native, state, request_id=rid)) if acapi else None,
                    label=f"provider {provider.name!r} call_api",
                )
            except Exception as exc:
                raise self._provider_failure(provider, "call_api", exc) from exc
            if self.flight.cancelled:
                raise _Cancelled
            partials, finals, native, state = self._hot_out(provider, out, hook="call_api")
            for p in partials:
                yield PartialEvent(rid, self._partial(provider, p), iteration)
            unseen.extend(finals)

        out = expect_tuple(provider, "finalize", call_hook(provider, "finalize", native, state, context=ctx), 3,
                           "(final_messages, native_messages, state)")
        unseen.extend(frozen_list(provider, "finalize", out[0], "final_messages"))
        native = frozen_list(provider, "finalize", out[1], "native_messages")
        state = frozen_map(provider, "finalize", out[2], "state")
        if streamed and not chunks and not seen and not unseen:
            raise EmptyResponseError(
                "the stream ended without sending a single chunk, and finalize produced no answer; "
                "the call was not repeated",
                provider=provider.name,
            )
        pending = FrozenList._trusted(unseen)
        for ext in exts:
            if not ext.defines("process_chunk"):
                continue
            partials, pending, native, state = self._hot_out(
                ext, call_hook(ext, "process_chunk", None, FrozenList(), pending, native, state)
            )
            for p in partials:
                yield PartialEvent(rid, self._partial(ext, p), iteration)
        return FrozenList._trusted([*seen, *pending]), native, state

    def _hot_out(self, plugin: LivePlugin, out: Any, hook: str = "process_chunk") -> tuple[Any, Any, Any, Any]:
        if out.__class__ is not tuple or len(out) != 4:
            out = expect_tuple(plugin, hook, out, 4, "(partial_messages, final_messages, native_messages, state)")
        partials, finals, native, state = out
        return (
            partials if partials.__class__ is FrozenList else frozen_list(plugin, hook, partials, "partial_messages"),
            finals if finals.__class__ is FrozenList else frozen_list(plugin, hook, finals, "final_messages"),
            native if native.__class__ is FrozenList else frozen_list(plugin, hook, native, "native_messages"),
            state if state.__class__ is FrozenDict else frozen_map(plugin, hook, state, "state"),
        )

    def _partial(self, plugin: LivePlugin, p: Any) -> PartialMessage:
        if isinstance(p, PartialMessage):
            return p
        try:
            return PartialMessage(p.get("role") or "assistant", p.get("content", ""), p.get("metadata"))
        except (TypeError, ValueError, AttributeError) as exc:
            raise PluginError(plugin.name, "process_chunk", exc, detail=f"returned an invalid partial {p!r}") from exc

    def _provider_failure(self, provider: LivePlugin, hook: str, exc: BaseException) -> BaseException:
        if self.flight.cancelled:
            return _Cancelled()
        if isinstance(exc, (LLMError, ProviderRequestCancelled, PluginError, ConfigError)):
            return exc
        return PluginError(provider.name, hook, exc)

    def _count_usage(self, m: Message) -> None:
        usage = m.metadata.get("usage")
        if isinstance(usage, Mapping):
            for i, key in enumerate(("input_tokens", "output_tokens")):
                v = usage.get(key)
                if isinstance(v, int) and not isinstance(v, bool):
                    self.usage[i] += v

    @staticmethod
    def _last_assistant_metadata(messages: list[Message]) -> Mapping[str, Any]:
        for m in reversed(messages):
            if m.role == "assistant":
                return m.metadata
        return FrozenDict()

    @staticmethod
    def _tool_calls(messages: list[Message]) -> list[Any]:
        for m in reversed(messages):
            if m.role == "assistant":
                calls = m.metadata.get("tool_calls")
                return list(calls) if isinstance(calls, (list, tuple)) else []
        return []

    # -- lifecycle actions ----------------------------------------------------

    def _lifecycle_actions(self, plugins: tuple[LivePlugin, ...], state: Any) -> dict[str, list[tuple[LivePlugin, Any]]]:
        table: dict[str, list[tuple[LivePlugin, Any]]] = {}
        for p in plugins:
            for action in plugin_actions(p, state):
                trig = action.get("trigger") or action.get("lifecycle")
                for t in ([trig] if isinstance(trig, str) else trig or ()):
                    table.setdefault(t, []).append((p, action))
        return table

    def _action(
        self, plugin: LivePlugin, action: Any, session: Session, native: Any, context: dict[str, Any], state: Any
    ) -> FrozenDict:
        params = {k: v.get("default") for k, v in (action.get("inputs") or {}).items()
                  if isinstance(v, Mapping) and "default" in v}
        result = call_hook(plugin, "execute_action", action["id"], session, native, freeze(params),
                           freeze(context), state)
        return frozen_map(plugin, "execute_action", result if result is not None else {}, "action result")

    def _tool_pre(
        self, lifecycle: Mapping[str, Any], r: Routed, session: Session, native: Any, state: Any, config: Any
    ) -> Generator[Any, Any, PreOutcome]:
        """Ask every ``tool_pre`` action about one call (the HookResult vocabulary of seed 000).

        ``action``: ``continue`` | ``modify`` (``data.payload``) | ``deny`` |
        ``inject_context`` | ``ask_user``; beside it ``context_injection``
        (+ ``context_injection_role``, ``ephemeral``), ``user_message`` (+
        ``user_message_level``), ``suppress_output`` and the approval keys.
        """
        out = PreOutcome(r.call.payload)
        for plugin, action in lifecycle.get("tool_pre", ()):
            call_info = {"id": r.call.call_id, "name": r.call.tool_name, "payload": out.payload,
                         "payload_kind": r.call.payload_kind, "payload_format": r.call.payload_format,
                         "plugin": r.tool.plugin.name if r.tool else None}
            ctx = {"lifecycle": "tool_pre", "trigger_source": "core", "config": config, "core": self.core,
                   "session": session.to_dict(), "tool_call": call_info, "request_id": self.request_id,
                   "native_messages": native, "stream": self.stream}
            res = self._action(plugin, action, session, native, ctx, state)
            verdict = res.get("action") or res.get("decision") or "continue"
            reason = res.get("reason") or ""
            read_hook_extras(plugin, res, verdict, out)
            if verdict == "modify":
                data = res.get("data")
                out.payload = data.get("payload", out.payload) if isinstance(data, Mapping) else res.get(
                    "payload", out.payload)
            elif verdict == "deny":
                out.denial = f"tool call denied by {plugin.name}" + (f": {reason}" if reason else "")
                return out
            elif verdict in ("ask_user", "ask"):
                allowed, why = yield from self._approve(plugin, r, out.payload, res)
                if not allowed:
                    out.denial = f"tool call not approved ({plugin.name}{why})" + (f": {reason}" if reason else "")
                    return out
            elif verdict not in ("continue", "allow", "inject_context"):
                raise PluginError(plugin.name, "execute_action", ValueError(verdict),
                                  detail=f"tool_pre action returned unknown action {verdict!r}")
        return out

    def _approve(
        self, plugin: LivePlugin, r: Routed, payload: Any, res: Mapping[str, Any]
    ) -> Generator[Any, Any, tuple[bool, str]]:
        from .approval import TIMED_OUT, ApprovalRequest, acall_with_timeout, call_with_timeout, decision_allows

        default = res.get("approval_default") or res.get("default") or "deny"
        if default not in ("allow", "deny"):
            raise PluginError(plugin.name, "execute_action", ValueError(default),
                              detail=f"approval_default must be 'allow' or 'deny', got {default!r}")
        timeout = res.get("approval_timeout", DEFAULT_APPROVAL_TIMEOUT)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise PluginError(plugin.name, "execute_action", ValueError(timeout),
                              detail=f"approval_timeout must be a positive number of seconds, got {timeout!r}")
        callback = self.core.approval
        if callback is None:
            return default == "allow", ""
        request = ApprovalRequest(
            request_id=self.request_id, call_id=r.call.call_id, tool_name=r.call.tool_name,
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

    def _tool_post(
        self, lifecycle: Mapping[str, Any], r: Routed, msg: Message, session: Session, native: Any, state: Any,
        config: Any,
    ) -> Session:
        for plugin, action in lifecycle.get("tool_post", ()):
            ctx = {"lifecycle": "tool_post", "trigger_source": "core", "config": config, "core": self.core,
                   "session": session.to_dict(), "request_id": self.request_id,
                   "tool_call": {"id": r.call.call_id, "name": r.call.tool_name, "payload": r.call.payload},
                   "tool_result": msg.tool_result, "tool_message": msg.as_mapping()}
            res = self._action(plugin, action, session, native, ctx, state)
            if isinstance(res.get("session_metadata"), Mapping):
                session = session.with_metadata(res["session_metadata"])
        return session
