"""Writing a tool: one frozen value per call instead of ten arguments.

The contract hands a tool its call spread over ten arguments
(``execute_tool(tool_name, payload, state, *, payload_kind=, payload_format=,
payload_metadata=, tool_call=, cancellation=, context=, prepared=)``), and a
tool that writes them out restates the contract in every hook. Subclass
:class:`Tool` instead and write the methods that take one :class:`ToolCall`:

=================  ==============================
method             the hook it becomes
=================  ==============================
``run(call)``      ``execute_tool``
``arun(call)``     ``execute_tool_async``
``stream(call)``   ``stream_tool``
``astream(call)``  ``stream_tool_async``
``preview(call)``  ``format_tool_call_preview``
=================  ==============================

Only the methods a subclass writes become hooks. The engine reads which hooks
a class defines to decide how to run it (a tool with ``stream_tool`` is
streamed; one with only async hooks needs the async API), so a base that
defined all five would misreport every tool. Fixed tags, config schema, UI
elements and tool schemas may be declared as class attributes (``requires``,
``forbids``, ``config_schema``, ``ui_elements``, ``tool_schemas``; see
:mod:`agent_core.plugin_kit.declared`). The other hooks (``format_tool_result``,
a ``get_tool_schemas`` that depends on the state, ...) are written as usual; :class:`Tool` is a :class:`~agent_core.BaseTool`, so the
ones left out keep the protocol's defaults.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

import msgspec

from ..plugins.protocols import BaseTool
from .declared import DECLARED_HOOKS, install_declared

__all__ = ["Tool", "ToolCall", "failure", "success"]


class ToolCall(msgspec.Struct, frozen=True):
    """One call of a tool, as the engine hands it over (the contract's arguments, in its order).

    ``state`` is the tool's own state (from its ``init``); ``payload`` the
    arguments as the model sent them (a mapping for JSON calls, text for a
    freeform one, see ``payload_kind``); ``cancellation`` a token that is
    cancelled when the request is; ``prepared`` what ``prepare`` returned.
    """

    tool_name: str | None
    payload: Any
    state: Any
    payload_kind: str | None = None
    payload_format: str | None = None
    payload_metadata: Any = None
    tool_call: Any = None
    cancellation: Any = None
    context: Any = None
    prepared: Any = None

    @property
    def config(self) -> Mapping[str, Any]:
        """The request's config as the tool's state holds it (``{}`` when the state has none)."""
        config = self.state.get("config") if isinstance(self.state, Mapping) else None
        return config if isinstance(config, Mapping) else {}

    @property
    def arguments(self) -> Mapping[str, Any]:
        """The payload when it is a mapping (a JSON call), else ``{}``: the model's input is never trusted."""
        return self.payload if isinstance(self.payload, Mapping) else {}


def success(result: Any) -> dict[str, Any]:
    """A tool result that the call succeeded with ``result``."""
    return {"success": True, "result": result}


def failure(error: str) -> dict[str, Any]:
    """A tool result that refuses the call: ``error`` is what the model reads."""
    return {"success": False, "error": error}


class _Packed:
    """The contract's tool hooks, each packing its arguments into a :class:`ToolCall` for a :class:`Tool` method.

    ``**call`` takes the contract's keywords as they come, so the engine binds
    each hook directly, with no adapter between it and the method.
    """

    def execute_tool(self: Any, tool_name: str | None, payload: Any, state: Any, **call: Any) -> Any:
        return self.run(ToolCall(tool_name, payload, state, **call))

    async def execute_tool_async(self: Any, tool_name: str | None, payload: Any, state: Any, **call: Any) -> Any:
        return await self.arun(ToolCall(tool_name, payload, state, **call))

    def stream_tool(self: Any, tool_name: str | None, payload: Any, state: Any, **call: Any) -> Iterator[Any]:
        return self.stream(ToolCall(tool_name, payload, state, **call))  # type: ignore[no-any-return]

    async def stream_tool_async(
        self: Any, tool_name: str | None, payload: Any, state: Any, **call: Any
    ) -> AsyncIterator[Any]:
        async for item in self.astream(ToolCall(tool_name, payload, state, **call)):
            yield item

    def format_tool_call_preview(self: Any, tool_name: str | None, payload: Any, state: Any, **call: Any) -> str:
        return self.preview(ToolCall(tool_name, payload, state, **call))  # type: ignore[no-any-return]


#: the method a tool writes -> the contract's hook it becomes
PACKED_HOOKS = {
    "run": "execute_tool",
    "arun": "execute_tool_async",
    "stream": "stream_tool",
    "astream": "stream_tool_async",
    "preview": "format_tool_call_preview",
}


#: the attributes a tool may declare (a tool has no actions, and offers schemas)
_TOOL_DECLARED = {**{attr: hook for attr, hook in DECLARED_HOOKS.items() if attr != "actions"},
                  "tool_schemas": "get_tool_schemas"}


class Tool(BaseTool):
    """A tool plugin whose call hooks take one :class:`ToolCall` (see the module docstring for the methods)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for method, hook in PACKED_HOOKS.items():
            if method in cls.__dict__ and hook not in cls.__dict__:
                setattr(cls, hook, _Packed.__dict__[hook])
        install_declared(cls, _TOOL_DECLARED)
