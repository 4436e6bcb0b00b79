"""The tool plugin protocol: functions the model can call, with a state of their own.

Part of the plugin protocols (:mod:`agent_core.plugins.protocols` re-exports it); the
bodies are the defaults the engine applies to a hook a tool leaves out.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any, Optional, Protocol, runtime_checkable

from .base import BasePlugin, Dict, Msgs
from .tool_interop import ToolInteropContribution

__all__ = ["ToolPlugin"]


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
