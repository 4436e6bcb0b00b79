"""``AgentCore``: the public face of the engine.

AgentCore holds the registered plugin *classes* and nothing about sessions:
every call takes a session and/or a config and returns new values, so one
instance can serve any number of concurrent, stateless request handlers. The
only thing it tracks is which requests are in flight, so that
``cancel_request(request_id)`` can reach them from another thread or task.

Why one module: it is one class, the facade a caller holds, and each method is a
short door into a room below (resolution, a request run, tools, UI, an action,
discovery) after :mod:`.arguments` has checked what it was handed. Cutting the
class to fit a size would only spread that one list of doors over classes that
each pretend to be the engine.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
import weakref
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from typing import Any

from ..compat import PlatformNames
from ..errors import ConfigError, InvalidArgumentError, ProviderRequestCancelled, RequestInFlightError
from ..plugins.core import PluginCore, side_config
from ..plugins.hooks import KINDS, PluginSpec, spec_for
from ..plugins.replay import Replays
from ..plugins.resolution import Resolution, session_plugins
from ..runtime.drivers import drive_async, drive_sync
from ..runtime.flight import Flight, in_flight
from ..values.events import DoneEvent, Event
from ..values.frozen import thaw
from ..values.messages import Message, Session
from ..tools.api import catalog, run_calls, tool_schemas
from ..values.messages import ToolDescriptor
from .actions import ActionResult, execute_action, execute_lifecycle, list_actions
from .arguments import check_action, check_config, check_kind, check_lifecycle, check_session, check_tool_calls
from .info import apply_completion, completions, config_schema, ui_schema
from .discovery import ENTRY_POINT_GROUPS, load_installed
from .flow import Flow, keep_done
from .handed import Basis, check_handed
from .result import RequestResult, result_of
from .run import RequestRun

__all__ = ["ActionResult", "AgentCore", "RequestResult"]

class AgentCore(PlatformNames):
    """A stateless pipeline over registered plugin classes.

    Args:
        providers, extensions, features, tools: plugin classes (or
            zero-argument factories); a fresh instance of each is made for
            every request.
        approval: optional callback (sync or async) asked when a feature's
            ``tool_pre`` action wants a human to approve a tool call.
        model_cache: optional mutable mapping (a ``dict`` will do) where
            ``get_models`` results are kept per config, so resolving the same
            config again asks no plugin for models. The caller owns it: clear
            it when the models a config would list change.

    Raises:
        ConfigError: a plugin is not a class/factory, has a hook whose
            signature the engine cannot satisfy, or two plugins of one kind
            share a name.
    """

    def __init__(
        self,
        providers: Iterable[Any] = (),
        extensions: Iterable[Any] = (),
        features: Iterable[Any] = (),
        tools: Iterable[Any] = (),
        *,
        approval: Callable[..., Any] | None = None,
        model_cache: MutableMapping[str, Any] | None = None,
    ) -> None:
        if model_cache is not None and not isinstance(model_cache, MutableMapping):
            raise ConfigError(
                f"model_cache must be a mutable mapping such as a dict, got {type(model_cache).__name__}"
            )
        self._model_cache = model_cache
        self._specs: dict[str, tuple[PluginSpec, ...]] = {k: () for k in KINDS}
        self._names: dict[str, tuple[str, ...]] = {k: () for k in KINDS}  # asked a dozen times a server request
        self._generation = 0  # counts registrations: a recorded resolution is for the plugins of its generation
        self._replays = Replays()
        self._replaced: set[tuple[str, str]] = set()
        self._broken: dict[str, str] = {}
        for kind, items in (("provider", providers), ("extension", extensions), ("feature", features), ("tool", tools)):
            for item in items:
                self._add(kind, item)
        self.approval = approval
        self._flights: dict[str, Flight] = {}
        self._lock = threading.Lock()

    # -- registration ---------------------------------------------------------

    def _add(self, kind: str, plugin: Any, *, replace: bool = False) -> PluginSpec:
        spec = spec_for(kind, plugin)
        existing = self._specs[kind]
        if any(s.name == spec.name for s in existing):
            if not replace:
                raise ConfigError(f"two {kind} plugins are named {spec.name!r}", plugins=[spec.name])
            existing = tuple(s for s in existing if s.name != spec.name)
        self._specs[kind] = (*existing, spec)
        self._names[kind] = tuple(s.name for s in self._specs[kind])
        self._generation += 1
        return spec

    def register_provider(self, plugin_class: Any, extensions: Iterable[Any] | None = None) -> None:
        """Add a provider (and extensions), as the original platform's API did."""
        self._add("provider", plugin_class)
        for ext in extensions or ():
            self._add("extension", ext)

    def register_extension(self, plugin: Any) -> None:
        self._add("extension", plugin)

    def register_feature(self, plugin: Any) -> None:
        self._add("feature", plugin)

    def register_tool(self, plugin: Any) -> None:
        self._add("tool", plugin)

    @classmethod
    def discover(
        cls,
        providers: Iterable[Any] = (),
        extensions: Iterable[Any] = (),
        features: Iterable[Any] = (),
        tools: Iterable[Any] = (),
        *,
        approval: Callable[..., Any] | None = None,
        disabled: Iterable[str] = (),
        keep_going: bool = False,
    ) -> AgentCore:
        """Load plugins from the ``agent_core.*`` entry-point groups, plus any given.

        Bundled plugins are found this way too, exactly like third-party ones.
        A plugin passed here replaces a discovered one with the same name. An
        installed plugin that cannot be loaded or registered is left out (and
        listed by :meth:`broken`) when its name is in ``disabled`` (the config's
        ``disabled_plugins``) or with ``keep_going``; otherwise it fails here.

        Raises:
            ConfigError: an installed plugin is broken (names it, its package and the way out).
        """
        core = cls(approval=approval)
        core._broken = load_installed(core, frozenset(disabled), keep_going)
        installed = {kind: set(core.plugins(kind)) for kind in ENTRY_POINT_GROUPS}
        for kind, items in (("provider", providers), ("extension", extensions), ("feature", features), ("tool", tools)):
            for item in items:
                spec = core._add(kind, item, replace=True)
                if spec.name in installed[kind]:
                    core._replaced.add((kind, spec.name))
        return core

    def broken(self) -> dict[str, str]:
        """Installed plugins :meth:`discover` left out because they cannot be used: name -> why."""
        return dict(self._broken)

    def replaced(self, kind: str) -> tuple[str, ...]:
        """Installed plugins of ``kind`` that a plugin passed to :meth:`discover` replaced (the caller's wins)."""
        kind = check_kind(kind)
        return tuple(sorted(name for k, name in self._replaced if k == kind))

    def plugins(self, kind: str) -> tuple[str, ...]:
        """Names of the registered plugins of ``kind`` (provider/extension/feature/tool)."""
        names = self._names.get(kind) if kind.__class__ is str else None  # the usual spelling, found at once
        return names if names is not None else self._names[check_kind(kind)]  # "providers", or refused by name

    # -- sessions -------------------------------------------------------------

    def create_session(self, session_id: str | None = None, metadata: Mapping[str, Any] | None = None) -> Session:
        """A new, empty session with a fresh id (or ``session_id``)."""
        return Session(session_id or uuid.uuid4().hex, [], metadata or {})

    def add_message(
        self,
        session: Session,
        message: Message | Mapping[str, Any] | str,
        content: Any = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Session:
        """Return ``session`` with one more message.

        Accepts a ``Message``, a message dict, or the original platform's
        ``add_message(session, role, content, metadata)`` form.
        """
        check_session(session, "add_message")
        if isinstance(message, str):
            message = Message(message, content, metadata)  # type: ignore[arg-type]
        return session.with_message(message)

    # -- resolution -----------------------------------------------------------

    def resolve(self, config: Mapping[str, Any] | None = None, *, session: Session | None = None) -> Resolution:
        """Which plugins run for ``config``, in run order, and why (see :mod:`agent_core.plugins.resolution`).

        With ``session``, its ``metadata["plugins"]`` list restricts the plugins as for a request on
        it (see config ``session_plugins``). The result can serve one request (``resolution=``).

        Raises:
            ConfigError: see :func:`agent_core.plugins.resolution.resolve`; also a
                session ``plugins`` entry that is not a list of ids.
        """
        config = {} if config is None else config
        seen = config if isinstance(config, Mapping) else None
        only = session_plugins(session.metadata, seen) if session is not None else None
        basis = Basis(self, tuple(self._specs.values()), config, only) if isinstance(config, Mapping) else None
        return self._replays.resolve(self._specs, self._generation, config, only=only,
                                     model_cache=self._model_cache, basis=basis)

    def get_models(self, config: Mapping[str, Any] | None = None) -> list[Any]:
        return [thaw(m) for m in self.resolve(config).models]

    def get_tags(self, config: Mapping[str, Any] | None = None) -> list[str]:
        return list(self.resolve(config).tags)

    # -- tools ----------------------------------------------------------------

    def get_tool_descriptors(self, config: Mapping[str, Any] | None = None) -> list[ToolDescriptor]:
        """The tools a request with ``config`` would offer, after features' ``prepare_tools``.

        Each :class:`ToolDescriptor` names its plugin and keeps the schema in
        the tool's own format.

        Raises:
            ConfigError: two offered tools share a name, or a schema is unreadable.
        """
        return list(catalog(self.resolve(config), PluginCore(self), prepare=True)[1])

    def get_tool_schemas(self, config: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """The tool schemas a request with ``config`` sends (the original platform's shape).

        Plain dicts, adapted to a format the provider accepts, exactly as they
        reach the provider in ``config["tools"]``. :meth:`get_tool_descriptors`
        gives the same tools with their plugins.
        """
        return tool_schemas(self.resolve(config), PluginCore(self))

    def execute_tool_calls(
        self, session: Any, tool_calls: Any = None, config: Mapping[str, Any] | None = None
    ) -> Any:
        """Run tool calls outside a request, for applications with their own loop.

        ``execute_tool_calls(session, calls, config)`` returns one ``tool``
        :class:`Message` per call (append them with ``session.with_messages``).
        The original platform's two-argument form ``execute_tool_calls(calls,
        config)`` returns message dicts (``role``, ``content``, ``metadata``)
        for ``add_message(session, m["role"], m["content"], m.get("metadata"))``.
        Failures become error results, as in a request. Lifecycle actions do
        not run here.

        Raises:
            InvalidArgumentError: the arguments fit neither form, or ``tool_calls``
                is not a list of tool-call mappings.
            ConfigError: ``config`` is not a mapping or cannot work.
        """
        if not isinstance(session, Session):
            if config is not None:
                raise InvalidArgumentError(
                    "execute_tool_calls takes (session, tool_calls, config) or (tool_calls, config)",
                    argument="session",
                )
            messages = self._execute_tool_calls(Session("execute_tool_calls"), session, tool_calls)
            return [m.to_dict() for m in messages]
        return self._execute_tool_calls(session, tool_calls or (), config)

    def _execute_tool_calls(
        self, session: Session, tool_calls: Sequence[Mapping[str, Any]], config: Mapping[str, Any] | None
    ) -> list[Message]:
        check_tool_calls(tool_calls)
        check_config(config)
        return run_calls(self.resolve(config, session=session), session, tool_calls, PluginCore(self))

    # -- UI, completions, config ------------------------------------------------

    def get_ui_schema(self, config: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Every enabled plugin's UI elements, normalized into one flat list.

        Missing ``ui_type`` becomes ``"config"``; ``plugin`` is added when
        absent; config elements are de-duplicated on ``key`` (first wins);
        action elements from extensions and features get ``action_owner``.
        """
        return ui_schema(self.resolve(config), PluginCore(self))

    def get_config_schema(self) -> list[dict[str, Any]]:
        """Every registered plugin's config keys, one flat entry per key, with ``plugin``."""
        return config_schema(spec for kind in KINDS for spec in self._specs[kind])

    def get_completions(self, config: Mapping[str, Any] | None, text: str) -> list[dict[str, Any]]:
        """Completions from every enabled feature for ``text``; each names its ``plugin``."""
        return completions(self.resolve(config), text)

    def apply_completion(self, config: Mapping[str, Any] | None, text: str, completion: Mapping[str, Any]) -> str:
        """Ask the feature that offered ``completion`` for replacement text ("" for none)."""
        return apply_completion(self.resolve(config), text, completion)

    # -- actions --------------------------------------------------------------

    def get_actions(self, config: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Action definitions of the enabled extensions and features, each with ``plugin``."""
        return list_actions(self.resolve(config))

    def execute_action(
        self,
        session: Session,
        action_id: str,
        params: Mapping[str, Any] | None = None,
        config: Mapping[str, Any] | None = None,
        *,
        context: Mapping[str, Any] | None = None,
        request_id: str | None = None,
        side_requests: bool = True,
    ) -> ActionResult:
        """Run a session-scoped action of an enabled extension or feature.

        With ``request_id`` the action is in flight under that id while it runs:
        ``cancel_request(request_id)`` cancels the model calls it makes through
        ``context["core"].side_request`` and refuses any it would start after.
        ``side_requests=False`` refuses those calls outright (a server that does
        not let clients spend money through actions).

        ``action_id`` may be qualified as ``"plugin:action"`` when two plugins
        declare the same id. Params are checked against the action's
        ``inputs`` before the plugin runs.

        Returns:
            ActionResult: the new session (metadata merged, native history
            replaced), the native history, and the result's other keys.

        Raises:
            ActionInputError: unknown action (``action_id`` not a string included), or a
                missing/ill-typed/unknown input, or ``params`` not a mapping.
            InvalidArgumentError: ``session`` is not a Session or ``context`` not a mapping.
            ConfigError: ``config`` is not a mapping or cannot work.
            PluginError: the plugin failed.
        """
        check_action(session, action_id, params, context, config)
        resolution = self.resolve(config, session=session)
        if request_id is None:
            return execute_action(resolution, session, action_id, params, context,
                                  PluginCore(self, config=config or {}, side_requests=side_requests))
        with self._in_flight(request_id, config):
            return execute_action(resolution, session, action_id, params, context,
                                  PluginCore(self, request_id, side_requests=side_requests))

    def execute_lifecycle_actions(
        self,
        session: Session,
        trigger: str,
        config: Mapping[str, Any] | None = None,
        *,
        context: Mapping[str, Any] | None = None,
    ) -> Session:
        """Run every enabled extension's and feature's action bound to ``trigger``; return the new session.

        For the lifecycle points an application decides (``session_created``,
        ``session_saved``, ...): actions run in chain order, each seeing the
        session and native history the previous one left; ``session_metadata``
        is merged and ``native_messages`` replaces the stored native history.
        The points a request drives itself (``llm_request``,
        ``response_finalize``, ``tool_pre``, ``tool_post``) run only inside requests.

        Raises:
            ActionInputError: ``trigger`` is not a string or is one the engine runs during requests.
            InvalidArgumentError: ``session`` is not a Session or ``context`` not a mapping.
            ConfigError: ``config`` is not a mapping or cannot work.
            PluginError: an action failed (or ``get_actions`` returned a bad shape); the input
                session is untouched.
        """
        check_lifecycle(session, trigger, context, config)
        return execute_lifecycle(self.resolve(config, session=session), session, trigger, context,
                                 PluginCore(self, config=config or {}))

    # -- requests -------------------------------------------------------------

    def _start(
        self, session: Session, config: Mapping[str, Any] | None, stream_default: bool, request_id: str | None,
        final_sessions: bool = False, resolution: Resolution | None = None,
    ) -> tuple[RequestRun, Flight]:
        check_session(session, "a request")
        check_config(config)
        if request_id is not None and (not isinstance(request_id, str) or not request_id):
            raise InvalidArgumentError(
                f"request_id must be a non-empty string, got {request_id!r}", argument="request_id"
            )
        given = None if resolution is None else check_handed(
            resolution, self, tuple(self._specs.values()), config or {}, session_plugins(session.metadata, config))
        cfg = dict(config or {})
        resolved = (lambda: given) if given is not None else (lambda: self.resolve(cfg, session=session))
        stream = cfg.get("stream", stream_default)
        rid = request_id or uuid.uuid4().hex
        flight = Flight(rid, cfg)
        with self._lock:
            # Ids are how cancel_request finds a request: two at once would
            # make cancelling one of them a coin toss.
            if rid in self._flights:
                raise RequestInFlightError(rid)
            self._flights[rid] = flight
        run = RequestRun(
            resolved, session, cfg, stream=bool(stream), request_id=rid,
            flight=flight, core=PluginCore(self, rid), approval=self.approval, final_sessions=final_sessions,
            on_finish=lambda: self._finish(flight),
        )
        return run, flight

    def _finish(self, flight: Flight) -> None:
        with self._lock:
            if self._flights.get(flight.request_id) is flight:
                del self._flights[flight.request_id]

    def stream_request(
        self, session: Session, config: Mapping[str, Any] | None = None, *, request_id: str | None = None,
        resolution: Resolution | None = None,
    ) -> Iterator[Event]:
        """Run a request, yielding events; the last is ``done`` (streams by default).

        Failures do not raise: they arrive as an ``error`` event followed by
        ``done`` with a ``stopped`` outcome, and the input session is untouched.
        ``resolution`` is one :meth:`resolve` made for this session and config,
        used instead of resolving again (``docs/engine.md``).
        """
        return self._stream(session, config, request_id, final_sessions=False, resolution=resolution)

    def _stream(
        self, session: Session, config: Mapping[str, Any] | None, request_id: str | None, *, final_sessions: bool,
        resolution: Resolution | None = None,
    ) -> Iterator[Event]:
        run, flight = self._start(session, config, True, request_id, final_sessions, resolution)
        gen = drive_sync(run.run())  # the run frees its id when it ends (see _start)
        weakref.finalize(gen, self._finish, flight)  # a stream never iterated still frees its id
        return gen

    def request(
        self, session: Session, config: Mapping[str, Any] | None = None, *, request_id: str | None = None,
        resolution: Resolution | None = None,
    ) -> RequestResult:
        """Run a request to completion (no streaming unless ``config["stream"]``).

        Returns:
            RequestResult with the new session, the messages added, the outcome
            (``finished``, or ``stopped``/``max_turns``), request id and usage.

        Raises:
            PluginError, LLMError subclasses, ConfigError, ActionInputError,
            ProviderRequestCancelled: the request failed; the input session is untouched.
            InvalidArgumentError: ``resolution`` was not made for this core, session and config.
        """
        run, flight = self._start(session, config, False, request_id, resolution=resolution)
        done: DoneEvent | None = None
        try:
            for ev in drive_sync(run.run()):
                if isinstance(ev, DoneEvent):
                    done = ev
        finally:
            self._finish(flight)
        return result_of(run, done)

    def astream_request(
        self, session: Session, config: Mapping[str, Any] | None = None, *, request_id: str | None = None,
        resolution: Resolution | None = None,
    ) -> AsyncIterator[Event]:
        """Async twin of :meth:`stream_request` (same events, same order)."""
        run, flight = self._start(session, config, True, request_id, resolution=resolution)
        agen = drive_async(run.run())  # the run frees its id when it ends (see _start)
        weakref.finalize(agen, self._finish, flight)
        return agen

    async def arequest(
        self, session: Session, config: Mapping[str, Any] | None = None, *, request_id: str | None = None,
        resolution: Resolution | None = None,
    ) -> RequestResult:
        """Async twin of :meth:`request`."""
        run, flight = self._start(session, config, False, request_id, resolution=resolution)
        done: DoneEvent | None = None
        try:
            async for ev in drive_async(run.run()):
                if isinstance(ev, DoneEvent):
                    done = ev
        finally:
            self._finish(flight)
        return result_of(run, done)

    def request_flow(
        self, session: Session, config: Mapping[str, Any] | None = None, *, request_id: str | None = None,
        stream: bool = False,
    ) -> Flow[RequestResult]:
        """:meth:`request` as a generator of events and effects, for a flow that runs it among steps of its own.

        ``result = yield from core.request_flow(...)`` inside a generator driven by
        ``agent_core.plugin_kit.drive_sync`` or ``drive_async`` runs the request in it, so code
        doing I/O around a request (the store's turn: load, request, save) is written once for
        sync and async. The flow yields what :meth:`stream_request` would plus the effects, and
        returns what :meth:`request` returns, or raises what it raises after the ``done`` event.
        ``stream`` is the default of ``config["stream"]``. A bad session, config or request_id
        raises at the call (InvalidArgumentError, RequestInFlightError), before anything runs.
        """
        run, flight = self._start(session, config, stream, request_id)
        flow = keep_done(run.run(), lambda done: result_of(run, done))
        weakref.finalize(flow, self._finish, flight)  # a flow never started still frees its id
        return flow

    def side_request(
        self, request_id: str, session: Session, overrides: Mapping[str, Any] | None = None
    ) -> RequestResult:
        """Run ``session`` with the config of the in-flight request ``request_id``, plus ``overrides``.

        For plugins (``context["core"].side_request``) that ask the model
        something on the side with the request's own provider, endpoint and
        credentials, which they never see. ``overrides`` may change anything
        but ``provider``, ``base_url`` and secrets.

        Raises:
            InvalidArgumentError: no request ``request_id`` is in flight.
            ConfigError: ``overrides`` is not a mapping or sets a key it may not.
        """
        config, rid = self._side(request_id, session, overrides)
        return self.request(session, config, request_id=rid)

    async def aside_request(
        self, request_id: str, session: Session, overrides: Mapping[str, Any] | None = None
    ) -> RequestResult:
        """Async twin of :meth:`side_request`."""
        config, rid = self._side(request_id, session, overrides)
        return await self.arequest(session, config, request_id=rid)

    def _side(self, request_id: str, session: Session, overrides: Any) -> tuple[dict[str, Any], str]:
        check_session(session, "side_request")
        with self._lock:
            flight = self._flights.get(request_id) if isinstance(request_id, str) else None
        if flight is None:
            raise InvalidArgumentError(f"no request {request_id!r} is in flight", argument="request_id")
        if flight.cancelled:  # a model call started after the cancel would be paid for nobody
            raise ProviderRequestCancelled(request_id)
        secret = {e["key"] for e in self.get_config_schema() if e.get("secret")}
        return side_config(flight.config, overrides, secret), f"{request_id}/side-{uuid.uuid4().hex[:8]}"

    def _in_flight(self, request_id: str, config: Mapping[str, Any] | None) -> Any:
        """``request_id`` in flight (cancellable, lending ``config`` to side requests) for a ``with`` block."""
        return in_flight(self._flights, self._lock, request_id, config)

    def cancel_request(self, request_id: str) -> bool:
        """Cancel an in-flight request; True when it was found.

        The provider's ``cancel_request`` is called (closing its HTTP stream);
        a stream stops at the next chunk with outcome ``stopped``/``cancelled``
        and ``request`` raises ``ProviderRequestCancelled``. Its side requests
        (:meth:`side_request`) are cancelled with it.
        """
        with self._lock:
            found = [f for rid, f in self._flights.items()
                     if rid == request_id or rid.startswith(f"{request_id}/side-")]
        for flight in found:
            flight.cancel()
        return any(f.request_id == request_id for f in found)

    def close(self) -> None:
        """Release what the registered plugin classes keep between requests (an MCP connection pool, say).

        Plugin instances live for one request, so a plugin that keeps something for the
        process offers a ``close_shared()`` on its class, called here; it opens anew if used again.
        """
        for spec in {s.cls: s for specs in self._specs.values() for s in specs}.values():
            closer = getattr(spec.cls, "close_shared", None)
            if callable(closer):
                closer()

    async def aclose(self) -> None:
        """:meth:`close` from async code (off the event loop: closing may wait on processes)."""
        await asyncio.to_thread(self.close)
