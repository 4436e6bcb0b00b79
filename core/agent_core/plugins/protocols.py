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

The hooks' parameters are stated here, once, as Python signatures; the contract's
table (:mod:`agent_core.plugins.contract`) adds each hook's stage and default in words,
and :data:`HOOKS` joins the two. The protocols follow the table's groups, so a hook
several kinds share is declared once:
:class:`~agent_core.plugins.base.TagGatedPlugin` (extensions, features, tools),
:class:`ChainPlugin` (extensions and features), :class:`ToolFormatsPlugin`
(providers and extensions). Each kind's protocol adds only its own hooks, and
every row of the table is checked against them when this module is imported.

Hooks receive frozen values (see :mod:`agent_core.values.frozen`) and return new
ones; plain dicts and lists are accepted back and frozen by the engine. A
hook may also declare fewer parameters than listed here (for instance no
``context``); the engine passes only what it accepts.

``isinstance(obj, ProviderPlugin)`` (and the other kinds) is duck-typed on
what makes a kind usable, not on the full hook list: a provider needs a
``name`` and a way to call its API; every other kind needs only a ``name``.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Optional, Protocol, runtime_checkable

from .base import BasePlugin, Dict, Msgs, TagGatedPlugin
from .contract import ASYNC_HOOKS, ROWS, HookSpec, render_signature
from .tool_interop import ToolInteropContribution
from .tool_protocol import ToolPlugin

if TYPE_CHECKING:
    from ..values.messages import Session, ToolDescriptor

__all__ = [
    "BaseFeature",
    "BasePlugin",
    "BaseProvider",
    "BaseProviderExtension",
    "BaseTool",
    "ChainPlugin",
    "FeaturePlugin",
    "HOOKS",
    "ProviderExtensionPlugin",
    "ProviderPlugin",
    "TagGatedPlugin",
    "ToolFormatsPlugin",
    "ToolPlugin",
]


class ToolFormatsPlugin(BasePlugin, Protocol):
    """The tool formats a provider, or an extension beside it, brings (the contract's ``_FORMATS``)."""

    def accepted_tool_schema_formats(self, config: Dict, state: Optional[Dict] = None) -> list[str]:
        """Tool schema formats the provider sends as they are."""
        return []

    def emitted_tool_call_formats(self, config: Dict, state: Optional[Dict] = None) -> list[str]:
        """Tool call formats put in ``metadata["tool_calls"]``."""
        return []

    def get_tool_interop_contribution(self, config: Dict, state: Optional[Dict] = None) -> ToolInteropContribution:
        """Extra schema adapters / call readers this plugin brings."""
        return ToolInteropContribution()


@runtime_checkable
class ProviderPlugin(ToolFormatsPlugin, Protocol):
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
            # Metadata an extension set on a final survives (a native shape with no metadata has none).
            meta = m.get("metadata")
            out.append({"role": m.get("role", "assistant"), "content": m.get("content", ""),
                        "metadata": dict(meta) if isinstance(meta, Mapping) else {}})
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
        """Call the API in streaming mode and yield native chunks.

        A provider that starts over after output (its stream broke and it asks
        again) yields a :class:`~agent_core.values.events.StreamRetry` first:
        the engine then forgets what the chunks before it built.
        """
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

    def to_display_format(self, message: Dict, state: Dict) -> Dict:
        """A display-friendly form of a core message dict."""
        return message


class ChainPlugin(TagGatedPlugin, Protocol):
    """The cold-path hooks extensions and features share (the contract's ``_CHAIN``).

    Each runs as a chain: after the provider's own hook, in ``priority``
    order, every plugin handed what the one before returned.
    """

    priority: int

    def get_models(self, config: Dict, models: Msgs) -> Msgs:
        """Transform the model list (return a new list)."""
        return list(models)

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


@runtime_checkable
class ProviderExtensionPlugin(ChainPlugin, ToolFormatsPlugin, Protocol):
    """Shares the provider's state; sees every chunk and every final.

    Each final message passes through ``process_chunk`` exactly once: at the
    chunk where it appeared, or in the closing call with ``native_chunk=None``
    for finals from ``call_api``/``finalize``. So an extension behaves the
    same whether the request streams or not.
    """

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


@runtime_checkable
class FeaturePlugin(ChainPlugin, Protocol):
    """Cold path only: never sees a chunk. Transforms, tool policy, actions."""

    def prepare_tools(
        self, config: Dict, tools: "list[ToolDescriptor]", context: Optional[Dict] = None
    ) -> "list[ToolDescriptor]":
        """Filter or rewrite the tools offered for this request."""
        return list(tools)

    def get_completions(self, config: Dict, text: str) -> Msgs:
        """Completion suggestions for input ``text`` (application-defined dicts)."""
        return []

    def apply_completion(self, config: Dict, text: str, completion: Dict) -> str:
        """Replacement text for an accepted completion; empty means none."""
        return ""

    def get_template(self, config: Dict) -> str:
        return ""

    def observe_request(self, config: Dict, *, context: Optional[Dict] = None) -> Any:
        """An observer of this request's timeline (``agent_core.RequestObserver``), or None.

        Asked once per request, after the init chain; ``context`` has ``request_id``,
        ``provider``, ``session_id``, ``stream`` and ``started_ns`` (``time.time_ns()``
        when the request was made). See :mod:`agent_core.engine.observe`.
        """
        return None


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


def _hooks_from_signatures() -> dict[str, dict[str, HookSpec]]:
    """The contract (:mod:`agent_core.plugins.contract`) with each hook's parameters read from its protocol.

    Run once, at import: a table row its protocol does not declare, or a hook
    that is async where the contract says plain (or the reverse), fails at once,
    not when some plugin first meets the difference.
    """
    hooks: dict[str, dict[str, HookSpec]] = {}
    for kind, proto in (("provider", ProviderPlugin), ("extension", ProviderExtensionPlugin),
                        ("feature", FeaturePlugin), ("tool", ToolPlugin)):
        hooks[kind] = {}
        for name, stage, default in ROWS[kind]:
            fn = getattr(proto, name, None)
            if not callable(fn):
                raise TypeError(f"{proto.__name__} does not declare the contract's hook {name!r}")
            want = ASYNC_HOOKS.get(name)
            is_async = ("coroutine" if inspect.iscoroutinefunction(fn)
                        else "async generator" if inspect.isasyncgenfunction(fn) else None)
            if is_async != want:
                raise TypeError(f"{proto.__name__}.{name} must be {want or 'a plain function'}")
            hooks[kind][name] = HookSpec(kind, name, stage, render_signature(fn), default)
    return hooks


#: kind -> hook name -> its spec: the contract's stages and defaults, the protocols' parameters
HOOKS = _hooks_from_signatures()
