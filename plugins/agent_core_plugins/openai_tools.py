"""Tool calling for the ``openai`` provider (Chat Completions function tools).

Why an extension: the provider only moves text. Everything about tools sits
here, in the four places a capability touches a request:

* ``initialize_request`` offers the tool schemas (``config["tools"]``, which
  the engine has already adapted to ``openai.chat_completions``);
* ``process_chunk`` assembles the streamed ``tool_calls`` deltas: calls
  arrive interleaved, keyed by ``index``, with the id and name in the first
  fragment and the JSON arguments spread over many;
* the closing ``process_chunk(None, ...)`` attaches the assembled calls to
  the final assistant message (and its copy in the native history), so a
  streamed answer ends up exactly like a non-streamed one;
* ``to_native_messages`` / ``from_native_messages`` convert between the core
  shape (``metadata["tool_calls"]``, ``role: "tool"`` results) and the wire
  shape (``tool_calls`` on the assistant message, ``role: "tool"`` messages
  with ``tool_call_id``).

State: ``state["openai_tools"]`` maps a call's stream index to
``{"id", "name", "arguments": Pieces}`` while streaming; ``None`` otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from agent_core.tool_interop import OPENAI_CHAT
from agent_core_providers.accumulate import push, text_of
from agent_core_providers.openai import message_text, replace_final

__all__ = ["OpenAIToolsExtension"]

Dict = dict[str, Any]
_json = msgspec.json.Encoder()


def _wire_call(call: Mapping[str, Any]) -> Dict:
    """A core tool call in the exact wire shape (arguments always JSON text)."""
    fn = call.get("function") or {}
    args = fn.get("arguments")
    if not isinstance(args, str):
        args = _json.encode(args if args is not None else {}).decode()
    return {"id": call.get("id"), "type": "function", "function": {"name": fn.get("name"), "arguments": args}}


def _tool_result_content(content: Any) -> Any:
    """A tool result as ``tool`` message content: text, or the parts of an OpenAI envelope."""
    if isinstance(content, Mapping) and content.get("type") == "provider_native_tool_result":
        if content.get("format") == OPENAI_CHAT and isinstance(content.get("content"), list):
            return content["content"]
    return message_text(content)


class OpenAIToolsExtension:
    """Function tools for Chat Completions; on whenever the provider is ``openai``."""

    name = "openai_tools"
    version = "0.1.0"
    priority = 50
    default_enabled = True

    def required_tags(self) -> list[str]:
        return ["provider:openai"]

    def get_config_schema(self) -> Dict:
        return {
            "tool_choice": {
                "type": ["string", "object"],
                "description": '"auto", "none", "required" or {"type": "function", "function": {"name": ...}}',
            },
        }

    def accepted_tool_schema_formats(self, config: Dict, state: Dict | None = None) -> list[str]:
        return [OPENAI_CHAT]

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
        """Put tool calls and tool results into their wire shape (messages and natives align 1:1)."""
        out: list[Dict] = []
        for core, native in zip(messages, native_messages, strict=True):
            metadata = core.get("metadata") or {}
            if core.get("role") == "assistant" and metadata.get("tool_calls"):
                native = {**native, "tool_calls": [_wire_call(c) for c in metadata["tool_calls"]]}
            elif core.get("role") == "tool":
                native = {
                    "role": "tool",
                    "tool_call_id": metadata.get("tool_call_id"),
                    "content": _tool_result_content(core.get("content")),
                }
            out.append(native)
        return out

    def initialize_request(
        self, native_messages: list[Dict], state: Dict, *, context: Dict | None = None
    ) -> tuple[list[Dict], Dict]:
        """Offer the request's tools; start an empty call buffer."""
        config = state["config"]
        request = state["request"]
        payload = request["payload"]
        if config.get("tools"):
            payload = {**payload, "tools": list(config["tools"])}
            if config.get("tool_choice") is not None:
                payload = {**payload, "tool_choice": config["tool_choice"]}
        return native_messages, {**state, "request": {**request, "payload": payload}, "openai_tools": {}}

    def process_chunk(
        self,
        native_chunk: Dict | None,
        partial_messages: list[Dict],
        final_messages: list[Dict],
        native_messages: list[Dict],
        state: Dict,
    ) -> tuple[list[Dict], list[Dict], list[Dict], Dict]:
        """Hot path: merge this chunk's ``tool_calls`` fragments into the calls by index.

        Most chunks carry text only and return at once. The closing call
        (``native_chunk is None``) hands the assembled calls to the final.
        """
        calls = state.get("openai_tools")
        if native_chunk is None:
            return self._attach(calls, partial_messages, final_messages, native_messages, state)
        choices = native_chunk.get("choices")
        deltas = choices and (choices[0].get("delta") or {}).get("tool_calls")
        if not deltas:
            return partial_messages, final_messages, native_messages, state
        calls = dict(calls or {})
        for position, delta in enumerate(deltas):
            index = delta.get("index", position)
            entry = calls.get(index) or {"id": None, "name": None, "arguments": None}
            fn = delta.get("function") or {}
            # Some servers repeat the id and name in every fragment: keep the first.
            calls[index] = {
                "id": entry["id"] or delta.get("id"),
                "name": entry["name"] or fn.get("name"),
                "arguments": push(entry["arguments"], fn.get("arguments") or ""),
            }
        return partial_messages, final_messages, native_messages, {**state, "openai_tools": calls}

    def _attach(self, calls: Any, partials: list[Dict], finals: list[Dict], native: list[Dict], state: Dict) -> tuple:
        """Closing call: give the streamed calls to the final assistant message."""
        if not calls:
            return partials, finals, native, state
        tool_calls = [
            {
                "id": c["id"] or f"call_{i}",
                "type": "function",
                "function": {"name": c["name"], "arguments": text_of(c["arguments"])},
            }
            for i, c in sorted(calls.items())
        ]
        new_finals = list(finals)
        for i in range(len(new_finals) - 1, -1, -1):
            old = new_finals[i]
            if old.get("role") == "assistant":
                new = {**old, "tool_calls": tool_calls}
                new_finals[i] = new
                native = replace_final(native, old, new)
                break
        return partials, new_finals, native, {**state, "openai_tools": None}

    def from_native_messages(
        self,
        native_messages: list[Dict],
        messages: list[Dict],
        state: Dict | None = None,
        *,
        context: Dict | None = None,
    ) -> list[Dict]:
        """Copy wire ``tool_calls`` into ``metadata["tool_calls"]`` (OpenAI shape, JSON text arguments)."""
        out: list[Dict] = []
        for native, core in zip(native_messages, messages, strict=True):
            if native.get("tool_calls"):
                metadata = {**(core.get("metadata") or {}), "tool_calls": [_wire_call(c) for c in native["tool_calls"]]}
                core = {**core, "metadata": metadata}
            out.append(core)
        return out
