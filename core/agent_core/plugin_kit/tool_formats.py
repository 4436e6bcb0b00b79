"""The tool formats: their names, how a schema's format is told, and adapting a schema to another.

A provider (or the extension that gives it tools) says which schema formats it
sends as they are and which call format it emits; the engine adapts every
tool's schemas to an accepted format before the request. The names and the
interop table live in the kernel (:mod:`agent_core.plugins.tool_interop`);
this module gives plugins the part they use, plus :func:`adapt_schema` for an
extension that gets schemas in a format it did not ask for.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..plugins.tool_interop import (
    ANTHROPIC,
    JSON_SCHEMA,
    OPENAI_CHAT,
    InspectedToolCall,
    SchemaAdapter,
    ToolCallReader,
    ToolInteropContribution,
    ToolInteropRegistry,
    detect_schema_format,
    schema_tool_name,
)

__all__ = [
    "ANTHROPIC",
    "JSON_SCHEMA",
    "OPENAI_CHAT",
    "InspectedToolCall",
    "SchemaAdapter",
    "ToolCallReader",
    "ToolInteropContribution",
    "ToolInteropRegistry",
    "adapt_schema",
    "detect_schema_format",
    "schema_tool_name",
]

_BUILT_IN = ToolInteropRegistry()


def adapt_schema(schema: Mapping[str, Any], target: str) -> Mapping[str, Any]:
    """``schema`` in the built-in format ``target``; as given when it is in it already or in no known format."""
    fmt = detect_schema_format(schema)
    if fmt is None or fmt == target:
        return schema
    adapted = _BUILT_IN.adapt_schema(schema, fmt, [target])
    return adapted[1] if adapted else schema
