"""The engine's tool calls outside a request: the catalog, the schemas a request sends, running calls.

``get_tool_descriptors``, ``get_tool_schemas`` and ``execute_tool_calls``
build the catalog exactly as a request does (:func:`~agent_core.tools.build_catalog`,
features' ``prepare_tools``) and run calls with the request's own
:func:`~agent_core.tools.run_tool_call`, so an application with its own loop
sees the same routing, errors and results.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..plugins.resolution import Resolution
from ..runtime.effects import complete_sync
from ..runtime.flight import tool_timeout_of
from ..values.frozen import FrozenList, freeze, thaw
from ..values.messages import Message, Session
from ..values.views import session_view
from .execute import run_tool_call
from .toolkit import (
    LiveTool,
    accepted_formats,
    adapt_all,
    build_catalog,
    emitted_formats,
    inspect_call,
    interop_registry,
    prepare_tools,
    route,
)

__all__ = ["catalog", "run_calls", "tool_schemas"]


def catalog(res: Resolution, core: Any, *, prepare: bool) -> tuple[list[LiveTool], FrozenList]:
    """The enabled tools (initialized, prepared when asked) and the descriptors offered after ``prepare_tools``."""
    live = res.live
    feats = [live[n] for n in res.features]
    ctx = freeze({"core": core, "config": res.config, "provider": str(res.provider),
                  "tags": list(res.tags), "models": list(res.models)})
    tools = complete_sync(build_catalog([live[n] for n in res.tools], res.config, ctx, prepare=prepare))
    available = FrozenList.from_frozen([d for t in tools for d in t.schemas.values()])
    effective = prepare_tools(feats, res.config, available, ctx.merged({"available_tools": available, "tools": available}))
    return tools, effective


def tool_schemas(res: Resolution, core: Any) -> list[dict[str, Any]]:
    """The schemas a request sends in ``config["tools"]``, as plain dicts."""
    tools, effective = catalog(res, core, prepare=True)
    provider = res.live[res.provider]
    exts = [res.live[n] for n in res.extensions]
    registry = interop_registry(provider, exts, tools, res.config)
    return thaw(adapt_all(registry, list(effective), accepted_formats(provider, exts, res.config)))  # type: ignore[no-any-return]


def run_calls(res: Resolution, session: Session, tool_calls: Sequence[Mapping[str, Any]], core: Any) -> list[Message]:
    """Run ``tool_calls`` as a request's tool turn would, without lifecycle actions; one ``tool`` message each."""
    timeout = tool_timeout_of(res.config)
    tools, effective = catalog(res, core, prepare=True)
    live = res.live
    provider = live[res.provider]
    exts = [live[n] for n in res.extensions]
    registry = interop_registry(provider, exts, tools, res.config)
    emitted = emitted_formats(provider, exts, res.config)
    names = {(d.plugin_name, d.tool_name) for d in effective}
    ctx = freeze({"core": core, "config": res.config, "trigger_source": "core", "session": session_view(session)})
    accepted = accepted_formats(provider, exts, res.config)
    out: list[Message] = []
    for i, call in enumerate(tool_calls):
        routed = route(inspect_call(registry, freeze(call), i, emitted), tools, names)
        out.append(complete_sync(run_tool_call(routed, routed.call.payload, ctx, "", accepted, timeout=timeout)))
    return out
