"""Extended thinking for the ``anthropic`` provider.

Why an extension: thinking is a capability of some Claude models (the
provider tags them ``thinking``), switched on per request with a token
budget, and its blocks need care the text path does not:

* ``initialize_request`` asks for thinking when ``thinking_budget`` > 0. The
  API wants ``max_tokens`` above the budget and no custom temperature, so
  both are adjusted here rather than failing with a 400;
* ``process_chunk`` assembles ``thinking`` blocks from ``thinking_delta`` and
  ``signature_delta`` events (``redacted_thinking`` blocks arrive whole) into
  the provider's shared block table, and emits each thinking delta as a
  partial with empty ``content`` and ``metadata["reasoning"]``, for live UIs;
* the blocks stay, signed, in the native history: the API checks that the
  thinking before a ``tool_use`` comes back unchanged on the next turn;
* ``from_native_messages`` surfaces them only as metadata: ``reasoning``
  (the text) and ``thinking_blocks`` (the signed blocks), never as content;
  ``to_native_messages`` puts ``thinking_blocks`` back in front of an
  assistant message when the native history has to be rebuilt from core
  messages (e.g. after switching providers).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent_core_providers.accumulate import push, text_of
from agent_core_providers.anthropic import block_at, content_blocks, with_block

__all__ = ["AnthropicThinkingExtension"]

Dict = dict[str, Any]
_THINKING_TYPES = ("thinking", "redacted_thinking")


class AnthropicThinkingExtension:
    """Extended thinking; on for models tagged ``thinking``, active when ``thinking_budget`` > 0."""

    name = "anthropic_thinking"
    version = "0.1.0"
    priority = 40
    default_enabled = True

    def required_tags(self) -> list[str]:
        return ["provider:anthropic", "thinking"]

    def is_enabled(self, config: Dict, tags: list[str], models: list[Dict], context: Dict | None = None) -> bool | None:
        """Off while no thinking is asked for; otherwise the tag rules decide.

        Thinking is asked for with ``thinking_budget`` > 0, or by hand through
        ``extra_body["thinking"]`` (then the blocks still need this extension).
        So ``resolve()`` and ``agent-core plugins`` say "off" rather than "on"
        for an extension with nothing to do.
        """
        extra = config.get("extra_body")
        asked = isinstance(extra, Mapping) and bool(extra.get("thinking"))
        return None if asked or int(config.get("thinking_budget") or 0) > 0 else False

    def get_config_schema(self) -> Dict:
        return {
            "thinking_budget": {
                "type": "integer",
                "default": 0,
                "description": "tokens the model may think before answering (>= 1024); 0 turns thinking off",
            },
        }

    def to_native_messages(
        self,
        messages: list[Dict],
        native_messages: list[Dict],
        state: Dict | None = None,
        *,
        context: Dict | None = None,
    ) -> list[Dict]:
        out: list[Dict] = []
        for core, native in zip(messages, native_messages, strict=True):
            saved = (core.get("metadata") or {}).get("thinking_blocks")
            if core.get("role") == "assistant" and saved:
                blocks = content_blocks(native.get("content"))
                if not any(isinstance(b, Mapping) and b.get("type") in _THINKING_TYPES for b in blocks):
                    native = {**native, "content": [*saved, *blocks]}
            out.append(native)
        return out

    def initialize_request(
        self, native_messages: list[Dict], state: Dict, *, context: Dict | None = None
    ) -> tuple[list[Dict], Dict]:
        budget = int(state["config"].get("thinking_budget") or 0)
        if budget <= 0:
            return native_messages, state
        request = state["request"]
        payload = {k: v for k, v in request["payload"].items() if k not in ("temperature", "top_k")}
        payload["thinking"] = {"type": "enabled", "budget_tokens": budget}
        max_tokens = int(payload.get("max_tokens") or 0)
        if max_tokens <= budget:
            payload["max_tokens"] = budget + max_tokens  # keep the answer's own room on top of the budget
        return native_messages, {**state, "request": {**request, "payload": payload}}

    def process_chunk(
        self,
        native_chunk: Dict | None,
        partial_messages: list[Dict],
        final_messages: list[Dict],
        native_messages: list[Dict],
        state: Dict,
    ) -> tuple[list[Dict], list[Dict], list[Dict], Dict]:
        """Hot path: open, fill and sign thinking blocks; stream the thinking as partials."""
        unchanged = partial_messages, final_messages, native_messages, state
        if native_chunk is None:
            return unchanged
        kind = native_chunk.get("type")
        if kind == "content_block_delta":
            delta = native_chunk.get("delta") or {}
            dtype = delta.get("type")
            if dtype == "thinking_delta":
                index = native_chunk.get("index", 0)
                text = delta.get("thinking") or ""
                block = block_at(state, index) or {"type": "thinking"}
                new_state = with_block(state, index, {**block, "_thinking": push(block.get("_thinking"), text)})
                partial = {"role": "assistant", "content": "", "metadata": {"reasoning": text}}
                return [*partial_messages, partial], final_messages, native_messages, new_state
            if dtype == "signature_delta":
                index = native_chunk.get("index", 0)
                block = block_at(state, index) or {"type": "thinking"}
                signed = {**block, "signature": (block.get("signature") or "") + (delta.get("signature") or "")}
                return partial_messages, final_messages, native_messages, with_block(state, index, signed)
            return unchanged
        if kind == "content_block_start":
            block = native_chunk.get("content_block") or {}
            if block.get("type") in _THINKING_TYPES:
                opened = dict(block)
                if block.get("type") == "thinking":
                    opened["_thinking"] = push(None, block.get("thinking") or "")
                return (
                    partial_messages,
                    final_messages,
                    native_messages,
                    with_block(state, native_chunk.get("index", 0), opened),
                )
        elif kind == "content_block_stop":
            index = native_chunk.get("index", 0)
            block = block_at(state, index)
            if block is not None and block.get("type") == "thinking" and "_thinking" in block:
                done = {k: v for k, v in block.items() if k != "_thinking"}
                done["thinking"] = text_of(block["_thinking"])
                done.setdefault("signature", "")
                return partial_messages, final_messages, native_messages, with_block(state, index, done)
        return unchanged

    def from_native_messages(
        self,
        native_messages: list[Dict],
        messages: list[Dict],
        state: Dict | None = None,
        *,
        context: Dict | None = None,
    ) -> list[Dict]:
        out: list[Dict] = []
        for native, core in zip(native_messages, messages, strict=True):
            content = native.get("content")
            blocks = (
                [b for b in content if isinstance(b, Mapping) and b.get("type") in _THINKING_TYPES]
                if isinstance(content, list)
                else []
            )
            if blocks:
                text = "\n\n".join(b.get("thinking", "") for b in blocks if b.get("type") == "thinking")
                metadata = {**(core.get("metadata") or {}), "thinking_blocks": blocks}
                if text:
                    metadata["reasoning"] = text
                core = {**core, "metadata": metadata}
            out.append(core)
        return out
