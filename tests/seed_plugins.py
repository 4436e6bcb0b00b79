"""The seed's four example plugins, written in its duck-typed style (no base classes).

Shared by the protocol tests and the engine's end-to-end tests so both check
the very same classes.
"""

from __future__ import annotations

from typing import Any

# -- plugins in the original platform's style: plain classes, no base class ----------


class EchoProvider:
    name = "echo"
    version = "1.0.0"
    streams = False  # its stream_api below is a placeholder: it answers through call_api

    def get_config_schema(self) -> dict[str, Any]:
        return {"model": {"type": "string", "default": "echo-1"}}

    def get_ui_elements(self, config, tags, models):  # the legacy (config, tags, models) shape
        return []

    def init(self, config):
        return {"config": config}

    def initialize_request(self, native_messages, state):
        return native_messages, state

    def to_native_messages(self, messages, state):
        return list(messages)

    def from_native_messages(self, native_messages, state):
        return list(native_messages)

    def call_api(self, native_messages, state):
        last_user = next((m["content"] for m in reversed(native_messages) if m.get("role") == "user"), "")
        reply = {"role": "assistant", "content": f"Echo: {last_user}"}
        return [], [reply], [*native_messages, reply], state

    def stream_api(self, native_messages, state):
        yield from []


class PrefixExt:
    name = "prefix"
    version = "1.0.0"
    priority = 50

    def get_config_schema(self):
        return {"prefix": {"type": "string", "default": "[EXT]"}}

    def init(self, config, state):
        return state

    def process_chunk(self, native_chunk, partial_messages, final_messages, native_messages, state):
        prefix = state.get("config", {}).get("prefix", "[EXT]")
        finals = [{**m, "content": f"{prefix} {m['content']}"} for m in final_messages]
        return partial_messages, finals, native_messages, state

    def finalize(self, final_messages, native_messages, state):
        return final_messages, native_messages, state


class TagFeature:
    name = "tag"
    version = "1.0.0"
    priority = 100

    def get_config_schema(self):
        return {"enabled": {"type": "boolean", "default": True}}

    def init(self, config, state):
        return state

    def to_native_messages(self, messages, native_messages):
        return native_messages

    def from_native_messages(self, native_messages, messages):
        return messages

    def initialize_request(self, native_messages, state):
        return native_messages, state

    def finalize(self, final_messages, native_messages, state):
        tagged = [{**m, "metadata": {**m.get("metadata", {}), "tag": True}} for m in final_messages]
        return tagged, native_messages, state


class DummyCalc:
    name = "calculator"
    version = "1.0.0"

    def get_tool_schemas(self, state):
        params = {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        }
        return [{"type": "function", "function": {"name": "add", "parameters": params}}]

    def init(self, config):
        return {"config": config}

    def execute_tool(self, tool_name, arguments, state):
        if tool_name == "add":
            return {"success": True, "result": arguments.get("a", 0) + arguments.get("b", 0)}
        return {"success": False, "error": "unknown"}

    def format_tool_result(self, result, state):
        return f"Result: {result['result']}" if result.get("success") else f"Error: {result.get('error')}"


# -- recognition -----------------------------------------------------------------------
