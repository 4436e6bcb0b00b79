"""The tool plugin protocol: functions the model can call, with a state of their own.

Part of the plugin protocols (:mod:`agent_core.plugins.protocols` re-exports it); the
bodies are the defaults the engine applies to a hook a tool leaves out.

Every hook that is handed one tool call takes the same description of it. The
parameter list is spelled out once, on :meth:`ToolPlugin.execute_tool`; the hooks
that run a call (``stream_tool`` and the async twins) declare that they take the
same, and the two that only look at a call (``can_handle_tool_call``,
``format_tool_call_preview``) the same without what running needs (the
cancellation and the request's context), routing also with the tool's schema
(:func:`_takes_the_call_of`). ``inspect.signature`` and the engine's binder read
the full list from each of them.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, Optional, Protocol, TypeVar, runtime_checkable

from .base import Dict, Msgs, TagGatedPlugin
from .tool_interop import ToolInteropContribution

__all__ = ["ToolPlugin"]

_Hook = TypeVar("_Hook", bound=Callable[..., Any])


#: what running a call needs beyond its description
_RUNNING = ("cancellation", "context")


def _takes_the_call_of(
    hook: Callable[..., Any], *, leaving_out: tuple[str, ...] = (), adding: tuple[str, ...] = ()
) -> Callable[[_Hook], _Hook]:
    """Declare that the decorated hook takes ``hook``'s parameters (its body takes them as ``**call``).

    ``leaving_out`` names keywords of ``hook`` it does not take; ``adding``
    names keywords it takes besides (each an optional dict, ``None`` unless given).
    Only the parameters are copied into ``__signature__``; the return
    annotation and whether the hook is async stay the decorated function's own.
    """
    parameters = [p for p in inspect.signature(hook).parameters.values() if p.name not in leaving_out]
    parameters += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation="Optional[Dict]")
                   for name in adding]

    def declare(twin: _Hook) -> _Hook:
        twin.__signature__ = inspect.signature(twin).replace(parameters=parameters)  # type: ignore[attr-defined]
        return twin

    return declare


@runtime_checkable
class ToolPlugin(TagGatedPlugin, Protocol):
    """Offers functions to the model; keeps its own state, separate from the provider's."""

    __duck__ = ("name", ("get_tool_schemas", "execute_tool", "execute_tool_async", "stream_tool"))

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

    @_takes_the_call_of(execute_tool, leaving_out=_RUNNING, adding=("tool_schema",))
    def can_handle_tool_call(self, tool_name: Optional[str], payload: Any, state: Dict, **call: Any) -> Optional[bool]:
        """Claim (True) or refuse (False) a call; None routes by function name."""
        return None

    @_takes_the_call_of(execute_tool, leaving_out=_RUNNING)
    def format_tool_call_preview(self, tool_name: Optional[str], payload: Any, state: Dict, **call: Any) -> str:
        """One line for a UI, shown before the call runs."""
        return ""

    @_takes_the_call_of(execute_tool)
    async def execute_tool_async(self, tool_name: Optional[str], payload: Any, state: Dict, **call: Any) -> Dict:
        """The async twin of :meth:`execute_tool`, which it runs by default (with the keywords it was given)."""
        return self.execute_tool(tool_name, payload, state, **call)

    @_takes_the_call_of(execute_tool)
    def stream_tool(self, tool_name: Optional[str], payload: Any, state: Dict, **call: Any) -> Iterator[Dict]:
        """Yield ``{"part": ...}`` progress dicts, then the result dict (with ``success``)."""
        return iter(())

    @_takes_the_call_of(execute_tool)
    async def stream_tool_async(
        self, tool_name: Optional[str], payload: Any, state: Dict, **call: Any
    ) -> AsyncIterator[Dict]:
        """The async twin of :meth:`stream_tool`, which it runs by default (with the keywords it was given)."""
        for chunk in self.stream_tool(tool_name, payload, state, **call):
            yield chunk

    def format_tool_result(self, result: Dict, state: Dict) -> Any:
        """Text for the model, or a ``provider_native_tool_result`` envelope."""
        if result.get("success"):
            return f"Result: {result.get('result')}"
        return f"Error: {result.get('error')}"

    def to_display_format(self, text: str, result: Dict, state: Dict) -> Dict:
        """Display payload for UIs; may add a compact ``single_line``."""
        return {"type": "text", "content": text}
