"""Running one tool call: execute it, format its result as a ``tool`` message, announce it.

Executing a call is a small generator that yields effects (so sync and async
share it) and events (the preview, progress parts, the result). Whatever goes
wrong inside a tool, an unknown tool name, arguments that do not parse, a
denied call, a time limit passed, becomes an error *result* the model reads;
only a value the session cannot keep fails the request (a ``PluginError``).
"""

from __future__ import annotations

import json
from collections.abc import Generator, Mapping
from typing import Any

import msgspec

from ..errors import AsyncOnlyHookError, InvalidValueError, PluginError
from ..plugins.hooks import LivePlugin, call_hook
from ..runtime.effects import END, Call, CancellationToken, EffectCancelled, EffectTimeout, Guard, NextItem, OpenIter
from ..values.events import ToolCallEvent, ToolProgressEvent, ToolResultEvent
from ..values.frozen import FrozenDict, thaw
from ..values.json_values import freeze_json
from ..values.messages import Message
from .toolkit import ENVELOPE, Routed, payload_kwargs

__all__ = ["execute", "preview_event", "run_tool_call", "tool_message"]


def preview_event(request_id: str, routed: Routed, iteration: int) -> ToolCallEvent:
    call, tool = routed.call, routed.tool
    preview = ""
    if tool is not None and call.error is None and tool.plugin.defines("format_tool_call_preview"):
        try:
            preview = str(
                call_hook(
                    tool.plugin, "format_tool_call_preview", call.tool_name, call.payload, tool.state,
                    **payload_kwargs(call), prepared=tool.prepared,
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
    (:class:`~agent_core.runtime.effects.EffectCancelled` propagates).

    Raises:
        PluginError: the tool returned a value that cannot be kept (see
            :func:`~agent_core.values.json_values.freeze_json`).
    """
    call, tool = routed.call, routed.tool
    if call.error is not None:
        return _error(call.error)
    if tool is None:
        return _error(f"Unknown tool: {call.tool_name}")
    plugin = tool.plugin
    kwargs = {**payload_kwargs(call), "cancellation": token, "context": context, "prepared": tool.prepared}
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
