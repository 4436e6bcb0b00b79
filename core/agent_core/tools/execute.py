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
from ..runtime.effects import (
    END,
    Call,
    CancellationToken,
    EffectCancelled,
    EffectTimeout,
    Guard,
    NextItem,
    OpenIter,
)
from ..values.events import ToolCallEvent, ToolProgressEvent, ToolResultEvent
from ..values.frozen import FrozenDict, thaw
from ..values.json_values import freeze_json
from ..values.messages import Message
from .arguments import argument_fault, parameters_of
from .toolkit import ENVELOPE, Routed, payload_kwargs, twin_calls

__all__ = ["execute", "preview_event", "run_tool_call", "tool_message"]


def preview_event(request_id: str, routed: Routed, iteration: int) -> ToolCallEvent:
    call, tool = routed.call, routed.tool
    preview = ""
    if tool is not None and call.error is None and "format_tool_call_preview" in tool.plugin.defined:
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


#: the hooks that run a call: a tool plugin with none of them cannot run any
_RUN_HOOKS = ("stream_tool", "stream_tool_async", "execute_tool", "execute_tool_async")


def _error(message: str) -> FrozenDict:
    return FrozenDict({"success": False, "error": message})


def execute(
    routed: Routed, payload: Any, context: Mapping[str, Any], request_id: str, *,
    token: CancellationToken | None = None, timeout: float | None = None,
) -> Generator[Any, Any, FrozenDict]:
    """Run one routed call; yields effects and progress events, returns the result dict.

    A call that cannot run (it carries an error, or no tool takes it) is an
    error result at once. Otherwise the tool's ``stream_tool`` runs when it has
    one (:func:`_streamed`), else its ``execute_tool``; whatever it raises
    becomes an error result, and what it returns is kept as the session will
    keep it (:func:`_kept`). The tool gets ``token`` as ``cancellation``. With
    ``timeout`` (seconds, the request's ``tool_timeout_s``) a tool still
    running after it becomes an error result; a cancelled token stops the wait
    at once (:class:`~agent_core.runtime.effects.EffectCancelled` propagates).

    Raises:
        PluginError: the tool returned a value that cannot be kept (see
            :func:`~agent_core.values.json_values.freeze_json`).
    """
    call, tool = routed.call, routed.tool
    if call.error is not None:
        return _error(call.error)
    if tool is None or not any(h in tool.plugin.defined for h in _RUN_HOOKS):
        return _error(f"Unknown tool: {call.tool_name}")
    plugin, name = tool.plugin, call.tool_name
    fault = _arguments_fault(routed, payload, context)
    if fault is not None:  # the model reads what does not fit, and the tool never runs on it
        return _error(f"the arguments do not fit the schema of the tool {name!r}: {fault}")
    streams = "stream_tool" in plugin.defined or "stream_tool_async" in plugin.defined
    args = (name, payload, tool.state)
    kwargs = {**payload_kwargs(call), "cancellation": token, "context": context, "prepared": tool.prepared}
    guard = Guard(token, timeout) if token is not None or timeout is not None else None
    try:
        if streams:
            result = yield from _streamed(plugin, call, request_id, args, kwargs, guard)
        else:
            sync, asyn = twin_calls(plugin, "execute_tool", "execute_tool_async", *args, **kwargs)
            result = yield Call(sync, asyn, label=f"tool {plugin.name!r} execute_tool", guard=guard)
    except (EffectCancelled, AsyncOnlyHookError, _Unkeepable):
        raise
    except EffectTimeout as exc:
        return _error(
            f"the tool {name!r} did not finish within {exc.limit:g} s (tool_timeout_s) and was abandoned"
        )
    except Exception as exc:  # noqa: BLE001 - a failing tool is an answer for the model
        return _error(f"{type(exc).__name__}: {exc}")
    if result is None and not streams:  # a missing return is a bug, not an answer: never report it as success
        return _error(f"the tool {name!r} returned nothing: its execute_tool must return a result such as "
                      "{'success': True, 'result': ...}")
    if not isinstance(result, Mapping):
        result = {"success": True, "result": result}
    elif "success" not in result:  # read as a failure it would reach the model as "Error: None"
        return _error(f"the tool {name!r} returned a mapping without 'success' (keys {sorted(map(str, result))!r:.80}): "
                      "its execute_tool must return {'success': True, 'result': ...} or {'success': False, "
                      "'error': ...}")
    return _kept(plugin, "stream_tool" if streams else "execute_tool", name, result)  # type: ignore[no-any-return]


def _streamed(
    plugin: LivePlugin, call: Any, request_id: str, args: tuple[Any, ...], kwargs: dict[str, Any],
    guard: Guard | None,
) -> Generator[Any, Any, Any]:
    """``stream_tool``: each part is kept and announced (``tool_progress``) as it comes.

    The result is the first item carrying ``success``, or, when the stream
    ends without one, a success whose result is every part.
    """
    label = f"tool {plugin.name!r} stream_tool"
    sync, asyn = twin_calls(plugin, "stream_tool", "stream_tool_async", *args, **kwargs)
    handle = yield OpenIter(sync, asyn, label=label)
    parts = []
    while True:
        item = yield NextItem(handle, guard, label)
        if item is END:
            return {"success": True, "result": parts}
        if isinstance(item, Mapping) and "success" in item:
            return item
        part = _kept(plugin, "stream_tool", call.tool_name, item.get("part", item) if isinstance(item, Mapping) else item)
        parts.append(part)
        yield ToolProgressEvent(request_id, call.call_id, call.tool_name, part)


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


def _split_metadata(call_id: str, tool_name: str | None, result: FrozenDict) -> tuple[dict[str, Any], FrozenDict]:
    """The tool message's metadata, and the result as the message keeps it.

    A result's own ``metadata`` (what a tool keeps beside its text: an MCP
    server's images, say) moves into the message's metadata, so it is stored
    once; the engine's ``tool_call_id`` and ``tool_name`` win over it, since
    the tool loop pairs the message with its call by them.
    """
    extra = result.get("metadata")
    if not isinstance(extra, Mapping):
        return {"tool_call_id": call_id, "tool_name": tool_name}, result
    kept = FrozenDict({k: v for k, v in result.items() if k != "metadata"})
    return {**extra, "tool_call_id": call_id, "tool_name": tool_name}, kept


def tool_message(
    routed: Routed, result: FrozenDict, accepted: tuple[str, ...]
) -> tuple[Message, Any]:
    """Format a result as the ``tool`` message the model will read, plus a display payload.

    A result's ``metadata`` mapping, when it has one, is kept in the message's
    metadata under the engine's ``tool_call_id`` and ``tool_name``.
    """
    call, tool = routed.call, routed.tool
    formatted: Any
    display = None
    if tool is not None and "format_tool_result" in tool.plugin.defined:
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
    if tool is not None and "to_display_format" in tool.plugin.defined:
        try:
            display = _jsonable(thaw(call_hook(
                tool.plugin, "to_display_format", content if isinstance(content, str) else _envelope_text(content),
                result, tool.state,
            )))
        except PluginError:
            display = None
    metadata, result = _split_metadata(call.call_id, call.tool_name, result)
    tool_result = result if _jsonable(result) is result else FrozenDict({"success": bool(result.get("success"))})
    return Message("tool", content, metadata, None, tool_result), display


def _arguments_fault(routed: Routed, payload: Any, context: Mapping[str, Any]) -> str | None:
    """What in ``payload`` breaks the tool's declared schema (:mod:`.arguments`), unless the config turns it off."""
    config = context.get("config") if isinstance(context, Mapping) else None
    if routed.descriptor is None or not isinstance(payload, Mapping) or (
            isinstance(config, Mapping) and config.get("validate_tool_arguments") is False):
        return None
    params = parameters_of(routed.descriptor.schema)
    return None if params is None else argument_fault(params, payload)


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
