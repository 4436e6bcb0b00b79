"""A tool call's arguments checked against the schema the tool declared, before it runs.

A model may call a tool with a required argument missing, a number given as text, or
a field the schema never offered. Left to the tool, each would fail somewhere inside
it, or worse run on what it was not built for. So, unless the request's config says
``validate_tool_arguments: false``, the engine checks the arguments first; a mismatch
is an error result the model reads (naming the argument and what was expected), so it
can call again correctly, and the tool never runs.

The check reads the JSON Schema keywords tools' parameter schemas use: ``type`` (one
or a list), ``properties``, ``required``, ``additionalProperties: false``, ``items``,
``enum``, ``const``, ``minimum`` / ``maximum``, ``minLength`` / ``maxLength``,
``minItems`` / ``maxItems``. Other keywords are not checked (the tool still may).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["argument_fault", "parameters_of"]

_TYPES: dict[str, Any] = {
    "object": lambda v: isinstance(v, Mapping),
    "array": lambda v: isinstance(v, Sequence) and not isinstance(v, (str, bytes)),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool) or isinstance(v, float) and v.is_integer(),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}
_BOUNDS = (("minimum", lambda v, b: v >= b, "at least"), ("maximum", lambda v, b: v <= b, "at most"))
_SIZES = (("minLength", "minItems", lambda n, b: n >= b, "at least"), ("maxLength", "maxItems", lambda n, b: n <= b, "at most"))


def parameters_of(schema: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The JSON Schema of a tool's arguments, from a schema in any of the tool formats; None when it has none."""
    function = schema.get("function")
    if isinstance(function, Mapping):  # OpenAI chat completions
        found = function.get("parameters")
    elif "input_schema" in schema:  # Anthropic messages
        found = schema.get("input_schema")
    elif "parameters" in schema:  # OpenAI responses, a bare function
        found = schema.get("parameters")
    else:
        found = schema if schema.get("type") == "object" else None
    return found if isinstance(found, Mapping) else None


def _kind(value: Any) -> str:
    for name, test in _TYPES.items():
        if name != "integer" and test(value):
            return name
    return type(value).__name__


def argument_fault(schema: Mapping[str, Any], value: Any, where: str = "arguments") -> str | None:
    """What is wrong with ``value`` under ``schema`` (the first thing found), or None when it fits."""
    types = schema.get("type")
    names = [types] if isinstance(types, str) else list(types) if isinstance(types, list) else []
    known = [t for t in names if t in _TYPES]
    if known and not any(_TYPES[t](value) for t in known):
        return f"{where} must be {' or '.join(known)}, got {_kind(value)}"
    if "enum" in schema and isinstance(schema["enum"], list) and value not in schema["enum"]:
        return f"{where} must be one of {list(schema['enum'])!r}, got {value!r}"
    if "const" in schema and value != schema["const"]:
        return f"{where} must be {schema['const']!r}, got {value!r}"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        for key, ok, said in _BOUNDS:
            bound = schema.get(key)
            if isinstance(bound, (int, float)) and not ok(value, bound):
                return f"{where} must be {said} {bound}, got {value}"
    if isinstance(value, Mapping):
        return _object_fault(schema, value, where)
    if isinstance(value, (str, list, tuple)):
        return _size_fault(schema, value, where) or (_items_fault(schema, value, where) if not isinstance(value, str)
                                                     else None)
    return None


def _size_fault(schema: Mapping[str, Any], value: Any, where: str) -> str | None:
    for text_key, list_key, ok, said in _SIZES:
        bound = schema.get(text_key if isinstance(value, str) else list_key)
        if isinstance(bound, int) and not ok(len(value), bound):
            what = "characters" if isinstance(value, str) else "items"
            return f"{where} must have {said} {bound} {what}, got {len(value)}"
    return None


def _items_fault(schema: Mapping[str, Any], value: Sequence[Any], where: str) -> str | None:
    items = schema.get("items")
    if isinstance(items, Mapping):
        for i, item in enumerate(value):
            fault = argument_fault(items, item, f"{where}[{i}]")
            if fault is not None:
                return fault
    return None


def _object_fault(schema: Mapping[str, Any], value: Mapping[str, Any], where: str) -> str | None:
    props = schema.get("properties")
    props = props if isinstance(props, Mapping) else {}
    for key in schema.get("required") or ():
        if key not in value:
            return f"{where} lack the required {key!r}" if where == "arguments" else f"{where} lacks {key!r}"
    if schema.get("additionalProperties") is False:
        extra = [k for k in value if k not in props]
        if extra:
            return f"{where} hold {extra[0]!r}, which the schema does not offer (it offers {', '.join(props) or 'none'})"
    for key, sub in props.items():
        if key in value and isinstance(sub, Mapping):
            fault = argument_fault(sub, value[key], f"{key!r}" if where == "arguments" else f"{where}.{key}")
            if fault is not None:
                return fault
    return None
