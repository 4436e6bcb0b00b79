"""Tools for one request: catalog, schema adaptation, routing and execution.

The catalog is built before the provider initializes (the effective schemas
go into ``config["tools"]``). Executing a call is a small generator that
yields effects (so sync and async share it) and events (previews, progress,
results). Whatever goes wrong inside a tool, an unknown tool name, arguments
that do not parse, a denied call, becomes an error *result* the model sees;
it never stops the request.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from .effects import END, CancellationToken, Call, EffectCancelled, EffectTimeout, Guard, NextItem, OpenIter
from .errors import AsyncOnlyHookError, ConfigError, InvalidValueError, PluginError
from .events import ToolCallEvent, ToolProgressEvent, ToolResultEvent
from .frozen import FrozenDict, FrozenList, freeze, freeze_json, thaw
from .hooks import LivePlugin, call_hook
from .tool_interop import (
    OPENAI_CHAT,
    InspectedToolCall,
    ToolInteropContribution,
    ToolInteropRegistry,
    detect_schema_format,
    schema_tool_name,
)
from .values import Message, ToolDescriptor

__all__ = ["LiveTool", "ToolCatalog", "build_catalog", "inspect_call", "run_tool_call", "truncation"]

ENVELOPE = "provider_native_tool_result"


@dataclass
class LiveTool:
    plugin: LivePlugin
    state: Any
    prepared: Any = None
    schemas: dict[str, ToolDescriptor] = field(default_factory=dict)  # tool_name -> descriptor


@dataclass
class ToolCatalog:
    tools: list[LiveTool]
    available: FrozenList  # every descriptor, before prepare_tools
    effective: FrozenList  # after prepare_tools
    adapted: FrozenList  # schemas in a provider-accepted format (config["tools"])
    accepted: tuple[str, ...]


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
    formats: list[str] = []
    for p in (provider, *extensions):
        for f in call_hook(p, "accepted_tool_schema_formats", config, None) or ():
            if f not in formats:
                formats.append(f)
    return tuple(formats) or (OPENAI_CHAT,)


def emitted_formats(provider: LivePlugin, extensions: list[LivePlugin], config: Any) -> list[str]:
    """Tool call formats the provider and its extensions put in ``metadata["tool_calls"]`` (no repeats)."""
    formats: list[str] = []
    for p in (provider, *extensions):
        for f in call_hook(p, "emitted_tool_call_formats", config, None) or ():
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
        if p.defines("get_tool_interop_contribution"):
            contributions.append(call_hook(p, "get_tool_interop_contribution", config, None))
    for t in tools:
        if t.plugin.defines("get_tool_interop_contribution"):
            contributions.append(call_hook(t.plugin, "get_tool_interop_contribution", t.state))
    for c in contributions:
        if not isinstance(c, ToolInteropContribution):
            raise ConfigError(f"get_tool_interop_contribution must return a ToolInteropContribution, got {c!r}")
    return ToolInteropRegistry(tuple(contributions))


def build_catalog(
    tool_plugins: list[LivePlugin], config: Any, context: Mapping[str, Any], *, prepare: bool = True,
) -> Generator[Any, Any, list[LiveTool]]:
    """Init every enabled tool (and ``prepare`` it), then collect its schemas."""
    live: list[LiveTool] = []
    for plugin in tool_plugins:
        state = freeze(call_hook(plugin, "init", config.merged(plugin.secrets) if plugin.secrets else config))
        prepared = None
        if prepare and (plugin.defines("prepare") or plugin.defines("prepare_async")):
            sync = plugin.hook("prepare") if plugin.defines("prepare") else None
            asyn = plugin.hook("prepare_async") if plugin.defines("prepare_async") else None
            try:
                prepared = yield Call(
                    (lambda s=sync, st=state: s(config, st, context=context)) if sync else None,
                    (lambda a=asyn, st=state: a(config, st, context=context)) if asyn else None,
                    label=f"tool {plugin.name!r} prepare",
                )
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


def prepare_tools(features: list[LivePlugin], config: Any, tools: FrozenList, context: Mapping[str, Any]) -> FrozenList:
    for f in features:
        if not f.defines("prepare_tools"):
            continue
        got = call_hook(f, "prepare_tools", config, tools, context)
        if not isinstance(got, (list, tuple)) or not all(isinstance(t, ToolDescriptor) for t in got):
            raise PluginError(
                f.name, "prepare_tools", TypeError("bad return value"),
                detail="must return a list of ToolDescriptor",
            )
        tools = FrozenList._trusted(got)
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


def _payload_kwargs(call: InspectedToolCall) -> dict[str, Any]:
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
        if not t.plugin.defines("can_handle_tool_call"):
            continue
        d = t.schemas.get(call.tool_name or "")
        verdict = call_hook(
            t.plugin, "can_handle_tool_call", call.tool_name, call.payload, t.state,
            **_payload_kwargs(call), tool_schema=d.schema if d else None, prepared=t.prepared,
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


def preview_event(request_id: str, routed: Routed, iteration: int) -> ToolCallEvent:
    call, tool = routed.call, routed.tool
    preview = ""
    if tool is not None and call.error is None and tool.plugin.defines("format_tool_call_preview"):
        try:
            preview = str(
                call_hook(
                    tool.plugin, "format_tool_call_preview", call.tool_name, call.payload, tool.state,
                    **_payload_kwargs(call), prepared=tool.prepared,
                )
                or ""
            )
        except PluginError:
            preview = ""
    return ToolCallEvent(
        request_id, call.call_id, call.tool_name, tool.plugin.name if tool else None,
        _jsonable(call.payload), preview, iteration,
    )


def _jsonable(value: Any) -> Any:
    try:
        msgspec.json.encode(value)
        return value
    except (TypeError, ValueError, OverflowError):
        return repr(value)


def _error(message: str) -> FrozenDict:
    return FrozenDict({"success": False, "error": message})


def execute(
    routed: Routed, payload: Any, context: Mapping[str, Any], request_id: str, *,
    token: CancellationToken | None = None, timeout: float | None = None,
) -> Generator[Any, Any, FrozenDict]:
    """Run one routed call; yields effects and progress events, returns the result dict.

    The tool gets ``token`` as ``cancellation``. With ``timeout`` (seconds,
    the request's ``tool_timeout_s``) a tool still running after it becomes an
    error result; a cancelled token stops the wait at once
    (:class:`~agent_core.effects.EffectCancelled` propagates).

    Raises:
        PluginError: the tool returned a value that cannot be kept (see
            :func:`~agent_core.frozen.freeze_json`).
    """
    call, tool = routed.call, routed.tool
    if call.error is not None:
        return _error(call.error)
    if tool is None:
        return _error(f"Unknown tool: {call.tool_name}")
    plugin = tool.plugin
    kwargs = {**_payload_kwargs(call), "cancellation": token, "context": context, "prepared": tool.prepared}
    name = call.tool_name
    guard = Guard(token, timeout) if token is not None or timeout is not None else None
    streams = plugin.defines("stream_tool") or plugin.defines("stream_tool_async")
    hook = "stream_tool" if streams else "execute_tool"
    try:
        if streams:
            sync = plugin.hook("stream_tool") if plugin.defines("stream_tool") else None
            asyn = plugin.hook("stream_tool_async") if plugin.defines("stream_tool_async") else None
            label = f"tool {plugin.name!r} stream_tool"
            handle = yield OpenIter(
                (lambda: sync(name, payload, tool.state, **kwargs)) if sync else None,
                (lambda: asyn(name, payload, tool.state, **kwargs)) if asyn else None,
                label=label,
            )
            parts = []
            result: Any = None
            while True:
                item = yield NextItem(handle, guard, label)
                if item is END:
                    break
                if isinstance(item, Mapping) and "success" in item:
                    result = item
                    break
                part = _kept(plugin, hook, name, item.get("part", item) if isinstance(item, Mapping) else item)
                parts.append(part)
                yield ToolProgressEvent(request_id, call.call_id, name, part)
            if result is None:
                result = {"success": True, "result": parts}
        else:
            sync = plugin.hook("execute_tool") if plugin.defines("execute_tool") else None
            asyn = plugin.hook("execute_tool_async") if plugin.defines("execute_tool_async") else None
            if sync is None and asyn is None:
                return _error(f"Unknown tool: {name}")
            result = yield Call(
                (lambda: sync(name, payload, tool.state, **kwargs)) if sync else None,
                (lambda: asyn(name, payload, tool.state, **kwargs)) if asyn else None,
                label=f"tool {plugin.name!r} execute_tool",
                guard=guard,
            )
    except (EffectCancelled, AsyncOnlyHookError, _Unkeepable):
        raise
    except EffectTimeout as exc:
        return _error(
            f"the tool {name!r} did not finish within {exc.limit:g} s (tool_timeout_s) and was abandoned"
        )
    except Exception as exc:  # noqa: BLE001 - a failing tool is an answer for the model
        return _error(f"{type(exc).__name__}: {exc}")
    if not isinstance(result, Mapping):
        result = {"success": True, "result": result}
    return _kept(plugin, hook, name, result)  # type: ignore[no-any-return]


class _Unkeepable(PluginError):
    """A tool returned a value the session cannot keep (told apart from errors the tool raises)."""


def _kept(plugin: LivePlugin, hook: str, name: str | None, value: Any) -> Any:
    """A tool's output as it will be kept in the session: JSON-exact, or a PluginError."""
    try:
        return freeze_json(value, f"result of tool {name!r}")
    except InvalidValueError as exc:
        raise _Unkeepable(plugin.name, hook, exc, detail=f"returned a value that cannot be kept: {exc}") from exc


def _envelope_text(envelope: Mapping[str, Any]) -> str:
    parts = []
    for part in envelope.get("content") or ():
        if isinstance(part, Mapping):
            if isinstance(part.get("text"), str):
                parts.append(part["text"])
            else:
                parts.append(f"[{part.get('type', 'part')}]")
        else:
            parts.append(str(part))
    return "\n".join(parts)


def tool_message(
    routed: Routed, result: FrozenDict, accepted: tuple[str, ...]
) -> tuple[Message, Any]:
    """Format a result as the ``tool`` message the model will read, plus a display payload."""
    call, tool = routed.call, routed.tool
    formatted: Any
    display = None
    if tool is not None and tool.plugin.defines("format_tool_result"):
        try:
            formatted = call_hook(tool.plugin, "format_tool_result", result, tool.state)
        except PluginError as exc:
            formatted = f"Error: format_tool_result failed: {exc.original}"
    else:
        formatted = (
            f"Result: {thaw(result.get('result'))}" if result.get("success") else f"Error: {result.get('error')}"
        )
    if isinstance(formatted, Mapping) and formatted.get("type") == ENVELOPE:
        content: Any = formatted if formatted.get("format") in accepted else _envelope_text(formatted)
    elif isinstance(formatted, str):
        content = formatted
    else:
        try:
            content = json.dumps(thaw(formatted))
        except (TypeError, ValueError):
            content = str(formatted)
    if tool is not None and tool.plugin.defines("to_display_format"):
        try:
            display = _jsonable(thaw(call_hook(
                tool.plugin, "to_display_format", content if isinstance(content, str) else _envelope_text(content),
                result, tool.state,
            )))
        except PluginError:
            display = None
    metadata = {"tool_call_id": call.call_id, "tool_name": call.tool_name}
    tool_result = result if _jsonable(result) is result else FrozenDict({"success": bool(result.get("success"))})
    return Message("tool", content, metadata, None, tool_result), display


def run_tool_call(
    routed: Routed, payload: Any, context: Mapping[str, Any], request_id: str, accepted: tuple[str, ...], *,
    token: CancellationToken | None = None, timeout: float | None = None,
) -> Generator[Any, Any, Message]:
    """Execute, format and announce one call; returns the ``tool`` message."""
    result = yield from execute(routed, payload, context, request_id, token=token, timeout=timeout)
    try:
        message, display = tool_message(routed, result, accepted)
    except InvalidValueError as exc:
        owner = routed.tool.plugin.name if routed.tool else "engine"
        raise PluginError(
            owner, "format_tool_result", exc, detail=f"formatted a result that cannot be kept: {exc}"
        ) from exc
    yield ToolResultEvent(
        request_id, routed.call.call_id, routed.call.tool_name, bool(result.get("success")), message, display
    )
    return message


def is_async_callable(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))
