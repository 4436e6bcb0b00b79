"""Tool interop: converting tool schemas and tool calls between wire formats.

Tools describe themselves in whatever format suits their author; providers
accept and emit the formats of their own API. This module is the table that
connects them:

* a **schema adapter** turns a schema in one format into another
  (``(source, target) -> callable``);
* a **call reader** turns one tool call, as a provider emitted it inside a
  message's ``metadata["tool_calls"]``, into an :class:`InspectedToolCall`
  (name, payload, ``payload_kind``, ``payload_format``).

Three formats are built in, all lossless between each other because each is a
name, a description and a JSON Schema for the arguments:

``openai.chat_completions``
    ``{"type": "function", "function": {"name", "description", "parameters"}}``
``anthropic.messages``
    ``{"name", "description", "input_schema"}``
``json_schema``
    a bare JSON Schema; the tool's name is its ``title``.

Plugins add formats by returning a :class:`ToolInteropContribution` from
``get_tool_interop_contribution``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..values.frozen import left_as_is

__all__ = [
    "ANTHROPIC",
    "JSON_SCHEMA",
    "OPENAI_CHAT",
    "InspectedToolCall",
    "SchemaAdapter",
    "ToolCallReader",
    "ToolInteropContribution",
    "ToolInteropRegistry",
    "detect_schema_format",
    "schema_tool_name",
]

OPENAI_CHAT = "openai.chat_completions"
ANTHROPIC = "anthropic.messages"
JSON_SCHEMA = "json_schema"


@dataclass(frozen=True)
class InspectedToolCall:
    """One tool call read out of a message, ready to route to a tool.

    ``error`` is set when the call could not be read (for example its JSON
    arguments do not parse); the engine then answers the model with that
    error instead of running anything.
    """

    call_id: str
    tool_name: str | None
    payload: Any
    payload_kind: str = "object"
    payload_format: str | None = "json"
    payload_metadata: Mapping[str, Any] = field(default_factory=dict)
    tool_call: Mapping[str, Any] = field(default_factory=dict)
    call_format: str = OPENAI_CHAT
    error: str | None = None


@dataclass(frozen=True)
class SchemaAdapter:
    source: str
    target: str
    adapt: Callable[[Mapping[str, Any]], Mapping[str, Any]]


@dataclass(frozen=True)
class ToolCallReader:
    """Reads calls of one format; ``matches`` tells whether a call is of it."""

    format: str
    matches: Callable[[Mapping[str, Any]], bool]
    read: Callable[[Mapping[str, Any], int], InspectedToolCall]


@dataclass(frozen=True)
class ToolInteropContribution:
    """What a plugin adds to the interop table (both parts optional)."""

    schema_adapters: tuple[SchemaAdapter, ...] = ()
    call_readers: tuple[ToolCallReader, ...] = ()


# -- built-in schema handling --------------------------------------------------


def detect_schema_format(schema: Mapping[str, Any]) -> str | None:
    """Name the built-in format ``schema`` is in, or ``None`` when unknown."""
    if not isinstance(schema, Mapping):
        return None
    if schema.get("type") == "function" and isinstance(schema.get("function"), Mapping):
        return OPENAI_CHAT
    if "input_schema" in schema and "name" in schema:
        return ANTHROPIC
    if schema.get("type") == "object" or "properties" in schema:
        return JSON_SCHEMA
    return None


def schema_tool_name(schema: Mapping[str, Any], fmt: str | None) -> str | None:
    """The function name a schema declares, for the built-in formats."""
    if fmt == OPENAI_CHAT:
        return schema["function"].get("name")
    if fmt == ANTHROPIC:
        return schema.get("name")
    if fmt == JSON_SCHEMA:
        return schema.get("title")
    return schema.get("name") if isinstance(schema, Mapping) else None


def _parts(schema: Mapping[str, Any], fmt: str) -> tuple[str | None, str | None, Mapping[str, Any]]:
    """A tool's name, description and parameter schema, read from ``schema`` in format ``fmt``."""
    if fmt == OPENAI_CHAT:
        fn = schema["function"]
        return fn.get("name"), fn.get("description"), fn.get("parameters") or {"type": "object", "properties": {}}
    if fmt == ANTHROPIC:
        return schema.get("name"), schema.get("description"), schema.get("input_schema") or {"type": "object"}
    params = {k: v for k, v in schema.items() if k not in ("title", "description")}
    return schema.get("title"), schema.get("description"), params


def _described(out: dict[str, Any], desc: str | None) -> dict[str, Any]:
    if desc:
        out["description"] = desc
    return out


#: each built-in format's layout of a tool's parts (the inverse of _parts); the description only when there is one
_LAYOUTS: dict[str, Callable[[str | None, str | None, Mapping[str, Any]], Mapping[str, Any]]] = {
    OPENAI_CHAT: lambda name, desc, params: {
        "type": "function", "function": _described({"name": name, "parameters": dict(params)}, desc)},
    ANTHROPIC: lambda name, desc, params: _described({"name": name, "input_schema": dict(params)}, desc),
    JSON_SCHEMA: lambda name, desc, params: _described({"title": name, **params}, desc),
}


def _adapter(src: str, dst: str) -> Callable[[Mapping[str, Any]], Mapping[str, Any]]:
    layout = _LAYOUTS[dst]

    def adapt(schema: Mapping[str, Any]) -> Mapping[str, Any]:
        return layout(*_parts(schema, src))

    return adapt


_BUILTIN_ADAPTERS = tuple(
    SchemaAdapter(src, dst, _adapter(src, dst)) for src in _LAYOUTS for dst in _LAYOUTS if src != dst
)


# -- built-in call readers -------------------------------------------------------


def _is_openai_call(call: Mapping[str, Any]) -> bool:
    return isinstance(call.get("function"), Mapping)


def _read_openai_call(call: Mapping[str, Any], index: int) -> InspectedToolCall:
    fn = call["function"]
    call_id = str(call.get("id") or f"call_{index}")
    name = fn.get("name")
    raw = fn.get("arguments")
    if raw is None or raw == "":
        payload: Any = {}
    elif isinstance(raw, Mapping):
        payload = raw
    else:
        try:
            payload = json.loads(raw)
        except (TypeError, ValueError) as exc:
            # Kept as raw text: a tool that claims the call (can_handle_tool_call) gets it as a
            # freeform payload; for everyone else the error stands.
            return InspectedToolCall(
                call_id, name, raw, payload_kind="text", payload_format=None, tool_call=call,
                payload_metadata={"freeform": True},
                error=f"arguments for {name!r} are not valid JSON ({exc}); got: {str(raw)[:200]}",
            )
    if not isinstance(payload, Mapping):
        return InspectedToolCall(
            call_id, name, payload, tool_call=call,
            error=f"arguments for {name!r} must be a JSON object, got {type(payload).__name__}",
        )
    return InspectedToolCall(call_id, name, payload, tool_call=call)


def _is_anthropic_call(call: Mapping[str, Any]) -> bool:
    return call.get("type") == "tool_use"


def _read_anthropic_call(call: Mapping[str, Any], index: int) -> InspectedToolCall:
    payload = call.get("input")
    if payload is None:
        payload = {}
    return InspectedToolCall(
        str(call.get("id") or f"call_{index}"), call.get("name"), payload,
        tool_call=call, call_format=ANTHROPIC,
    )


_BUILTIN_READERS = (
    ToolCallReader(OPENAI_CHAT, _is_openai_call, _read_openai_call),
    ToolCallReader(ANTHROPIC, _is_anthropic_call, _read_anthropic_call),
)


@left_as_is  # in every provider call's context (``tool_interop``)
class ToolInteropRegistry:
    """The adapters and readers in force for one request (built-ins plus contributions)."""

    def __init__(self, contributions: tuple[ToolInteropContribution, ...] = ()) -> None:
        self.adapters: dict[tuple[str, str], Callable[[Mapping[str, Any]], Mapping[str, Any]]] = {
            (a.source, a.target): a.adapt for a in _BUILTIN_ADAPTERS
        }
        self.readers: list[ToolCallReader] = list(_BUILTIN_READERS)
        for c in contributions:
            for a in c.schema_adapters:
                self.adapters[(a.source, a.target)] = a.adapt
            # Contributed readers win over built-ins for calls they claim.
            self.readers[:0] = list(c.call_readers)

    def adapt_schema(
        self, schema: Mapping[str, Any], source: str, accepted: list[str]
    ) -> tuple[str, Mapping[str, Any]] | None:
        """Return ``(format, schema)`` in the first accepted format reachable, else None."""
        if source in accepted:
            return source, schema
        for target in accepted:
            adapt = self.adapters.get((source, target))
            if adapt is not None:
                return target, adapt(schema)
        return None

    def read_call(self, call: Mapping[str, Any], index: int, formats: list[str]) -> InspectedToolCall:
        """Read one emitted tool call; unknown shapes come back with ``error`` set."""
        for reader in self.readers:
            if (not formats or reader.format in formats or reader in _BUILTIN_READERS) and reader.matches(call):
                return reader.read(call, index)
        call_id = str(call.get("id") or f"call_{index}") if isinstance(call, Mapping) else f"call_{index}"
        return InspectedToolCall(
            call_id, None, call, payload_kind="text", payload_format=None,
            tool_call=call if isinstance(call, Mapping) else {},
            error=f"tool call in an unknown format (readers for: {', '.join(formats) or 'none'})",
        )
