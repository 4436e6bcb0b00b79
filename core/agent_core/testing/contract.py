"""``check_plugin``: the hook contract, checked in one line of a plugin's test.

The engine refuses a broken plugin at run time, one request at a time; this
check finds the same faults up front, on sample inputs, and names the hook,
the rule and the offending value in a :class:`PluginContractError` (an
``AssertionError``, so pytest shows it as a failed assertion). The rules:

1. **Inputs are never mutated.** Each hook is called once with plain,
   mutable copies of its inputs; if any input differs afterwards, the hook
   changed what the engine gave it (in production it would get a frozen
   value and raise ``TypeError``). The hook is then called again with frozen
   inputs, as the engine does.
2. **Return shapes.** ``process_chunk`` returns a 4-tuple, ``finalize`` a
   3-tuple, ``initialize_request`` a 2-tuple, message transforms a list of mappings, ``init`` a mapping,
   ``get_tags`` a list of strings, a tool's ``get_tool_schemas`` a list of
   mappings.
3. **Native history is append-only in** ``process_chunk``: the list it
   returns holds at least as many messages as it was given.
4. **Determinism**: ``get_tags`` returns the same tags for the same inputs.
5. **Edges**: a single-message list in ``to_native_messages`` /
   ``from_native_messages``, and the closing ``process_chunk`` call with
   ``native_chunk=None``.
6. **No exception** on the sample inputs (the seed's conversation: a user
   turn, an assistant tool call, its tool result and an answer).
7. **Answers that fail closed**: a tool's ``execute_tool`` on the sample
   payload (``samples={"tool_payload": {...}}``) returns a result with
   ``success``, not ``None``; a feature's ``tool_pre`` action returns a
   verdict, not ``None`` (which the engine takes as a refusal).
8. **Across a request** (:mod:`.request_checks`): a provider's answer given as two calls of one
   request makes the same finals; ``get_ui_elements`` returns elements an application can read.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from .. import freeze, thaw
from ..errors import PluginContractError
from ..host_kit import ENGINE_KEYS, final_fault, misread_natives, read_verdict
from .harness import PluginHarness
from .inspection import PROTOCOLS, fit_call, short
from .request_checks import same_finals_twice, ui_elements_read

__all__ = ["SAMPLES", "check_plugin"]

_CALL = {"id": "call_add_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}

#: The sample inputs every plugin must accept (the seed's calculator conversation).
SAMPLES: dict[str, Any] = {
    "messages": [
        {"role": "system", "content": "You are a calculator."},
        {"role": "user", "content": "What is 1 + 2?"},
        {"role": "assistant", "content": "", "metadata": {"tool_calls": [_CALL]}},
        {"role": "tool", "content": "Result: 3", "metadata": {"tool_call_id": "call_add_1", "tool_name": "add"}},
        {"role": "assistant", "content": "1 + 2 = 3"},
    ],
    "finals": [{"role": "assistant", "content": "1 + 2 = 3"}],
    "partials": [{"role": "assistant", "content": "1 + 2"}],
    "chunks": [],  # native chunks are provider-specific: pass samples={"chunks": [...]} to check them
    "models": [{"id": "sample-model"}],
    "tool_result": {"success": True, "result": 3},
}


def check_plugin(plugin: Any, *, samples: Mapping[str, Any] | None = None, config: Mapping[str, Any] | None = None,
                 kind: str | None = None, provider: Any = None) -> None:
    """Check ``plugin`` against the hook contract (rules in the module docstring).

    Args:
        plugin: a plugin class or instance of any of the four kinds.
        samples: replaces entries of :data:`SAMPLES` (``messages``, ``finals``,
            ``partials``, ``chunks``, ``models``, ``tool_result``); for example
            native chunks of your provider's API under ``chunks``. For a provider
            with ``using(...)``, ``streamed`` and ``answer`` are 200 bodies as its API
            sends them, streamed and not (see :mod:`agent_core.testing.provider_check`).
        config: the config the plugin runs with (schema defaults filled in).
        kind: the plugin kind when the harness's guess would be wrong.
        provider: for an extension or feature that reads its provider's
            state, the provider it runs with (see :class:`PluginHarness`);
            the sample chunks then go through the provider first.

    Raises:
        PluginContractError: naming the plugin, the hook, the rule broken and
            the offending value.
    """
    s = {**SAMPLES, **dict(samples or {})}
    _registers(plugin, kind)
    _misspelt(plugin, config, provider)
    try:
        h = PluginHarness(plugin, config, kind=kind, provider=provider)
    except PluginContractError:
        raise
    except Exception as exc:  # noqa: BLE001 - init / schema failing is a finding, not a crash
        name = getattr(plugin, "name", None) or getattr(plugin, "__name__", type(plugin).__name__)
        raise PluginContractError(str(name), "init", f"raised {type(exc).__name__}: {exc}") from exc
    _Checker(h, s).run()
    ui_elements_read(h)
    if h.kind == "provider":
        _secrets_kept(plugin, config)
        if s["chunks"]:
            same_finals_twice(h, lambda native, state: s["chunks"])
    cls = plugin if isinstance(plugin, type) else type(plugin)
    if h.kind == "provider" and callable(getattr(cls, "using", None)):  # its HTTP side, through the seam
        from .provider_check import exercise_provider  # httpx, only for a provider that sends with it

        exercise_provider(cls, h.name, config or {}, s)


def _misspelt(plugin: Any, config: Mapping[str, Any] | None, provider: Any) -> None:
    """A key of ``config`` close to one the plugin declares, but not declared by it, its provider or the engine.

    The engine only warns about such a key, and the plugin runs on its default: a test that meant to set it
    would pass while testing the default.
    """
    import difflib

    declared = {f.key for p in (plugin, provider) if p is not None for f in PluginHarness._fields_of(
        p() if isinstance(p, type) else p)}
    own = sorted(f.key for f in PluginHarness._fields_of(plugin() if isinstance(plugin, type) else plugin))
    for key in config or ():
        if key in declared or key in ENGINE_KEYS or key == "tools":
            continue
        close = difflib.get_close_matches(str(key), own, n=1, cutoff=0.6)
        if close:
            name = str(getattr(plugin, "name", None) or getattr(plugin, "__name__", type(plugin).__name__))
            raise PluginContractError(name, "get_config_schema", (
                f"the config sets {key!r}, which its config_schema does not declare; did you mean {close[0]!r}? "
                f"(a request would only warn, and run on {close[0]!r}'s default)"))


#: a URL, so a secret that must be one (a proxy with its password) takes it as well as a key does
_CANARY = "http://sk-check-plugin-canary-0000@127.0.0.1:9"


def _secrets_kept(plugin: Any, config: Mapping[str, Any] | None) -> None:
    """A provider whose ``init`` keeps a secret's value in the state, which every extension and feature reads."""
    fields = PluginHarness._fields_of(plugin() if isinstance(plugin, type) else plugin)
    secret = [f.key for f in fields if f.secret and "string" in (f.types or ("string",))]
    if not secret:
        return
    h = PluginHarness(plugin, {**dict(config or {}), **{k: _CANARY for k in secret}}, kind="provider")
    if _CANARY in repr(thaw(h.state)):
        raise PluginContractError(h.name, "init", (
            f"keeps the value of its secret {', '.join(map(repr, secret))} in the state it returns, which every "
            "extension and feature of the request reads: keep it on the instance (self._key = config[...] in "
            "init) and add it where the request is sent"))


_PLURAL = {"provider": "providers", "extension": "extensions", "feature": "features", "tool": "tools"}


def _registers(plugin: Any, kind: str | None) -> None:
    """What registering the plugin with the engine says: a near-miss hook name, a hook with a gap in its parameters."""
    import warnings

    from .. import AgentCore, UnknownHookWarning
    from ..errors import ConfigError
    from .inspection import plugin_kind

    name = str(getattr(plugin, "name", None) or getattr(plugin, "__name__", type(plugin).__name__))
    kind = kind or plugin_kind(plugin)
    factory = plugin if isinstance(plugin, type) else (lambda: plugin)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UnknownHookWarning)
        try:
            AgentCore(**{_PLURAL[kind]: [factory]})
        except ConfigError as exc:
            raise PluginContractError(name, "register", str(exc)) from None
    for w in caught:
        if issubclass(w.category, UnknownHookWarning):
            raise PluginContractError(name, w.message.name, str(w.message))  # type: ignore[attr-defined]


class _Checker:
    def __init__(self, h: PluginHarness, samples: Mapping[str, Any]) -> None:
        self.h = h
        self.s = samples

    def fail(self, hook: str, rule: str, value: Any = None) -> PluginContractError:
        return PluginContractError(self.h.name, hook, rule, None if value is None else short(value))

    def invoke(self, hook: str, *args: Any, **kwargs: Any) -> Any:
        """Call ``hook`` with mutable copies (rule 1), then with frozen inputs (rule 6); the frozen call's result."""
        plain = [copy.deepcopy(thaw(a)) for a in args]
        before = copy.deepcopy(plain)
        try:
            fit_call(self.h.hook(hook), plain, kwargs)
        except Exception:  # noqa: BLE001 - the frozen call below reports failures
            pass
        names = _param_names(getattr(PROTOCOLS[self.h.kind], hook, None) or self.h.hook(hook), len(args))
        for i, (was, now) in enumerate(zip(before, plain)):
            if was != now:
                instead = f"{{**{names[i]}, key: value}}" if isinstance(was, dict) else f"[*{names[i]}, message]"
                raise self.fail(hook, f"mutates its input {names[i]!r} (return a new value instead, e.g. {instead})",
                                {"before": was, "after": now})
        try:
            return self.h.call(hook, *args, **kwargs)
        except PluginContractError:
            raise
        except Exception as exc:
            shape = misread_natives(exc, args[2], self.h.provider) if hook == "process_chunk" and len(args) == 5 else None
            raise self.fail(hook, shape or f"raised {type(exc).__name__}: {exc}",
                            {"inputs": [thaw(a) for a in args]}) from exc

    def run(self) -> None:
        kind = self.h.kind
        self.tags()
        if kind == "tool":
            self.tool()
            return
        self.transforms()
        self.state = self.prepare()
        if kind in ("provider", "extension"):
            self.process_chunk()
        self.finalize()
        if kind == "feature":
            self.tool_pre()

    # -- rules ---------------------------------------------------------------------------

    def tags(self) -> None:
        config, models = freeze(self.h.config), freeze(self.s["models"])
        first = self.invoke("get_tags", config, models)
        second = self.invoke("get_tags", config, models)
        if not isinstance(first, (list, tuple)) or not all(isinstance(t, str) for t in first):
            raise self.fail("get_tags", "must return a list of strings", first)
        if list(first) != list(second):
            raise self.fail("get_tags", "is not deterministic: two calls with the same config and models "
                            "returned different tags", {"first": thaw(first), "second": thaw(second)})

    def messages_out(self, hook: str, value: Any, what: str) -> None:
        if not isinstance(value, (list, tuple)):
            raise self.fail(hook, f"must return a list of {what}, got {type(value).__name__}", value)
        for i, item in enumerate(value):
            fault = final_fault(thaw(item), i) if what in ("final_messages", "final messages") else None
            if fault is not None:  # the engine's sentence for the same final
                raise self.fail(hook, fault, item)
            if not isinstance(item, Mapping):
                raise self.fail(hook, f"must return a list of mappings ({what}), got an item of type "
                                f"{type(item).__name__}", item)

    def transforms(self) -> None:
        h, state, ctx = self.h, self.h._state, self.h._context
        msgs = self.s["messages"]
        for batch in (msgs, msgs[-1:]):  # the whole conversation, then a single message (rule 5)
            b = freeze(batch)
            if h.kind == "provider":
                native = self.invoke("to_native_messages", b, state, context=ctx)
            else:
                native = self.invoke("to_native_messages", b, b, state, context=ctx)
            self.messages_out("to_native_messages", native, "native messages")
            # a single message goes back the way it came: a provider's own native shape, not a core one
            finals = freeze(self.s["finals"]) if batch is msgs else (
                freeze(native) if h.kind == "provider" else b)
            if h.kind == "provider":
                back = self.invoke("from_native_messages", finals, state, context=ctx)
            else:
                back = self.invoke("from_native_messages", finals, finals, state, context=ctx)
            self.messages_out("from_native_messages", back, "core messages")

    def prepare(self) -> Any:
        """``initialize_request`` on the sample history: the state the hot and cold hooks start from."""
        native = freeze(self.s["messages"][:2])
        state = self.h._state
        if self.h.provider is not None:
            native, state = self.h.provider._prepare(native, state)
        self.native = native
        out = self._tuple("initialize_request", self.invoke("initialize_request", native, state,
                                                            context=self.h._context), 2, "(native_messages, state)")
        self.messages_out("initialize_request", out[0], "native messages")
        if not isinstance(out[1], Mapping):
            raise self.fail("initialize_request", "must return the state as a mapping", out[1])
        return freeze(out[1])

    def _tuple(self, hook: str, value: Any, size: int, what: str) -> tuple[Any, ...]:
        if not isinstance(value, (tuple, list)) or len(value) != size:
            got = f"a {len(value)}-item {type(value).__name__}" if isinstance(value, (tuple, list)) else type(
                value).__name__
            raise self.fail(hook, f"must return a {size}-tuple {what}, returned {got}", value)
        return tuple(value)

    def process_chunk(self) -> None:
        h, state = self.h, self.state
        native = freeze(self.s["messages"][:2])
        what = "(partial_messages, final_messages, native_messages, state)"
        calls: list[tuple[Any, Callable[[], tuple[Any, ...]]]] = []
        up = h.provider
        if up is not None and h.kind == "extension":
            # Each chunk goes through the provider first, as in a request; the closing call gets its finals.
            # The native history the extension is given grows with the provider's, so check against that.
            for chunk in [*self.s["chunks"], None]:
                if chunk is None:
                    f_in, native, state = up._finalize_raw(native, state)
                    p_in = freeze([])
                else:
                    p_in, f_in, native, state = up._hot(up._tuple(
                        "process_chunk", up.call("process_chunk", chunk, native, state), 4, what))
                out = self._tuple("process_chunk", self.invoke("process_chunk", chunk, p_in, f_in, native, state), 4,
                                  what)
                self.hot_rules(chunk, out, native)
                native, state = freeze(out[2]), freeze(out[3])
            return
        if h.kind == "provider":
            for chunk in self.s["chunks"]:
                calls.append((chunk, lambda c=chunk: self.invoke("process_chunk", freeze(c), native, state)))
        else:
            partials, finals = freeze(self.s["partials"]), freeze(self.s["finals"])
            for chunk in self.s["chunks"]:
                calls.append((chunk, lambda c=chunk: self.invoke(
                    "process_chunk", freeze(c), partials, freeze([]), native, state)))
            # the engine's closing call (rule 5)
            calls.append((None, lambda: self.invoke("process_chunk", None, freeze([]), finals, native, state)))
        for chunk, run in calls:
            self.hot_rules(chunk, self._tuple("process_chunk", run(), 4, what), native)

    def hot_rules(self, chunk: Any, out: tuple[Any, ...], native: Any) -> None:
        for i, label in enumerate(("partial_messages", "final_messages", "native_messages")):
            self.messages_out("process_chunk", out[i], label)
        if not isinstance(out[3], Mapping):
            raise self.fail("process_chunk", "must return the state as a mapping", out[3])
        if len(out[2]) < len(native):
            raise self.fail(
                "process_chunk",
                f"drops native messages: given {len(native)}, returned {len(out[2])} (the native history only "
                f"grows; return [*native_messages, ...])",
                {"chunk": chunk, "returned native_messages": thaw(out[2])},
            )

    def finalize(self) -> None:
        h, state, ctx = self.h, self.state, self.h._context
        native = self.native
        if h.kind == "provider":
            out = self.invoke("finalize", native, state, context=ctx)
        else:
            out = self.invoke("finalize", freeze(self.s["finals"]), native, state, context=ctx)
        out = self._tuple("finalize", out, 3, "(final_messages, native_messages, state)")
        self.messages_out("finalize", out[0], "final messages")
        self.messages_out("finalize", out[1], "native messages")
        if not isinstance(out[2], Mapping):
            raise self.fail("finalize", "must return the state as a mapping", out[2])

    def tool(self) -> None:
        state = self.h._state
        schemas = self.invoke("get_tool_schemas", state)
        self.messages_out("get_tool_schemas", schemas, "tool schemas")
        self.invoke("format_tool_result", freeze(self.s["tool_result"]), state)
        self.tool_result(schemas, state)

    def tool_result(self, schemas: Any, state: Any) -> None:
        """``execute_tool`` on the sample payload must answer (a tool that raises on it is the engine's to report)."""
        if not schemas or not callable(getattr(self.h.plugin, "execute_tool", None)):
            return
        first = schemas[0]
        name = (first.get("function") or {}).get("name") or first.get("name") or first.get("title")
        payload = self.s.get("tool_payload", {})
        try:
            result = self.h.call("execute_tool", name, payload, state)
        except Exception:  # noqa: BLE001 - bad arguments may raise; the engine turns that into an error result
            return
        if result is None:
            raise self.fail("execute_tool", "returned None: the engine reports that to the model as an error; "
                            "return a result such as {'success': True, 'result': ...}")
        if isinstance(result, Mapping) and "success" not in result:
            raise self.fail("execute_tool", "returned a mapping without 'success' (the model would read it as a "
                            "failure); return {'success': True, 'result': ...} or {'success': False, 'error': ...}",
                            result)

    def tool_pre(self) -> None:
        """A ``tool_pre`` action must answer; one that returns None refuses every call (the engine fails closed)."""
        actions = self.h.call("get_actions", self.h.config) if callable(getattr(self.h.plugin, "get_actions", None)) \
            else None
        for action in actions or ():
            if not isinstance(action, Mapping) or action.get("trigger") != "tool_pre":
                continue
            context = {"lifecycle": "tool_pre", "trigger_source": "core", "config": self.h.config,
                       "tool_call": {"id": "call_add_1", "name": "add", "payload": {"a": 1, "b": 2}}}
            try:
                result = self.h.call("execute_action", action.get("id"), {"session_id": "s", "messages": []}, [],
                                     {}, context, self.state)
            except Exception:  # noqa: BLE001 - what a policy makes of these sample inputs is its own business
                continue
            try:  # the engine's own reading, so check_plugin says what a request would
                read_verdict(action.get("id"), result)
            except ValueError as exc:
                raise self.fail("execute_action", str(exc), result) from None


def _param_names(fn: Callable[..., Any], n: int) -> list[str]:
    import inspect

    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "self"]
    except (TypeError, ValueError):
        params = []
    return (params + [f"argument {i + 1}" for i in range(len(params), n)])[:n]
