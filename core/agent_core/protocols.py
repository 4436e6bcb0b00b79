"""Plugin protocols (what the engine may call) and base classes (the defaults).

There are four kinds of plugin:

* a **provider** talks to a model API and converts between core and native
  messages; one provider runs per request;
* a **provider extension** shares the provider's state and sees every
  streamed chunk (the hot path), e.g. to assemble tool-call deltas;
* a **feature** works only on the cold path: message transforms, finalize,
  tool policy, session actions;
* a **tool** offers functions the model can call, with its own state.

Every hook is optional. The protocol bodies below *are* the defaults the
engine applies when a plugin leaves a hook out, so a plugin written as a bare
class with only ``name`` and two hooks is complete. Subclassing a ``Base*``
class gives the same defaults through inheritance, for authors who prefer it.

Hooks receive frozen values (see :mod:`agent_core.frozen`) and return new
ones; plain dicts and lists are accepted back and frozen by the engine. A
hook may also declare fewer parameters than listed here (for instance no
``context``); the engine passes only what it accepts.

``isinstance(obj, ProviderPlugin)`` (and the other kinds) is duck-typed on
what makes a kind usable, not on the full hook list: a provider needs a
``name`` and a way to call its API; every other kind needs only a ``name``.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any, Optional, Protocol, runtime_checkable

from .contract import ASYNC_HOOKS, HOOKS, Param, parse_signature
from .tool_interop import ToolInteropContribution

if TYPE_CHECKING:
    from .values import Session, ToolDescriptor

__all__ = [
    "BaseFeature",
    "BasePlugin",
    "BaseProvider",
    "BaseProviderExtension",
    "BaseTool",
    "FeaturePlugin",
    "ProviderExtensionPlugin",
    "ProviderPlugin",
    "ToolPlugin",
]

Dict = dict[str, Any]
Msgs = list[dict[str, Any]]


class _DuckProtocolMeta(type(Protocol)):  # type: ignore[misc]
    """Protocol metaclass whose isinstance/issubclass look only at ``__duck__``.

    ``__duck__`` is a tuple of requirements; each is an attribute name or a
    tuple of names of which one must exist. Non-protocol subclasses (the
    ``Base*`` classes) keep ordinary nominal checks.
    """

    def _duck_ok(cls, obj: Any) -> bool:
        for need in cls.__duck__:
            names = need if isinstance(need, tuple) else (need,)
            if not any(hasattr(obj, n) for n in names):
                return False
        return True

    def __instancecheck__(cls, obj: Any) -> bool:
        if cls.__dict__.get("_is_protocol"):
            return cls._duck_ok(obj)
        return super().__instancecheck__(obj)

    def __subclasscheck__(cls, sub: Any) -> bool:
        if cls.__dict__.get("_is_protocol"):
            return isinstance(sub, type) and cls._duck_ok(sub)
        return super().__subclasscheck__(sub)


@runtime_checkable
class BasePlugin(Protocol, metaclass=_DuckProtocolMeta):
    """Identity, configuration and UI hooks shared by every plugin kind.

    ``name`` is the plugin id used in ``enabled_plugins`` and friends (the
    class name when absent); ``priority`` orders a chain (lower first,
    default 100); ``default_enabled = False`` makes a plugin opt-in.
    """

    __duck__ = ("name",)

    name: str
    version: str

    def get_config_schema(self) -> Dict:
        """Describe this plugin's config keys.

        Either the flat form ``{"key": {"type": "string", "default": ...}}``
        or a JSON Schema object with ``properties``. The engine fills in
        defaults and type-checks the request config against it. Mark a
        credential ``"secret": true`` (or ``"format": "password"``): only
        this plugin then gets its value; every other reader sees
        ``"<redacted>"``. Keys no installed plugin declares are reported.
        """
        return {}

    def get_ui_elements(self, config: Dict, context: Optional[Dict] = None) -> Msgs:
        """UI element dicts for applications (settings, footers, status bars).

        ``context`` carries ``tags``, ``models``, ``available_tools`` and
        ``tools``. The legacy shapes ``()``, ``(config)``,
        ``(config, tags, models)`` and ``(config, tags, models, context)``
        are also accepted.
        """
        return []


@runtime_checkable
class ProviderPlugin(BasePlugin, Protocol):
    """Talks to one model API; owns the shared state for the request.

    Flow per provider call: ``to_native_messages`` -> ``initialize_request``
    (build ``state["request"]``) -> ``stream_api`` + ``process_chunk`` per
    chunk, or ``call_api`` -> ``finalize`` -> ``from_native_messages``.
    Async twins ``astream_api`` / ``acall_api`` are used by the async API
    when present; otherwise the sync ones run in a worker thread.
    """

    __duck__ = ("name", ("stream_api", "call_api", "astream_api", "acall_api"))

    def init(self, config: Dict) -> Dict:
        """Create the shared state for one request (once per ``request``)."""
        return {"config": config}

    def get_models(self, config: Dict) -> Msgs:
        """Model descriptors this provider offers for ``config`` (may be empty)."""
        return []

    def get_tags(self, config: Dict, models: Msgs) -> list[str]:
        """Capability tags (``streaming``, ``tools``, ``provider:x``); must be pure."""
        return []

    def to_native_messages(self, messages: Msgs, state: Dict, *, context: Optional[Dict] = None) -> Msgs:
        """Convert core message dicts (possibly just the new ones) to native messages."""
        return [
            {"role": m.get("role", "user"), "content": m.get("content", "")}
            for m in messages
            if isinstance(m, dict)
        ]

    def from_native_messages(self, native_messages: Msgs, state: Dict, *, context: Optional[Dict] = None) -> Msgs:
        """Convert this turn's native finals to core message dicts.

        Reasoning and other native extras belong in ``metadata`` (usually put
        there by an extension), never in ``content``.
        """
        out: Msgs = []
        for m in native_messages:
            if not isinstance(m, dict) or not ("role" in m or "content" in m):
                continue
            out.append({"role": m.get("role", "assistant"), "content": m.get("content", ""), "metadata": {}})
        return out

    def initialize_request(
        self,
        native_messages: Msgs,
        state: Dict,
        *,
        request_id: str | None = None,
        context: Optional[Dict] = None,
    ) -> tuple[Msgs, Dict]:
        """Prepare one API call; providers build ``state["request"]`` here."""
        return native_messages, state

    def stream_api(self, native_messages: Msgs, state: Dict, *, request_id: str | None = None) -> Iterator[Dict]:
        """Call the API in streaming mode and yield native chunks."""
        return iter([])

    def call_api(
        self, native_messages: Msgs, state: Dict, *, request_id: str | None = None
    ) -> tuple[Msgs, Msgs, Msgs, Dict]:
        """Call the API without streaming: ``(partials, finals, native_history, state)``."""
        return [], [], native_messages, state

    def process_chunk(self, native_chunk: Dict, native_messages: Msgs, state: Dict) -> tuple[Msgs, Msgs, Msgs, Dict]:
        """Hot path: turn one chunk into ``(partials, new_finals, native_history, state)``.

        Partials carry only the new text. ``native_history`` is the full
        history, returned as given when unchanged (that costs nothing).
        """
        return [], [], native_messages, state

    def finalize(self, native_messages: Msgs, state: Dict, *, context: Optional[Dict] = None) -> tuple[Msgs, Msgs, Dict]:
        """After the stream: ``(remaining_finals, native_history, state)``."""
        return [], native_messages, state

    def cancel_request(self, request_id: str) -> bool:
        """Abort the in-flight call for ``request_id``; True when one was found."""
        return False

    def accepted_tool_schema_formats(self, config: Dict, state: Optional[Dict] = None) -> list[str]:
        """Tool schema formats this provider sends as they are."""
        return []

    def emitted_tool_call_formats(self, config: Dict, state: Optional[Dict] = None) -> list[str]:
        """Tool call formats this provider puts in ``metadata["tool_calls"]``."""
        return []

    def get_tool_interop_contribution(self, config: Dict, state: Optional[Dict] = None) -> ToolInteropContribution:
        """Extra schema adapters / call readers this provider brings."""
        return ToolInteropContribution()

    def to_display_format(self, message: Dict, state: Dict) -> Dict:
        """A display-friendly form of a core message dict."""
        return message


@runtime_checkable
class ProviderExtensionPlugin(BasePlugin, Protocol):
    """Shares the provider's state; sees every chunk and every final.

    Each final message passes through ``process_chunk`` exactly once: at the
    chunk where it appeared, or in the closing call with ``native_chunk=None``
    for finals from ``call_api``/``finalize``. So an extension behaves the
    same whether the request streams or not.
    """

    priority: int

    def required_tags(self) -> list[str]:
        """Tags that must all be present for this extension to run."""
        return []

    def forbidden_tags(self) -> list[str]:
        """Tags any one of which switches this extension off."""
        return []

    def is_enabled(self, config: Dict, tags: list[str], models: Msgs, context: Dict) -> Optional[bool]:
        """True/False to decide outright; None to fall back to the tag rules."""
        return None

    def get_models(self, config: Dict, models: Msgs) -> Msgs:
        """Transform the model list (return a new list)."""
        return list(models)

    def get_tags(self, config: Dict, models: Msgs) -> list[str]:
        """Tags this extension contributes while enabled."""
        return []

    def init(self, config: Dict, state: Dict) -> Dict:
        """Adjust the shared state after the provider's ``init``."""
        return state

    def to_native_messages(
        self, messages: Msgs, native_messages: Msgs, state: Optional[Dict] = None, *, context: Optional[Dict] = None
    ) -> Msgs:
        """Rewrite the native messages the provider made from ``messages``."""
        return list(native_messages)

    def from_native_messages(
        self, native_messages: Msgs, messages: Msgs, state: Optional[Dict] = None, *, context: Optional[Dict] = None
    ) -> Msgs:
        """Rewrite the core messages made from this turn's native finals."""
        return list(messages)

    def initialize_request(
        self, native_messages: Msgs, state: Dict, *, context: Optional[Dict] = None
    ) -> tuple[Msgs, Dict]:
        """Add to the request (e.g. ``state["request"]["payload"]["tools"]``)."""
        return native_messages, state

    def process_chunk(
        self,
        native_chunk: Optional[Dict],
        partial_messages: Msgs,
        final_messages: Msgs,
        native_messages: Msgs,
        state: Dict,
    ) -> tuple[Msgs, Msgs, Msgs, Dict]:
        """Hot path: observe or rewrite one chunk's output (``None`` chunk at the end)."""
        return partial_messages, final_messages, native_messages, state

    def finalize(
        self, final_messages: Msgs, native_messages: Msgs, state: Dict, *, context: Optional[Dict] = None
    ) -> tuple[Msgs, Msgs, Dict]:
        """Cold path, after the provider: all of this turn's native finals."""
        return final_messages, native_messages, state

    def get_actions(self, state: Dict) -> Msgs:
        """Session-scoped action definitions (``id``, ``inputs``, optional ``trigger``)."""
        return []

    def execute_action(
        self, action_id: str, session: "Session", native_messages: Msgs, params: Dict, context: Optional[Dict], state: Dict
    ) -> Dict:
        """Run an action: return ``native_messages`` plus optional ``session_metadata``,
        ``final_messages`` (lifecycle ``response_finalize``) and any other keys (payload)."""
        return {"native_messages": list(native_messages)}

    def accepted_tool_schema_formats(self, config: Dict, state: Optional[Dict] = None) -> list[str]:
        return []

    def emitted_tool_call_formats(self, config: Dict, state: Optional[Dict] = None) -> list[str]:
        return []

    def get_tool_interop_contribution(self, config: Dict, state: Optional[Dict] = None) -> ToolInteropContribution:
        return ToolInteropContribution()


@runtime_checkable
class FeaturePlugin(BasePlugin, Protocol):
    """Cold path only: never sees a chunk. Transforms, tool policy, actions."""

    priority: int

    def required_tags(self) -> list[str]:
        return []

    def forbidden_tags(self) -> list[str]:
        return []

    def is_enabled(self, config: Dict, tags: list[str], models: Msgs, context: Dict) -> Optional[bool]:
        return None

    def get_models(self, config: Dict, models: Msgs) -> Msgs:
        return list(models)

    def get_tags(self, config: Dict, models: Msgs) -> list[str]:
        return []

    def init(self, config: Dict, state: Dict) -> Dict:
        return state

    def prepare_tools(
        self, config: Dict, tools: "list[ToolDescriptor]", context: Optional[Dict] = None
    ) -> "list[ToolDescriptor]":
        """Filter or rewrite the tools offered for this request."""
        return list(tools)

    def to_native_messages(
        self, messages: Msgs, native_messages: Msgs, state: Optional[Dict] = None, *, context: Optional[Dict] = None
    ) -> Msgs:
        return list(native_messages)

    def from_native_messages(
        self, native_messages: Msgs, messages: Msgs, state: Optional[Dict] = None, *, context: Optional[Dict] = None
    ) -> Msgs:
        return list(messages)

    def initialize_request(
        self, native_messages: Msgs, state: Dict, *, context: Optional[Dict] = None
    ) -> tuple[Msgs, Dict]:
        return native_messages, state

    def finalize(
        self, final_messages: Msgs, native_messages: Msgs, state: Dict, *, context: Optional[Dict] = None
    ) -> tuple[Msgs, Msgs, Dict]:
        return final_messages, native_messages, state

    def get_actions(self, state: Dict) -> Msgs:
        return []

    def execute_action(
        self, action_id: str, session: "Session", native_messages: Msgs, params: Dict, context: Optional[Dict], state: Dict
    ) -> Dict:
        return {"native_messages": list(native_messages)}

    def get_completions(self, config: Dict, text: str) -> Msgs:
        """Completion suggestions for input ``text`` (application-defined dicts)."""
        return []

    def apply_completion(self, config: Dict, text: str, completion: Dict) -> str:
        """Replacement text for an accepted completion; empty means none."""
        return ""

    def get_template(self, config: Dict) -> str:
        return ""


@runtime_checkable
class ToolPlugin(BasePlugin, Protocol):
    """Offers functions to the model; keeps its own state, separate from the provider's."""

    __duck__ = ("name", ("get_tool_schemas", "execute_tool", "execute_tool_async", "stream_tool"))

    def required_tags(self) -> list[str]:
        return []

    def forbidden_tags(self) -> list[str]:
        return []

    def is_enabled(self, config: Dict, tags: list[str], models: Msgs, context: Dict) -> Optional[bool]:
        return None

    def get_tags(self, config: Dict, models: Msgs) -> list[str]:
        return []

    def init(self, config: Dict) -> Dict:
        """Create this tool's state; runs before the provider's ``init``."""
        return {"config": config}

    def prepare(self, config: Dict, state: Dict, *, context: Optional[Dict] = None) -> Dict:
        """Slow one-off preparation (discovery, subprocess start); JSON-like result."""
        return {}

    async def prepare_async(self, config: Dict, state: Dict, *, context: Optional[Dict] = None) -> Dict:
        return self.prepare(config, state, context=context)

    def get_tool_schemas(self, state: Dict, *, prepared: Optional[Dict] = None) -> Msgs:
        """Schemas in OpenAI function, Anthropic tool or bare JSON Schema format."""
        return []

    def get_tool_interop_contribution(self, state: Dict) -> ToolInteropContribution:
        return ToolInteropContribution()

    def can_handle_tool_call(
        self,
        tool_name: Optional[str],
        payload: Any,
        state: Dict,
        *,
        payload_kind: Optional[str] = None,
        payload_format: Optional[str] = None,
        payload_metadata: Optional[Dict] = None,
        tool_call: Optional[Dict] = None,
        tool_schema: Optional[Dict] = None,
        prepared: Optional[Dict] = None,
    ) -> Optional[bool]:
        """Claim (True) or refuse (False) a call; None routes by function name."""
        return None

    def format_tool_call_preview(
        self,
        tool_name: Optional[str],
        payload: Any,
        state: Dict,
        *,
        payload_kind: Optional[str] = None,
        payload_format: Optional[str] = None,
        payload_metadata: Optional[Dict] = None,
        tool_call: Optional[Dict] = None,
        prepared: Optional[Dict] = None,
    ) -> str:
        """One line for a UI, shown before the call runs."""
        return ""

    def execute_tool(
        self,
        tool_name: Optional[str],
        payload: Any,
        state: Dict,
        *,
        payload_kind: Optional[str] = None,
        payload_format: Optional[str] = None,
        payload_metadata: Optional[Dict] = None,
        tool_call: Optional[Dict] = None,
        cancellation: Any | None = None,
        context: Optional[Dict] = None,
        prepared: Optional[Dict] = None,
    ) -> Dict:
        """Run the call; return ``{"success": bool, "result": ..., "error": ...}``."""
        return {"success": False, "error": f"Unknown tool: {tool_name}"}

    async def execute_tool_async(
        self,
        tool_name: Optional[str],
        payload: Any,
        state: Dict,
        *,
        payload_kind: Optional[str] = None,
        payload_format: Optional[str] = None,
        payload_metadata: Optional[Dict] = None,
        tool_call: Optional[Dict] = None,
        cancellation: Any | None = None,
        context: Optional[Dict] = None,
        prepared: Optional[Dict] = None,
    ) -> Dict:
        return self.execute_tool(
            tool_name, payload, state, payload_kind=payload_kind, payload_format=payload_format,
            payload_metadata=payload_metadata, tool_call=tool_call, cancellation=cancellation,
            context=context, prepared=prepared,
        )

    def stream_tool(
        self,
        tool_name: Optional[str],
        payload: Any,
        state: Dict,
        *,
        payload_kind: Optional[str] = None,
        payload_format: Optional[str] = None,
        payload_metadata: Optional[Dict] = None,
        tool_call: Optional[Dict] = None,
        cancellation: Any | None = None,
        context: Optional[Dict] = None,
        prepared: Optional[Dict] = None,
    ) -> Iterator[Dict]:
        """Yield ``{"part": ...}`` progress dicts, then the result dict (with ``success``)."""
        return iter(())

    async def stream_tool_async(
        self,
        tool_name: Optional[str],
        payload: Any,
        state: Dict,
        *,
        payload_kind: Optional[str] = None,
        payload_format: Optional[str] = None,
        payload_metadata: Optional[Dict] = None,
        tool_call: Optional[Dict] = None,
        cancellation: Any | None = None,
        context: Optional[Dict] = None,
        prepared: Optional[Dict] = None,
    ) -> AsyncIterator[Dict]:
        for chunk in self.stream_tool(
            tool_name, payload, state, payload_kind=payload_kind, payload_format=payload_format,
            payload_metadata=payload_metadata, tool_call=tool_call, cancellation=cancellation,
            context=context, prepared=prepared,
        ):
            yield chunk

    def format_tool_result(self, result: Dict, state: Dict) -> Any:
        """Text for the model, or a ``provider_native_tool_result`` envelope."""
        if result.get("success"):
            return f"Result: {result.get('result')}"
        return f"Error: {result.get('error')}"

    def to_display_format(self, text: str, result: Dict, state: Dict) -> Dict:
        """Display payload for UIs; may add a compact ``single_line``."""
        return {"type": "text", "content": text}


class _Identity:
    name = "plugin"
    version = "0.0.0"
    priority = 100
    default_enabled = True


class BaseProvider(_Identity, ProviderPlugin):
    """Subclass to write a provider; override only the hooks you need."""


class BaseProviderExtension(_Identity, ProviderExtensionPlugin):
    """Subclass to write a provider extension; override only the hooks you need."""


class BaseFeature(_Identity, FeaturePlugin):
    """Subclass to write a feature; override only the hooks you need."""


class BaseTool(_Identity, ToolPlugin):
    """Subclass to write a tool plugin; override only the hooks you need."""


def _check_against_contract() -> None:
    """Each protocol declares the contract's hooks with the contract's parameters (:mod:`agent_core.contract`).

    Run once, at import: a protocol that drifts from the table fails at once,
    not when some plugin first meets the difference.
    """
    for kind, proto in (("provider", ProviderPlugin), ("extension", ProviderExtensionPlugin),
                        ("feature", FeaturePlugin), ("tool", ToolPlugin)):
        for name, spec in HOOKS[kind].items():
            fn = getattr(proto, name, None)
            if not callable(fn):
                raise TypeError(f"{proto.__name__} does not declare the contract's hook {name!r}")
            params = list(inspect.signature(fn).parameters.values())[1:]
            got = tuple(Param(p.name, p.default is not p.empty, p.kind is p.KEYWORD_ONLY) for p in params)
            if got != parse_signature(spec.signature):
                raise TypeError(f"{proto.__name__}.{name} takes ({', '.join(map(str, params))}), "
                                f"the contract says ({spec.signature})")
            want = ASYNC_HOOKS.get(name)
            is_async = ("coroutine" if inspect.iscoroutinefunction(fn)
                        else "async generator" if inspect.isasyncgenfunction(fn) else None)
            if is_async != want:
                raise TypeError(f"{proto.__name__}.{name} must be {want or 'a plain function'}")


_check_against_contract()
