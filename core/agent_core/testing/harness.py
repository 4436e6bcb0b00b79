"""Run one plugin's hooks in isolation: plain values in, plain values out.

A plugin's unit test should not rebuild the engine's states, native histories
and the closing ``process_chunk(None, ...)`` call by hand. :class:`PluginHarness`
does what the engine does for one plugin, and nothing else:

* it fills the config from the plugin's ``get_config_schema()`` defaults and
  type-checks it (the effective config), then calls ``init`` the way the
  engine does for the plugin's kind (a provider: ``init(config)``; an
  extension or feature: ``init(config, {"config": config})``, the state a
  provider's ``init`` starts);
* every hook gets frozen inputs, as in the engine, so a hook that mutates
  its input fails here exactly as it would in production;
* a hook may declare fewer parameters than the protocol (no ``context``, no
  ``state``); the harness passes only what it accepts; a hook the plugin
  leaves out runs the protocol's default body;
* :meth:`~PluginHarness.stream` runs the chunks through the engine's own hot
  loop (:class:`~agent_core.plugin_kit.HotLoop`), so per chunk it checks what a request checks;
* results come back thawed (plain dicts and lists), ready for ``==`` or a
  snapshot.

Only the public API is used, so the harness behaves as a third party's copy
of it would.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from types import SimpleNamespace
from typing import Any

from .. import (
    FrozenDict,
    FrozenList,
    Session,
    freeze,
    thaw,
)
from ..errors import PluginContractError, PluginError
from ..host_kit import HotLoop, NativeView, RequestConfig, effective_config, parse_schema, viewing
from .inputs import as_messages as _messages
from .inputs import session_of as _session_of
from .inspection import PROTOCOLS, fit_call, plugin_kind, short
from .records import FinalizeResult, HookCall, StreamRecord

__all__ = ["FinalizeResult", "HookCall", "PluginHarness", "StreamRecord", "plugin_kind"]

_SHAPE = "(partial_messages, final_messages, native_messages, state)"


class _Run:
    """One :meth:`PluginHarness.stream`: its chain's steps, what they recorded, what a hook raised.

    ``upstream`` is the harness of the provider that makes an extension's
    inputs (None when the test gives them, or for a provider).
    """

    def __init__(self, harness: PluginHarness, upstream: PluginHarness | None) -> None:
        self.harness, self.upstream = harness, upstream
        self.calls: list[HookCall] = []
        self.text: list[str] = []
        self.finals: list[Any] = []
        self.raised: BaseException | None = None  # what a hook raised, handed out as it is

    def chain(self, partials: Sequence[Any] | None, chunks: int) -> tuple[Any, ...]:
        """The hot loop's chain: the plugin (a provider), or what makes an extension's inputs, then the extension."""
        tested = self.step(self.harness, record=True)
        if self.harness.kind == "provider":
            return (tested,)
        if self.upstream is not None:
            return self.step(self.upstream, record=False), tested
        items = iter([_messages(p) for p in partials or [[]] * chunks])
        given = SimpleNamespace(name="the test's partials=")  # blamed for an invalid partial no extension changed
        return (given, lambda chunk, native, state: (freeze(next(items)), [], native, state)), tested

    def step(self, plugin: PluginHarness, *, record: bool) -> tuple[Any, Callable[..., Any]]:
        """``plugin``'s ``process_chunk`` as a chain step: frozen inputs, the harness's shape checks, a record."""
        inputs = ("native_messages",) if plugin.kind == "provider" else (
            "partial_messages", "final_messages", "native_messages")

        def process_chunk(chunk: Any, *args: Any) -> Any:
            try:
                out = plugin.call("process_chunk", chunk, *args)
                p, f, n, s = plugin._hot(plugin._tuple("process_chunk", out, 4, _SHAPE))
            except Exception as exc:
                self.raised = exc
                raise
            if record:
                self.note("process_chunk", chunk, dict(zip(inputs, args)), p, f, n, s)
            return out  # the engine checks and freezes it as it would in a request

        return SimpleNamespace(name=plugin.name), process_chunk  # the hot loop reads only a step's name

    def end(self, hot: HotLoop, finals: Any) -> tuple[Any, Any]:
        """A provider's ``finalize``, or an extension's closing call with the finals; the last native and state."""
        nat, state = hot.native, hot.state
        if self.harness.kind == "provider":
            f, n, s = self.harness._finalize_raw(nat, state)
            self.note("finalize", None, {"native_messages": nat}, (), f, n, s)
            return n, s
        end = freeze(_messages(finals))
        view = None
        if self.upstream is not None:  # what the provider's finalize hands the closing call
            end, nat, state = self.upstream._finalize_raw(nat, state)
            view = NativeView(self.upstream.name, self.upstream.call, state)
        with viewing(view):  # the provider's natives read in the core shape, as in the engine's closing step
            _, _, nat, state, _, _ = self.through(lambda _: hot.close(FrozenList(), end, nat, state), None)
        return nat, state

    def note(self, hook: str, chunk: Any, inputs: dict[str, Any], p: Any, f: Any, n: Any, s: Any) -> None:
        for m in p:
            if isinstance(m.get("content"), str):
                self.text.append(m["content"])
        self.finals.extend(thaw(f))
        self.calls.append(HookCall(hook, thaw(chunk), thaw(inputs), {
            "partial_messages": thaw(p), "final_messages": thaw(f), "native_messages": thaw(n), "state": thaw(s),
        }))

    def through(self, fn: Callable[[Any], Any], chunk: Any) -> Any:
        """``fn(chunk)``; when the engine wrapped what a hook raised, that exception comes out instead."""
        self.raised = None
        try:
            return fn(chunk)
        except PluginError as exc:
            if self.raised is not None and exc.__cause__ is self.raised:
                raise self.raised from None
            raise


class PluginHarness:
    """One plugin, its effective config and its state after ``init``, with each hook one call away.

    Args:
        plugin: the plugin class (instantiated with no arguments, as the
            engine does) or an instance.
        config: the caller's config; the plugin's schema defaults are filled
            in and the types checked.
        kind: ``provider``, ``extension``, ``feature`` or ``tool`` (guessed by
            :func:`plugin_kind` when left out).
        provider: for an extension or feature, the provider it runs with
            (class or instance): its ``init`` makes the shared state, its
            ``initialize_request`` runs before the plugin's, and in
            :meth:`stream` (without ``partials``/``finals``) its
            ``process_chunk`` / ``finalize`` make the plugin's inputs, as in a
            real request. Bundled extensions need theirs.
        context: extra keys for the ``context`` some hooks receive (the
            harness gives ``config``, ``request_id``, ``tags``, ``models``,
            ``tools``, ``stream`` and ``iteration``).

    Raises:
        ConfigError: the config does not fit the plugin's schema.
        PluginContractError: a hook returned a value of the wrong shape.

    Attributes:
        config: the effective config (plain dict).
        state: the state after ``init`` (plain dict); every hook starts from it.
    """

    def __init__(self, plugin: Any, config: Mapping[str, Any] | None = None, *, kind: str | None = None,
                 provider: Any = None, context: Mapping[str, Any] | None = None) -> None:
        self.plugin = plugin() if isinstance(plugin, type) else plugin
        self.kind = kind or plugin_kind(self.plugin)
        if self.kind not in PROTOCOLS:
            raise ValueError(f"kind must be one of {sorted(PROTOCOLS)}, got {self.kind!r}")
        self.name = str(getattr(self.plugin, "name", None) or type(self.plugin).__name__)
        fields = self._fields()
        self.provider: PluginHarness | None = None
        if provider is not None:
            if self.kind not in ("extension", "feature"):
                raise ValueError("provider= is for extensions and features, which share a provider's state")
            prov = provider() if isinstance(provider, type) else provider
            prov_fields = PluginHarness._fields_of(prov)
            full = effective_config(dict(config or {}), (*prov_fields, *fields))
            self.provider = PluginHarness(prov, full, kind="provider", context=context)
            self._config = RequestConfig.from_frozen(freeze(effective_config(full, fields)))
            start = self.provider._state
        else:
            given = dict(config or {})
            if self.kind == "provider":  # a request's config always holds the tool schemas offered
                given.setdefault("tools", [])
            self._config = RequestConfig.from_frozen(freeze(effective_config(given, fields)))
            start = freeze({"config": self._config})
        if self.kind in ("provider", "tool"):
            state = self.call("init", self._config)
        else:
            state = self.call("init", self._config, start)
        self._state = self._map("init", state, "state")
        self._context = freeze({
            "config": self._config, "request_id": "harness-request", "tags": [], "models": [], "tools": [],
            "available_tools": [], "stream": True, "iteration": 0, **dict(context or {}),
        })

    def _fields(self) -> tuple[Any, ...]:
        schema = self.call("get_config_schema")
        return parse_schema(self.name, thaw(schema) if schema is not None else None)

    @staticmethod
    def _fields_of(plugin: Any) -> tuple[Any, ...]:
        schema = fit_call(getattr(plugin, "get_config_schema", lambda: {}), [], {})
        name = str(getattr(plugin, "name", None) or type(plugin).__name__)
        return parse_schema(name, thaw(schema) if schema is not None else None)

    # -- plumbing --------------------------------------------------------------------------

    @property
    def config(self) -> dict[str, Any]:
        return thaw(self._config)  # type: ignore[no-any-return]

    @property
    def state(self) -> dict[str, Any]:
        return thaw(self._state)  # type: ignore[no-any-return]

    def hook(self, name: str) -> Callable[..., Any]:
        """The plugin's hook ``name``, or the protocol's default body when the plugin leaves it out."""
        fn = getattr(self.plugin, name, None)
        if fn is not None and callable(fn):
            return fn  # type: ignore[no-any-return]
        default = getattr(PROTOCOLS[self.kind], name, None)
        if default is None:
            raise AttributeError(f"{self.kind} plugins have no hook {name!r}")
        return partial(default, self.plugin)

    def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Call hook ``name`` with frozen ``args``/``kwargs``, passing only what it accepts; the raw result."""
        return fit_call(self.hook(name), [freeze(a) for a in args], {k: freeze(v) for k, v in kwargs.items()})

    def _tuple(self, hook: str, value: Any, size: int, what: str) -> tuple[Any, ...]:
        if isinstance(value, (tuple, list)) and len(value) == size:
            return tuple(value)
        shown = f"a {len(value)}-item {type(value).__name__}" if isinstance(value, (tuple, list)) else type(
            value).__name__
        raise PluginContractError(self.name, hook, f"must return a {size}-tuple {what}, returned {shown}",
                                  short(value))

    def _list(self, hook: str, value: Any, what: str) -> Any:
        if not isinstance(value, (list, tuple)):
            raise PluginContractError(self.name, hook, f"{what} must be a list, got {type(value).__name__}",
                                      short(value))
        for item in value:
            if not isinstance(item, Mapping):
                raise PluginContractError(self.name, hook, f"every item of {what} must be a mapping (a message), "
                                          f"got {type(item).__name__}", short(item))
        return freeze(list(value))

    def _map(self, hook: str, value: Any, what: str) -> Any:
        if not isinstance(value, Mapping):
            raise PluginContractError(self.name, hook, f"{what} must be a mapping, got {type(value).__name__}",
                                      short(value))
        return freeze(value) if value.__class__ is not FrozenDict else value

    # -- message transforms ----------------------------------------------------------------

    def to_native(self, messages: Any, native: Any = None) -> list[Any]:
        """``to_native_messages`` on core messages (dicts or ``Message``); the native list it returns.

        For an extension or feature, ``native`` is what the provider made of
        ``messages`` (default: the messages themselves, in the core shape).
        """
        return self._convert("to_native_messages", _messages(messages), native, "the native messages")

    def from_native(self, native: Any, messages: Any = None) -> list[Any]:
        """``from_native_messages`` on this turn's native finals; the core message dicts it returns.

        For an extension or feature, ``messages`` is what the provider made
        of ``native`` (default: the native messages themselves).
        """
        return self._convert("from_native_messages", _messages(native), messages, "the core messages")

    def _convert(self, hook: str, given: Any, other: Any, what: str) -> list[Any]:
        """One conversion hook: a provider's takes the messages given; a chain plugin's also the other side."""
        if self.kind == "provider":
            out = self.call(hook, given, self._state, context=self._context)
        else:
            out = self.call(hook, given, given if other is None else _messages(other), self._state, context=self._context)
        return thaw(self._list(hook, out, what))  # type: ignore[no-any-return]

    # -- the hot path ----------------------------------------------------------------------

    def stream(self, chunks: Sequence[Any] = (), *, partials: Sequence[Any] | None = None, finals: Any = None,
               native: Any = None) -> StreamRecord:
        """Feed ``chunks`` through ``process_chunk`` with the engine's own hot loop, ending with its closing call.

        For an extension: one ``process_chunk(chunk, partials, finals, native,
        state)`` per chunk, then ``process_chunk(None, [], finals, native,
        state)``. ``partials`` lines up with ``chunks``: item *i* is what the
        provider produced at chunk *i* (a string is one assistant partial with
        that text, or a message dict, or a list of them). ``finals`` are the
        finals the provider's ``finalize`` handed to the closing call (strings
        become assistant messages). With the harness's ``provider=`` and
        neither ``partials`` nor ``finals``, the provider makes both from the
        chunks, as in a request.

        For a provider: ``process_chunk(chunk, native, state)`` per chunk, then
        ``finalize(native, state)``; ``partials``/``finals`` do not apply.

        Both start, as each provider call in the engine does, with
        ``initialize_request(native, state)`` (its result is not a recorded
        call; its state, e.g. the request body a provider builds, is what the
        chunks see and is in the record's final ``state``). The chunks then go
        through :meth:`HotLoop.feed <agent_core.plugin_kit.HotLoop.feed>` and the
        closing call through :meth:`HotLoop.close <agent_core.plugin_kit.HotLoop.close>`,
        so what the engine checks per chunk (partials it can show, finals and
        state it can freeze) is checked here too. An exception a hook raises
        comes out as it is; one the engine finds in a result is its
        ``PluginError``.

        Returns:
            A :class:`StreamRecord`: every call's inputs and outputs, the
            joined text of all partials that came out, every final that came
            out, the last native history and state.
        """
        self._check_stream_inputs(chunks, partials, finals)
        nat = freeze(_messages(native))
        state = self._state
        if self.provider is not None:  # the provider prepares the call first, then its extensions
            nat, state = self.provider._prepare(nat, state)
        nat, state = self._prepare(nat, state)  # the engine prepares each provider call first
        run = _Run(self, self.provider if partials is None and finals is None else None)
        hot = HotLoop(run.chain(partials, len(chunks)), nat, state, request_id=str(self._context["request_id"]))
        for chunk in chunks:
            run.through(hot.feed, chunk)
        nat, state = run.end(hot, finals)
        return StreamRecord(tuple(run.calls), "".join(run.text), run.finals, thaw(nat), thaw(state))

    def _check_stream_inputs(self, chunks: Sequence[Any], partials: Sequence[Any] | None, finals: Any) -> None:
        if self.kind not in ("provider", "extension"):
            raise TypeError(f"{self.kind} plugins have no process_chunk; stream() is for providers and extensions")
        if self.kind == "provider" and (partials is not None or finals is not None):
            raise ValueError("partials= and finals= are what a provider makes; pass only chunks for a provider")
        if partials is not None and len(partials) != len(chunks):
            raise ValueError(f"partials= has {len(partials)} items for {len(chunks)} chunks; give one per chunk")

    def _prepare(self, nat: Any, state: Any) -> tuple[Any, Any]:
        out = self._tuple("initialize_request", self.call("initialize_request", nat, state, context=self._context),
                          2, "(native_messages, state)")
        return self._list("initialize_request", out[0], "native_messages"), self._map("initialize_request", out[1],
                                                                                       "state")

    def _finalize_raw(self, nat: Any, state: Any) -> tuple[Any, Any, Any]:
        out = self._tuple("finalize", self.call("finalize", nat, state, context=self._context), 3,
                          "(final_messages, native_messages, state)")
        return (self._list("finalize", out[0], "final_messages"), self._list("finalize", out[1], "native_messages"),
                self._map("finalize", out[2], "state"))

    def _hot(self, out: tuple[Any, ...]) -> tuple[Any, Any, Any, Any]:
        return (
            self._list("process_chunk", out[0], "partial_messages"),
            self._list("process_chunk", out[1], "final_messages"),
            self._list("process_chunk", out[2], "native_messages"),
            self._map("process_chunk", out[3], "state"),
        )

    # -- the cold path ---------------------------------------------------------------------

    def finalize(self, finals: Any = None, native: Any = None) -> FinalizeResult:
        """``finalize`` with this turn's finals (extension/feature) or the native history (provider)."""
        nat = freeze(_messages(native))
        if self.kind == "provider":
            raw = self.call("finalize", nat, self._state, context=self._context)
        else:
            raw = self.call("finalize", freeze(_messages(finals)), nat, self._state, context=self._context)
        f, n, s = self._tuple("finalize", raw, 3, "(final_messages, native_messages, state)")
        return FinalizeResult(
            thaw(self._list("finalize", f, "final_messages")),
            thaw(self._list("finalize", n, "native_messages")),
            thaw(self._map("finalize", s, "state")),
        )

    def action(self, action_id: str, params: Mapping[str, Any] | None = None, session: Session | None = None,
               *, native: Any = None, context: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """``execute_action(action_id, session, native, params, context, state)``; the result mapping.

        The context carries ``session`` (its dict), ``config`` and
        ``trigger_source="application"`` as the engine's ``execute_action`` gives;
        ``context`` adds to it what a lifecycle trigger would, such as
        ``{"lifecycle": "tool_pre", "tool_call": {"id": ..., "name": ..., "payload": ...}}`` for a
        policy (then check the answer with :func:`agent_core.plugin_kit.read_verdict`). ``session`` is a
        :class:`Session` or its dict form (``Session.to_dict()``); without one, an empty session.
        """
        session = _session_of(session)
        ctx = self._context.merged({"session": session.to_dict(), "trigger_source": "application",
                                    **dict(context or {})})
        out = self.call("execute_action", action_id, session, freeze(_messages(native)), freeze(dict(params or {})),
                        ctx, self._state)
        return thaw(self._map("execute_action", out, "the action result"))  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"<PluginHarness {self.kind} {self.name!r}>"

