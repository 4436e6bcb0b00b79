"""The engine's tool calls outside a request: the catalog, the schemas a request sends, running calls.

``get_tool_descriptors``, ``get_tool_schemas`` and ``execute_tool_calls``
set up the tools exactly as a request does (:meth:`~agent_core.tools.kit.ToolKit.for_request`)
and run calls with the request's own
:func:`~agent_core.tools.run_tool_call`, so an application with its own loop
sees the same routing, errors and results.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..plugins.resolution import Resolution
from ..runtime.drivers import complete_sync
from ..values.frozen import FrozenList, freeze, thaw
from ..values.messages import Message, Session
from ..values.views import session_view
from .execute import run_tool_call
from .kit import ToolKit, offered_tools
from .toolkit import LiveTool, inspect_call, route

__all__ = ["catalog", "run_calls", "tool_schemas"]


def catalog(res: Resolution, core: Any, *, prepare: bool) -> tuple[list[LiveTool], FrozenList]:
    """The enabled tools (initialized, prepared when asked) and the descriptors offered after ``prepare_tools``."""
    ctx = freeze({"core": core, "config": res.config, "provider": str(res.provider),
                  "tags": list(res.tags), "models": list(res.models)})
    tools, _, offered, _ = complete_sync(offered_tools(res, ctx, prepare=prepare))
    return tools, offered


def tool_schemas(res: Resolution, core: Any) -> list[dict[str, Any]]:
    """The schemas a request sends in ``config["tools"]``, as plain dicts."""
    kit = complete_sync(ToolKit.for_request(res, core))
    return thaw(kit.config["tools"])  # type: ignore[no-any-return]


def run_calls(res: Resolution, session: Session, tool_calls: Sequence[Mapping[str, Any]], core: Any) -> list[Message]:
    """Run ``tool_calls`` as a request's tool turn would, without lifecycle actions; one ``tool`` message each."""
    kit = complete_sync(ToolKit.for_request(res, core))
    ctx = freeze({"core": core, "config": res.config, "trigger_source": "core", "session": session_view(session)})
    out: list[Message] = []
    for i, call in enumerate(tool_calls):
        routed = route(inspect_call(kit.registry, freeze(call), i, kit.emitted), kit.tools, kit.names)
        out.append(complete_sync(run_tool_call(routed, routed.call.payload, ctx, "", kit.accepted,
                                               timeout=kit.timeout)))
    return out
