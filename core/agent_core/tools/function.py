"""A plain Python function as a tool plugin (``agent-core run --tool module:function``).

The tool's JSON Schema is read from the function's signature: each parameter
becomes a property, typed from its annotation when it is one of ``str``,
``int``, ``float``, ``bool``, ``list`` or ``dict`` (left open otherwise), and
required when it has no default. The docstring's first paragraph becomes the
description the model reads. An ``async def`` function runs on the async
path and, for sync requests, through the engine's usual bridge.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
import typing
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import ConfigError

__all__ = ["function_tool", "load_function"]

_JSON_TYPES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array",
                               dict: "object"}


def _json_type(annotation: Any) -> str | None:
    origin = typing.get_origin(annotation) or annotation
    return _JSON_TYPES.get(origin)


def _schema(fn: Callable[..., Any]) -> dict[str, Any]:
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # noqa: BLE001 - an unresolvable annotation leaves the parameter untyped
        hints = {}
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, param in inspect.signature(fn).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        prop: dict[str, Any] = {}
        json_type = _json_type(hints.get(name, param.annotation))
        if json_type:
            prop["type"] = json_type
        properties[name] = prop
        if param.default is param.empty:
            required.append(name)
    doc = inspect.getdoc(fn) or ""
    description = doc.split("\n\n", 1)[0].replace("\n", " ").strip() or f"the Python function {fn.__name__}"
    return {
        "type": "function",
        "function": {
            "name": fn.__name__,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


def function_tool(fn: Callable[..., Any], *, name: str | None = None) -> type:
    """A tool plugin class offering ``fn`` to the model under its own name.

    The call's arguments are passed as keyword arguments; the return value is
    the tool result, and an exception becomes an error result the model reads.
    """
    if not callable(fn) or not hasattr(fn, "__name__"):
        raise ConfigError(f"a function tool needs a named function, got {type(fn).__name__}")
    schema = _schema(fn)
    tool_name = fn.__name__

    def _kwargs(payload: Any) -> dict[str, Any]:
        if not isinstance(payload, Mapping):
            raise TypeError(f"{tool_name} takes named arguments (a JSON object), got {type(payload).__name__}")
        return dict(payload)

    attrs: dict[str, Any] = {
        "name": name or tool_name,
        "version": "0.0.0",
        "__doc__": f"The function {fn.__module__}.{fn.__qualname__} as a tool.",
        "get_tool_schemas": lambda self, state: [schema],
    }
    if inspect.iscoroutinefunction(fn):

        async def execute_tool_async(self: Any, tool_name: str, payload: Any, state: Any) -> dict[str, Any]:
            return {"success": True, "result": await fn(**_kwargs(payload))}

        attrs["execute_tool_async"] = execute_tool_async
    else:

        def execute_tool(self: Any, tool_name: str, payload: Any, state: Any) -> dict[str, Any]:
            return {"success": True, "result": fn(**_kwargs(payload))}

        attrs["execute_tool"] = execute_tool
    return type(f"FunctionTool_{tool_name}", (), attrs)


def load_function(spec: str) -> Callable[..., Any]:
    """The function named by ``"module:function"`` (``module`` importable from the working directory too).

    Raises:
        ConfigError: the spec is malformed, the module does not import, or
            the name is missing or not callable.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"--tool expects MODULE:FUNCTION (e.g. mytools:get_weather), got {spec!r}")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        target: Any = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - any import failure is a config problem of this flag
        raise ConfigError(f"--tool {spec}: cannot import {module_name!r}: {type(exc).__name__}: {exc}") from exc
    for part in attr.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise ConfigError(f"--tool {spec}: module {module_name!r} has no attribute {attr!r}")
    if not callable(target):
        raise ConfigError(f"--tool {spec}: {attr!r} is not a function")
    if isinstance(target, type):  # a class would become a "tool" that builds an instance of it when called
        hint = (" It looks like a tool plugin: install it by entry point (group agent_core.tools) or pass it to "
                "AgentCore.discover(tools=[...])." if hasattr(target, "execute_tool") or hasattr(target, "run") else "")
        raise ConfigError(f"--tool {spec}: {attr!r} is a class; --tool takes a plain function.{hint}")
    return target
