"""Tool use for the ``anthropic`` provider (Messages API ``tool_use`` / ``tool_result`` blocks).

Why an extension: the provider only moves text. The Messages API puts tool
calls and their results in content blocks, while the rest of agent-core
speaks the OpenAI shape (``metadata["tool_calls"]`` with JSON-text
arguments). This extension is the border between the two:

* ``initialize_request`` offers ``config["tools"]`` (already adapted to
  ``anthropic.messages``; other built-in formats are adapted here too);
* ``process_chunk`` assembles each ``tool_use`` block: the id and name come
  in ``content_block_start``, the input as ``input_json_delta`` fragments,
  parsed once at ``content_block_stop``. The finished block goes into the
  provider's shared block table, so it lands in the assistant message at
  its stream position;
* ``from_native_messages`` turns ``tool_use`` blocks into OpenAI-shaped
  ``metadata["tool_calls"]``; ``to_native_messages`` turns them back, and
  turns ``role: "tool"`` results into ``tool_result`` blocks in a user
  message (the provider merges adjacent user messages when sending).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agent_core.errors import LLMError
from agent_core.tool_interop import ANTHROPIC, OPENAI_CHAT, ToolInteropRegistry, detect_schema_format
from agent_core_providers.accumulate import push, text_of
from agent_core_providers.anthropic import block_at, content_blocks, image_block, message_text, with_block

__all__ = ["AnthropicToolsExtension"]

Dict = dict[str, Any]
_interop = ToolInteropRegistry()


def _input_of(arguments: Any) -> Any:
    """Tool-call arguments (JSON text) as a tool_use ``input`` object ({} if unreadable)."""
    if isinstance(arguments, Mapping):
        return arguments
    try:
        value = json.loads(arguments) if arguments else {}
    except (TypeError, ValueError):
        return {}  # the engine already told the model these arguments were broken
    return value if isinstance(value, Mapping) else {}


def _result_content(content: Any) -> Any:
    """A core tool result as ``tool_result`` content: text, or blocks from an envelope."""
    if isinstance(content, Mapping) and content.get("type") == "provider_native_tool_result":
        parts = content.get("content")
        if content.get("format") == ANTHROPIC and isinstance(parts, list):
            return parts
        if content.get("format") == OPENAI_CHAT and isinstance(parts, list):
            blocks: list[Dict] = []
            for p in parts:
                if p.get("type") == "text":
                    blocks.append({"type": "text", "text": p.get("text", "")})
                elif p.get("type") == "image_url" and (p.get("image_url") or {}).get("url"):
                    blocks.append(image_block(p["image_url"]["url"]))
            return blocks
    return message_text(content)


def _adapt(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    fmt = detect_schema_format(schema)
    if fmt is None or fmt == ANTHROPIC:
        return schema
    adapted = _interop.adapt_schema(schema, fmt, [ANTHROPIC])
    return adapted[1] if adapted else schema


class AnthropicToolsExtension:
    """Tool use for the Messages API; on whenever the provider is ``anthropic``."""

    name = "anthropic_tools"
    version = "0.1.0"
    priority = 50
    default_enabled = True

    def required_tags(self) -> list[str]:
        return ["provider:anthropic"]

    def get_config_schema(self) -> Dict:
        return {
            "tool_choice": {
                "type": ["string", "object"],
                "description": '"auto", "any", "none", the name of one tool (it must be called), '
                'or the object form {"type": "tool", "name": ...}; API default when unset',
            }
        }

    def accepted_tool_schema_formats(self, config: Dict, state: Dict | None = None) -> list[str]:
        return [ANTHROPIC]

    def emitted_tool_call_formats(self, config: Dict, state: Dict | None = None) -> list[str]:
        return [OPENAI_CHAT]

    def to_native_messages(
        self,
        messages: list[Dict],
        native_messages: list[Dict],
        state: Dict | None = None,
        *,
        context: Dict | None = None,
    ) -> list[Dict]:
        """Tool calls become ``tool_use`` blocks; tool results ``tool_result`` blocks (1:1 with messages)."""
        out: list[Dict] = []
        for core, native in zip(messages, native_messages, strict=True):
            metadata = core.get("metadata") or {}
            if core.get("role") == "assistant" and metadata.get("tool_calls"):
                uses = [
                    {
                        "type": "tool_use",
                        "id": call.get("id"),
                        "name": (call.get("function") or {}).get("name"),
                        "input": _input_of((call.get("function") or {}).get("arguments")),
                    }
                    for call in metadata["tool_calls"]
                ]
                native = {**native, "content": [*content_blocks(native.get("content")), *uses]}
            elif core.get("role") == "tool":
                result: Dict = {"type": "tool_result", "tool_use_id": metadata.get("tool_call_id")}
                body = _result_content(core.get("content"))
                if body:
                    result["content"] = body
                if metadata.get("is_error") is True:
                    result["is_error"] = True
                native = {"role": "user", "content": [result]}
            out.append(native)
        return out

    def initialize_request(
        self, native_messages: list[Dict], state: Dict, *, context: Dict | None = None
    ) -> tuple[list[Dict], Dict]:
        config = state["config"]
        request = state["request"]
        if not config.get("tools"):
            return native_messages, state
        payload = {**request["payload"], "tools": [_adapt(t) for t in config["tools"]]}
        choice = config.get("tool_choice")
        if isinstance(choice, str) and choice:
            named = choice not in ("auto", "any", "none")
            payload["tool_choice"] = {"type": "tool", "name": choice} if named else {"type": choice}
        elif isinstance(choice, Mapping) and choice:
            payload["tool_choice"] = choice
        return native_messages, {**state, "request": {**request, "payload": payload}}

    def process_chunk(
        self,
        native_chunk: Dict | None,
        partial_messages: list[Dict],
        final_messages: list[Dict],
        native_messages: list[Dict],
        state: Dict,
    ) -> tuple[list[Dict], list[Dict], list[Dict], Dict]:
        """Hot path: open, fill and close ``tool_use`` blocks in the shared block table.

        The input JSON is parsed once, at ``content_block_stop``; input that
        is still not valid JSON then is a malformed stream (``LLMError``).
        """
        unchanged = partial_messages, final_messages, native_messages, state
        if native_chunk is None:
            return unchanged
        kind = native_chunk.get("type")
        if kind == "content_block_delta":
            delta = native_chunk.get("delta") or {}
            if delta.get("type") != "input_json_delta":
                return unchanged
            index = native_chunk.get("index", 0)
            block = block_at(state, index) or {"type": "tool_use"}
            block = {**block, "_json": push(block.get("_json"), delta.get("partial_json") or "")}
            return partial_messages, final_messages, native_messages, with_block(state, index, block)
        if kind == "content_block_start":
            block = native_chunk.get("content_block") or {}
            if block.get("type") == "tool_use":
                opened = {
                    "type": "tool_use",
                    "id": block.get("id"),
                    "name": block.get("name"),
                    "input": block.get("input") or {},
                }
                return (
                    partial_messages,
                    final_messages,
                    native_messages,
                    with_block(state, native_chunk.get("index", 0), opened),
                )
        elif kind == "content_block_stop":
            index = native_chunk.get("index", 0)
            block = block_at(state, index)
            if block is not None and block.get("type") == "tool_use" and "_json" in block:
                raw = text_of(block["_json"])
                try:
                    value = json.loads(raw) if raw.strip() else {}
                except ValueError:
                    raise LLMError(f"tool_use input is not valid JSON: {raw[:200]!r}", provider="anthropic") from None
                done = {k: v for k, v in block.items() if k != "_json"}
                return (
                    partial_messages,
                    final_messages,
                    native_messages,
                    with_block(state, index, {**done, "input": value}),
                )
        return unchanged

    def from_native_messages(
        self,
        native_messages: list[Dict],
        messages: list[Dict],
        state: Dict | None = None,
        *,
        context: Dict | None = None,
    ) -> list[Dict]:
        """``tool_use`` blocks -> ``metadata["tool_calls"]`` in the OpenAI shape (arguments as JSON text)."""
        out: list[Dict] = []
        for native, core in zip(native_messages, messages, strict=True):
            content = native.get("content")
            uses = (
                [b for b in content if isinstance(b, Mapping) and b.get("type") == "tool_use"]
                if isinstance(content, list)
                else []
            )
            if uses:
                calls = [
                    {
                        "id": b.get("id"),
                        "type": "function",
                        "function": {
                            "name": b.get("name"),
                            "arguments": json.dumps(b.get("input") or {}, separators=(",", ":")),
                        },
                    }
                    for b in uses
                ]
                core = {**core, "metadata": {**(core.get("metadata") or {}), "tool_calls": calls}}
            out.append(core)
        return out
