"""The tools of one request, set up once: :class:`ToolKit` and :meth:`ToolKit.for_request`.

Setting up a request's tools is five steps, always in this order, because
each needs the one before:

1. catalog: every enabled tool's ``init`` (and ``prepare``), then its
   ``get_tool_schemas`` (:func:`~agent_core.tools.toolkit.build_catalog`);
   a tool whose plugin gives way on a name clash is left out, with a note
   (:func:`~agent_core.tools.toolkit.give_way`);
2. prepare: the features' ``prepare_tools`` choose what is offered;
3. interop: the provider's, its extensions' and the tools' interop
   contributions make one registry;
4. formats: which schema formats the provider accepts;
5. adapt: the offered schemas converted to one of those formats, into
   ``config["tools"]``; then which call formats the provider emits (asked
   with that config).

A request (:mod:`agent_core.engine.run`) and the engine's tool calls
outside a request (:mod:`agent_core.tools.api`) both set up their tools
here, so they route, read and format calls the same way.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Generator, Mapping
from typing import Any

from ..plugins.resolution import Resolution
from ..plugins.tool_interop import ToolInteropRegistry
from ..runtime.flight import Flight, tool_timeout_of
from ..values.frozen import FrozenDict, FrozenList, freeze
from .toolkit import (
    LiveTool,
    accepted_formats,
    adapt_all,
    build_catalog,
    emitted_formats,
    give_way,
    interop_registry,
    prepare_tools,
)

__all__ = ["ToolKit", "offered_tools"]

_log = logging.getLogger("agent_core.tools")


def offered_tools(
    res: Resolution, context: Mapping[str, Any], *, prepare: bool = True
) -> Generator[Any, Any, tuple[list[LiveTool], FrozenList, FrozenList, tuple[str, ...]]]:
    """Steps 1 and 2: the enabled tools (initialized, prepared when asked), what they offer, what is offered.

    ``context`` is what ``prepare`` and ``prepare_tools`` are handed (the
    latter with ``available_tools`` and ``tools`` added). Returns the live
    tools, every descriptor they offer, the descriptors the features kept
    (``prepare_tools``), and a note per tool left out for a name clash (each
    also logged at WARNING on ``agent_core.tools``).
    """
    live = res.live
    tools = yield from build_catalog([live[n] for n in res.tools], res.config, context, prepare=prepare)
    notes = give_way(tools)
    for note in notes:
        _log.warning("%s", note)
    available = FrozenList.from_frozen([d for t in tools for d in t.schemas.values()])
    offered = prepare_tools([live[n] for n in res.features], res.config, available,
                            context.merged({"available_tools": available, "tools": available}))
    return tools, available, offered, notes


@dataclasses.dataclass(frozen=True)
class ToolKit:
    """What running tool calls needs, settled once per request.

    Attributes:
        registry: the interop registry that reads calls and adapts schemas.
        tools: the enabled tools, initialized.
        available, offered: every descriptor the tools offer; those the
            features kept (``prepare_tools``), which calls are routed to.
        names: ``(plugin, tool)`` of each offered descriptor.
        accepted, emitted: the schema formats the provider accepts; the call
            formats it and its extensions emit.
        config: the request's config with the adapted schemas in ``"tools"``.
        lifecycle: the triggered actions by lifecycle point (known after the
            init chain: see :meth:`with_lifecycle`).
        timeout: ``tool_timeout_s`` (None: no limit).
        observer: the request's observers, or None.
        notes: one sentence per tool left out for a name clash (:func:`offered_tools`).
        guard: looks for the plugins' secret values in each tool message, or None.
    """

    registry: ToolInteropRegistry
    tools: list[LiveTool]
    available: FrozenList
    offered: FrozenList
    names: frozenset[tuple[str, str]]
    accepted: tuple[str, ...]
    emitted: list[str]
    config: Any
    lifecycle: Mapping[str, Any] = dataclasses.field(default_factory=FrozenDict)
    request_id: str = ""
    flight: Flight | None = None
    stream: bool = False
    core: Any = None  # what contexts carry as ``core``
    approval: Callable[..., Any] | None = None
    timeout: float | None = None
    observer: Any = None  # the request's observers (agent_core.engine.observe), told when each call runs
    notes: tuple[str, ...] = ()
    guard: Any = None  # the request's SecretGuard (agent_core.engine.secret_guard): secrets kept out of results

    @classmethod
    def for_request(
        cls, res: Resolution, core: Any, *, request_id: str | None = None, flight: Flight | None = None,
        stream: bool = False, approval: Callable[..., Any] | None = None,
    ) -> Generator[Any, Any, ToolKit]:
        """Set up the tools of ``res`` in the module's five steps; a generator of effects (``prepare`` may be async).

        ``request_id`` is given to ``prepare`` and ``prepare_tools`` in their
        context when there is a request (None outside one).

        Raises:
            ConfigError: ``tool_timeout_s`` is not a positive number, two
                offered tools share a name, a schema cannot be adapted to a
                format the provider accepts, or a bad interop contribution.
            PluginError: a tool or feature hook failed or returned a bad shape.
        """
        timeout = tool_timeout_of(res.config)
        context: dict[str, Any] = {"core": core, "config": res.config, "provider": str(res.provider),
                                   "tags": list(res.tags), "models": list(res.models)}
        if request_id is not None:
            context["request_id"] = request_id
        tools, available, offered, notes = yield from offered_tools(res, freeze(context))
        provider, exts = res.live[res.provider], [res.live[n] for n in res.extensions]
        registry = interop_registry(provider, exts, tools, res.config)
        accepted = accepted_formats(provider, exts, res.config)
        config = res.config.set("tools", adapt_all(registry, list(offered), accepted))
        return cls(
            registry, tools, available, offered, frozenset((d.plugin_name, d.tool_name) for d in offered), accepted,
            emitted_formats(provider, exts, config), config, request_id=request_id or "", flight=flight,
            stream=stream, core=core, approval=approval, timeout=timeout, notes=notes,
        )

    def with_lifecycle(self, lifecycle: Mapping[str, Any]) -> ToolKit:
        """This kit with the request's lifecycle actions (they are listed once the init chain has run).

        A copy of the fields with one changed, not ``dataclasses.replace``: that runs the
        generated ``__init__`` again, a frozen ``__setattr__`` a field, once every request.
        """
        kit = object.__new__(self.__class__)
        kit.__dict__.update(self.__dict__)
        object.__setattr__(kit, "lifecycle", lifecycle)
        return kit
