"""Adapting a tool schema to the format an extension sends.

A provider (or the extension that gives it tools) says which schema formats it
sends as they are, and the engine adapts every tool's schemas to one of them
before the request. An extension that still meets a schema in another format
(one it adds itself, or one from a config written by hand) adapts it with
:func:`adapt_schema`. The format names and the interop table live in the
kernel (:mod:`agent_core.plugins.tool_interop`); the kit re-exports the names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..plugins.tool_interop import ToolInteropRegistry, detect_schema_format

__all__ = ["adapt_schema"]

_BUILT_IN = ToolInteropRegistry()


def adapt_schema(schema: Mapping[str, Any], target: str) -> Mapping[str, Any]:
    """``schema`` in the built-in format ``target``; as given when it is in it already or in no known format."""
    fmt = detect_schema_format(schema)
    if fmt is None or fmt == target:
        return schema
    adapted = _BUILT_IN.adapt_schema(schema, fmt, [target])
    return adapted[1] if adapted else schema
