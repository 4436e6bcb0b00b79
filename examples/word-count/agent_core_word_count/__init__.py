"""An example agent-core plugin: the ``count_words`` tool.

A tool is a class with a ``name``, the JSON schemas of what it offers the model, and ``run``,
which answers one call. It never raises for a bad argument: a failure result is what the model
reads, so it can try again. Installed, it is found through the ``agent_core.tools`` entry point
in ``pyproject.toml``; it is off until a config names it (``enabled_plugins``), so installing a
plugin never changes what an existing setup sends to its model.
"""

from __future__ import annotations

from typing import Any

from agent_core.plugin_kit import Tool, ToolCall, failure, success

__all__ = ["WordCountTool", "count_words"]

_SCHEMA = {
    "type": "function",
    "function": {
        "name": "count_words",
        "description": "Count the words of a text exactly (models guess such counts).",
        "parameters": {
            "type": "object",
            "properties": {"text": {"type": "string", "description": "the text to count"}},
            "required": ["text"],
        },
    },
}


def count_words(text: str) -> int:
    """Words are what ``str.split`` separates: runs of characters between whitespace."""
    return len(text.split())


class WordCountTool(Tool):
    """Offers ``count_words`` to the model."""

    name = "word_count"
    version = "0.1.0"
    default_enabled = False  # opt-in: enabled_plugins=["word_count"]
    tool_schemas = (_SCHEMA,)

    def run(self, call: ToolCall) -> dict[str, Any]:
        text = call.arguments.get("text")
        if not isinstance(text, str):
            return failure("count_words needs a 'text' string argument")
        return success(str(count_words(text)))
