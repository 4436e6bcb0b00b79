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
* results come back thawed (plain dicts and lists), ready for ``==`` or a
  snapshot.

Only the public API is used, so the harness behaves as a third party's copy
of it would.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

from .. import (
    FrozenDict,
    Message,
    PartialMessage,
    Session,
    freeze,
    thaw,
)
from ..errors import PluginContractError
from ..plugins.config import effective_config, parse_schema
from .inspection import PROTOCOLS, fit_call, plugin_kind, short
from .records import FinalizeResult, HookCall, StreamRecord

__all__ = ["FinalizeResult", "HookCall", "PluginHarness", "StreamRecord", "plugin_kind"]

def _as_message(m: Any) -> Any:
    if isinstance(m, (Message, PartialMessage)):
        return m.to_dict()
    if isinstance(m, str):
        return {"role": "assistant", "content": m}
    return m


def _messages(items: Any) -> list[Any]:
    if items is None:
        return []
    if isinstance(items, (str, Mapping, Message, PartialMessage)):
        items = [items]
    return [_as_message(m) for m in items]


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
            self._config = freeze(effective_config(full, fields))
            start = self.provider._state
        else:
            self._config = freeze(effective_config(dict(config or {}), fields))
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
        msgs = _messages(messages)
        if self.kind == "provider":
            out = self.call("to_native_messages", msgs, self._state, context=self._context)
        else:
            base = msgs if native is None else _messages(native)
            out = self.call("to_native_messages", msgs, base, self._state, context=self._context)
        return thaw(self._list("to_native_messages", out, "the native messages"))  # type: ignore[no-any-return]

    def from_native(self, native: Any, messages: Any = None) -> list[Any]:
        """``from_native_messages`` on this turn's native finals; the core message dicts it returns.

        For an extension or feature, ``messages`` is what the provider made
        of ``native`` (default: the native messages themselves).
        """
        nat = _messages(native)
        if self.kind == "provider":
            out = self.call("from_native_messages", nat, self._state, context=self._context)
        else:
            base = nat if messages is None else _messages(messages)
            out = self.call("from_native_messages", nat, base, self._state, context=self._context)
        return thaw(self._list("from_native_messages", out, "the core messages"))  # type: ignore[no-any-return]

    # -- the hot path ----------------------------------------------------------------------

    def stream(self, chunks: Sequence[Any] = (), *, partials: Sequence[Any] | None = None, finals: Any = None,
               native: Any = None) -> StreamRecord:
        """Feed ``chunks`` through ``process_chunk`` as the engine does, ending with its closing call.

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
        chunks see and is in the record's final ``state``).

        Returns:
            A :class:`StreamRecord`: every call's inputs and outputs, the
            joined text of all partials that came out, every final that came
            out, the last native history and state.
        """
        nat = freeze(_messages(native))
        state = self._state
        if self.provider is not None:  # the provider prepares the call first, then its extensions
            nat, state = self.provider._prepare(nat, state)
        if self.kind in ("provider", "extension"):  # the engine prepares each provider call first
            nat, state = self._prepare(nat, state)
        calls: list[HookCall] = []
        text: list[str] = []
        out_finals: list[Any] = []

        def note(hook: str, chunk: Any, inputs: dict[str, Any], p: Any, f: Any, n: Any, s: Any) -> None:
            for m in p:
                if isinstance(m.get("content"), str):
                    text.append(m["content"])
            out_finals.extend(thaw(f))
            calls.append(HookCall(hook, thaw(chunk), thaw(inputs), {
                "partial_messages": thaw(p), "final_messages": thaw(f), "native_messages": thaw(n), "state": thaw(s),
            }))

        if self.kind == "provider":
            if partials is not None or finals is not None:
                raise ValueError("partials= and finals= are what a provider makes; pass only chunks for a provider")
            for chunk in chunks:
                out = self._tuple("process_chunk", self.call("process_chunk", chunk, nat, state), 4,
                                  "(partial_messages, final_messages, native_messages, state)")
                p, f, n, s = self._hot(out)
                note("process_chunk", chunk, {"native_messages": nat}, p, f, n, s)
                nat, state = n, s
            f, n, s = self._finalize_raw(nat, state)
            note("finalize", None, {"native_messages": nat}, [], f, n, s)
            nat, state = n, s
        elif self.kind == "extension":
            per_chunk = list(partials or ())
            if partials is not None and len(per_chunk) != len(chunks):
                raise ValueError(f"partials= has {len(per_chunk)} items for {len(chunks)} chunks; give one per chunk")
            upstream = self.provider if partials is None and finals is None else None
            steps = [(c, _messages(per_chunk[i]) if per_chunk else [], []) for i, c in enumerate(chunks)]
            steps.append((None, [], _messages(finals)))
            for chunk, p_in, f_in in steps:
                if upstream is not None:  # what the provider made of this chunk, or its finalize at the end
                    if chunk is None:
                        f_in, nat, state = upstream._finalize_raw(nat, state)
                    else:
                        p_in, f_in, nat, state = upstream._hot(upstream._tuple(
                            "process_chunk", upstream.call("process_chunk", chunk, nat, state), 4,
                            "(partial_messages, final_messages, native_messages, state)"))
                p_in, f_in = freeze(p_in), freeze(f_in)
                out = self._tuple("process_chunk", self.call("process_chunk", chunk, p_in, f_in, nat, state), 4,
                                  "(partial_messages, final_messages, native_messages, state)")
                p, f, n, s = self._hot(out)
                note("process_chunk", chunk, {"partial_messages": p_in, "final_messages": f_in,
                                              "native_messages": nat}, p, f, n, s)
                nat, state = n, s
        else:
            raise TypeError(f"{self.kind} plugins have no process_chunk; stream() is for providers and extensions")
        return StreamRecord(tuple(calls), "".join(text), out_finals, thaw(nat), thaw(state))

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
               *, native: Any = None) -> dict[str, Any]:
        """``execute_action(action_id, session, native, params, context, state)``; the result mapping.

        The context carries ``session`` (its dict), ``config`` and
        ``trigger_source="application"`` as the engine's ``execute_action`` gives.
        """
        session = session if session is not None else Session(session_id="harness-session")
        ctx = self._context.merged({"session": session.to_dict(), "trigger_source": "application"})
        out = self.call("execute_action", action_id, session, freeze(_messages(native)), freeze(dict(params or {})),
                        ctx, self._state)
        return thaw(self._map("execute_action", out, "the action result"))  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"<PluginHarness {self.kind} {self.name!r}>"
