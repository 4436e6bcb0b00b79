"""Tools for one request: the catalog, schema adaptation, reading and routing calls.

The catalog is built before the provider initializes (the effective schemas
go into ``config["tools"]``). A model's call is read (:func:`inspect_call`),
checked for a cut-off answer (:func:`truncation`) and routed to a tool
(:func:`route`); running it is :mod:`agent_core.tools.execute`'s part.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from ..errors import ConfigError, InvalidValueError, PluginError
from ..plugins.hooks import LivePlugin, call_hook
from ..plugins.tool_interop import (
    OPENAI_CHAT,
    InspectedToolCall,
    ToolInteropContribution,
    ToolInteropRegistry,
    detect_schema_format,
    schema_tool_name,
)
from ..runtime.effects import Call
from ..values.frozen import FrozenList, freeze
from ..values.messages import ToolDescriptor

__all__ = [
    "ENVELOPE", "LiveTool", "Routed", "build_catalog", "give_way", "inspect_call", "payload_kwargs", "route",
    "truncation", "twin_calls",
]

ENVELOPE = "provider_native_tool_result"


@dataclass
class LiveTool:
    plugin: LivePlugin
    state: Any
    prepared: Any = None
    schemas: dict[str, ToolDescriptor] = field(default_factory=dict)  # tool_name -> descriptor


def describe(plugin: LivePlugin, schemas: Any) -> list[ToolDescriptor]:
    """Turn a tool's ``get_tool_schemas`` result into descriptors."""
    if not isinstance(schemas, (list, tuple)):
        raise PluginError(
            plugin.name, "get_tool_schemas", TypeError("bad return value"),
            detail=f"must return a list of schemas, got {type(schemas).__name__}",
        )
    out = []
    for i, schema in enumerate(schemas):
        fmt = detect_schema_format(schema) if isinstance(schema, Mapping) else None
        name = schema_tool_name(schema, fmt) if fmt else None
        if fmt is None or not name:
            raise ConfigError(
                f"tool plugin {plugin.name!r}: schema #{i} is not an OpenAI function, an Anthropic tool, "
                f"or a JSON Schema with a 'title' naming the tool: {schema!r}",
                plugins=[plugin.name],
            )
        out.append(ToolDescriptor(plugin.name, name, schema, {"format": fmt}))
    return out


def accepted_formats(provider: LivePlugin, extensions: list[LivePlugin], config: Any) -> tuple[str, ...]:
    """Tool schema formats the provider and its extensions accept (no repeats); OpenAI's when none says."""
    return tuple(_formats("accepted_tool_schema_formats", provider, extensions, config)) or (OPENAI_CHAT,)


def emitted_formats(provider: LivePlugin, extensions: list[LivePlugin], config: Any) -> list[str]:
    """Tool call formats the provider and its extensions put in ``metadata["tool_calls"]`` (no repeats)."""
    return _formats("emitted_tool_call_formats", provider, extensions, config)


def _formats(hook: str, provider: LivePlugin, extensions: list[LivePlugin], config: Any) -> list[str]:
    formats: list[str] = []
    for p in (provider, *extensions):
        if hook not in p.defined:  # the default offers none
            continue
        for f in call_hook(p, hook, config, None) or ():
            if f not in formats:
                formats.append(f)
    return formats


def adapt_all(
    registry: ToolInteropRegistry, tools: list[ToolDescriptor], accepted: tuple[str, ...]
) -> FrozenList:
    out = []
    for d in tools:
        src = d.metadata.get("format") or detect_schema_format(d.schema)
        got = registry.adapt_schema(d.schema, src, list(accepted))
        if got is None:
            raise ConfigError(
                f"tool {d.tool_name!r} (plugin {d.plugin_name!r}) has a {src} schema, but the provider "
                f"accepts only {', '.join(accepted)} and no adapter converts between them",
                plugins=[d.plugin_name],
            )
        out.append(got[1])
    return freeze(out)


def interop_registry(
    provider: LivePlugin, extensions: list[LivePlugin], tools: list[LiveTool], config: Any
) -> ToolInteropRegistry:
    contributions: list[ToolInteropContribution] = []
    for p in (provider, *extensions):
        if "get_tool_interop_contribution" in p.defined:
            contributions.append(call_hook(p, "get_tool_interop_contribution", config, None))
    for t in tools:
        if "get_tool_interop_contribution" in t.plugin.defined:
            contributions.append(call_hook(t.plugin, "get_tool_interop_contribution", t.state))
    for c in contributions:
        if not isinstance(c, ToolInteropContribution):
            raise ConfigError(f"get_tool_interop_contribution must return a ToolInteropContribution, got {c!r}")
    return ToolInteropRegistry(tuple(contributions))


def twin_calls(
    plugin: LivePlugin, sync: str, asyn: str, *args: Any, **kwargs: Any
) -> tuple[Callable[[], Any] | None, Callable[[], Any] | None]:
    """A plugin's sync hook and its async twin bound to the same arguments, for a ``Call`` or ``OpenIter``.

    Each is None when the plugin does not define it; the driver picks the one
    its mode needs (see :mod:`agent_core.runtime.effects`).
    """
    return (partial(plugin.hook(sync), *args, **kwargs) if sync in plugin.defined else None,
            partial(plugin.hook(asyn), *args, **kwargs) if asyn in plugin.defined else None)


def build_catalog(
    tool_plugins: list[LivePlugin], config: Any, context: Mapping[str, Any], *, prepare: bool = True,
) -> Generator[Any, Any, list[LiveTool]]:
    """Init every enabled tool (and ``prepare`` it), then collect its schemas."""
    live: list[LiveTool] = []
    for plugin in tool_plugins:
        state = freeze(call_hook(plugin, "init", config.merged(plugin.secrets) if plugin.secrets else config))
        prepared = None
        if prepare and ("prepare" in plugin.defined or "prepare_async" in plugin.defined):
            sync, asyn = twin_calls(plugin, "prepare", "prepare_async", config, state, context=context)
            try:
                prepared = yield Call(sync, asyn, label=f"tool {plugin.name!r} prepare")
            except Exception as exc:  # noqa: BLE001
                raise PluginError(plugin.name, "prepare", exc) from exc
            prepared = freeze(prepared)
        schemas = call_hook(plugin, "get_tool_schemas", state, prepared=prepared)
        lt = LiveTool(plugin, state, prepared)
        for d in describe(plugin, schemas):
            if d.tool_name in lt.schemas:
                raise ConfigError(
                    f"tool plugin {plugin.name!r} offers two tools named {d.tool_name!r}", plugins=[plugin.name]
                )
            lt.schemas[d.tool_name] = d
        live.append(lt)
    return live


def _gives_way(tool: LiveTool) -> str | None:
    """The plugin's advice when its tool names give way on a clash (``tool_names_give_way``), else None."""
    advice = getattr(tool.plugin.instance, "tool_names_give_way", None)
    return advice if isinstance(advice, str) and advice else None


def give_way(tools: list[LiveTool]) -> tuple[str, ...]:
    """Leave out each tool whose name another plugin's tool already has, when its plugin gives way.

    A plugin whose tool names come from outside (an MCP server's, say) sets
    ``tool_names_give_way`` to a sentence saying how to fix a clash: on a clash
    its tool is left out of this request, not the request failed. The tool
    kept is the first plugin's that does not give way (else the first
    plugin's). Two that do not give way are left to :func:`check_unique_names`.
    Returns one note per tool left out, naming the tool, both plugins and the fix.
    """
    owners: dict[str, list[LiveTool]] = {}
    for t in tools:
        for name in t.schemas:
            owners.setdefault(name, []).append(t)
    notes: list[str] = []
    for name, claimants in owners.items():
        if len(claimants) < 2:
            continue
        firm = [t for t in claimants if _gives_way(t) is None]
        keeper = firm[0] if firm else claimants[0]
        for t in claimants:
            advice = _gives_way(t)
            if t is keeper or advice is None:
                continue
            del t.schemas[name]
            notes.append(f"tool {name!r} of plugin {t.plugin.name!r} is left out of this request: plugin "
                         f"{keeper.plugin.name!r} offers a tool of the same name, which is kept; {advice}")
    return tuple(notes)


def prepare_tools(features: list[LivePlugin], config: Any, tools: FrozenList, context: Mapping[str, Any]) -> FrozenList:
    for f in features:
        if "prepare_tools" not in f.defined:
            continue
        got = call_hook(f, "prepare_tools", config, tools, context)
        if not isinstance(got, (list, tuple)) or not all(isinstance(t, ToolDescriptor) for t in got):
            raise PluginError(
                f.name, "prepare_tools", TypeError("bad return value"),
                detail="must return a list of ToolDescriptor",
            )
        tools = FrozenList.from_frozen(got)
    check_unique_names(tools)
    return tools


def check_unique_names(tools: FrozenList) -> None:
    """Refuse two offered tools with one name: the model could not say which it means.

    Raises:
        ConfigError: naming the tool and both plugins, with the way out.
    """
    owner: dict[str, str] = {}
    for d in tools:
        first = owner.get(d.tool_name)
        if first is not None:
            raise ConfigError(
                f"tool plugins {first!r} and {d.plugin_name!r} both offer a tool named {d.tool_name!r}; "
                "disable one of them (disabled_plugins) or drop one in a feature's prepare_tools",
                plugins=[first, d.plugin_name],
            )
        owner[d.tool_name] = d.plugin_name


# -- executing one call ----------------------------------------------------------


@dataclass(frozen=True)
class Routed:
    call: InspectedToolCall
    tool: LiveTool | None
    descriptor: ToolDescriptor | None


def payload_kwargs(call: InspectedToolCall) -> dict[str, Any]:
    return {
        "payload_kind": call.payload_kind,
        "payload_format": call.payload_format,
        "payload_metadata": freeze(dict(call.payload_metadata)),
        "tool_call": freeze(dict(call.tool_call)),
    }


def route(call: InspectedToolCall, tools: list[LiveTool], effective_names: set[tuple[str, str]]) -> Routed:
    """Pick the tool for a call: a tool that claims it, else the one whose schema names it.

    The in-process tool API is payload-first: a tool that claims a call whose
    arguments are not JSON receives the raw argument text (``payload_kind``
    ``"text"``) instead of an error. A call whose arguments were cut off
    (``incomplete``) is never handed to a tool.
    """
    refused: set[str] = set()
    for t in tools:
        if "can_handle_tool_call" not in t.plugin.defined:
            continue
        d = t.schemas.get(call.tool_name or "")
        verdict = call_hook(
            t.plugin, "can_handle_tool_call", call.tool_name, call.payload, t.state,
            **payload_kwargs(call), tool_schema=d.schema if d else None, prepared=t.prepared,
        )
        if verdict is True:
            if call.error is not None and call.payload_metadata.get("freeform") and not call.tool_call.get("incomplete"):
                call = dataclasses.replace(call, error=None)
            return Routed(call, t, d)
        if verdict is False:
            refused.add(t.plugin.name)
    for t in tools:
        if t.plugin.name in refused:
            continue
        d = t.schemas.get(call.tool_name or "")
        if d is not None and (t.plugin.name, d.tool_name) in effective_names:
            return Routed(call, t, d)
    return Routed(call, None, None)


def inspect_call(
    registry: ToolInteropRegistry, call: Any, index: int, formats: list[str]
) -> InspectedToolCall:
    """Read one call of a model's answer; a call that must not run comes back with ``error`` set.

    Beyond what the readers refuse (arguments that do not parse, unknown
    shapes), a call marked ``"incomplete": true`` (its arguments were cut off
    mid-stream) never runs, and neither does one nested too deeply to handle.
    """
    try:
        got = registry.read_call(call, index, formats)
    except RecursionError:
        name = _call_name(call)
        return InspectedToolCall(
            _call_id(call, index), name, None, payload_kind="text", payload_format=None,
            tool_call=call if isinstance(call, Mapping) else {},
            error=f"arguments for {name!r} are nested too deeply to read",
        )
    if isinstance(call, Mapping) and call.get("incomplete"):
        return dataclasses.replace(
            got, error=f"the arguments for {got.tool_name!r} were cut off before the model finished them; "
                       "the call did not run",
        )
    if got.error is None:
        try:
            got = dataclasses.replace(got, payload=freeze(got.payload))
        except InvalidValueError:
            return dataclasses.replace(
                got, payload=None, error=f"arguments for {got.tool_name!r} are nested too deeply"
            )
    return got


def _call_id(call: Any, index: int) -> str:
    return str(call.get("id") or f"call_{index}") if isinstance(call, Mapping) else f"call_{index}"


def _call_name(call: Any) -> str | None:
    fn = call.get("function") if isinstance(call, Mapping) else None
    name = fn.get("name") if isinstance(fn, Mapping) else call.get("name") if isinstance(call, Mapping) else None
    return name if isinstance(name, str) else None


def _arguments_parse(call: Any, inspected: InspectedToolCall) -> bool:
    """Whether a call's arguments were received whole: JSON text that parses as an object."""
    fn = call.get("function") if isinstance(call, Mapping) else None
    if not isinstance(fn, Mapping):
        return inspected.error is None
    raw = fn.get("arguments")
    if raw is None or raw == "" or isinstance(raw, Mapping):
        return True
    try:
        return isinstance(json.loads(raw), Mapping)
    except (TypeError, ValueError, RecursionError):
        return False


def truncation(
    metadata: Mapping[str, Any], calls: Sequence[Any], inspected: Sequence[InspectedToolCall]
) -> str | None:
    """Say why a turn must end here because the answer was cut off, or None when it may go on.

    The answer counts as cut when the API said it stopped at the token limit
    (``finish_reason == "length"`` / ``stop_reason == "max_tokens"``) or a call
    is marked ``incomplete``. A cut answer holding a call whose arguments are
    incomplete or do not parse ends the request: running that call would act
    on arguments the model never finished, and sending it back would make the
    API reject the next request.
    """
    marked = [c for c in calls if isinstance(c, Mapping) and c.get("incomplete")]
    limit = next(
        (f"{k} {metadata.get(k)!r}" for k, v in (("finish_reason", "length"), ("stop_reason", "max_tokens"))
         if metadata.get(k) == v),
        None,
    )
    if limit is None and not marked:
        return None
    broken = [
        ic for c, ic in zip(calls, inspected)
        if (isinstance(c, Mapping) and c.get("incomplete")) or not _arguments_parse(c, ic)
    ]
    if not broken:
        return None
    names = ", ".join(f"{ic.tool_name or '?'} ({ic.call_id})" for ic in broken)
    why = f"the answer hit the token limit ({limit})" if limit else "the answer was cut off"
    return (
        f"{why}: the arguments of tool call(s) {names} were cut off, so no tool ran and the model "
        "was not called again"
    )


def is_async_callable(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))
