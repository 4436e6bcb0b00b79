"""Extended thinking for the ``anthropic`` provider.

Why an extension: thinking is a capability of some Claude models, switched
on per request with a token budget, and its blocks need care the text path
does not. It runs with the ``anthropic`` provider whatever the budget: a
model, a gateway or ``extra_body`` may turn thinking on without the budget,
and a block that arrives must not be dropped (its text is the reasoning, and
the API wants a signed block back before a ``tool_use``). The budget only
decides whether this extension asks for thinking:

* ``initialize_request`` asks for thinking when ``thinking_budget`` > 0. The
  API wants ``max_tokens`` above the budget and no custom temperature, so
  both are adjusted here rather than failing with a 400;
* ``process_chunk`` assembles ``thinking`` blocks from ``thinking_delta`` and
  ``signature_delta`` events (``redacted_thinking`` blocks arrive whole) into
  the provider's shared block table, and emits each thinking delta as a
  partial with empty ``content`` and ``metadata["reasoning"]``, for live UIs;
  a signature as one with ``metadata["thinking_signature"]`` and a redacted
  block's data as one with ``metadata["redacted_thinking"]``, so a relay (the
  server's Messages facade) can stream the blocks on with what makes them
  valid to send back;
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
from typing import TYPE_CHECKING

from agent_core.plugin_kit import Extension, annotate, push, reasoning_partial, text_of
from agent_core_providers.anthropic import block_at, content_blocks, with_block

if TYPE_CHECKING:
    from agent_core.plugin_kit import ChunkOutput, Dict, Msgs

__all__ = ["AnthropicThinkingExtension"]

_THINKING_TYPES = ("thinking", "redacted_thinking")


class AnthropicThinkingExtension(Extension):
    """Extended thinking: keeps thinking blocks whenever they arrive; asks for them when ``thinking_budget`` > 0."""

    name = "anthropic_thinking"
    version = "0.1.0"
    priority = 40
    requires = ("provider:anthropic",)
    config_schema = {
        "thinking_budget": {
            "type": "integer",
            "default": 0,
            "description": "tokens the model may think before answering (>= 1024); 0 asks for no thinking "
                       "(blocks that arrive anyway are still kept)",
        },
    }

    def to_native_messages(self, messages: Msgs, native_messages: Msgs, state: Dict | None = None, *,
                           context: Dict | None = None) -> Msgs:
        """An assistant message's saved ``thinking_blocks`` go back in front of its content (unless there)."""
        out: Msgs = []
        for core, native in zip(messages, native_messages, strict=True):
            saved = (core.get("metadata") or {}).get("thinking_blocks")
            if core.get("role") == "assistant" and saved:
                blocks = content_blocks(native.get("content"))
                if not any(isinstance(b, Mapping) and b.get("type") in _THINKING_TYPES for b in blocks):
                    native = {**native, "content": [*saved, *blocks]}
            out.append(native)
        return out

    def initialize_request(self, native_messages: Msgs, state: Dict, *,
                           context: Dict | None = None) -> tuple[Msgs, Dict]:
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

    def process_chunk(self, native_chunk: Dict | None, partial_messages: Msgs, final_messages: Msgs,
                      native_messages: Msgs, state: Dict) -> ChunkOutput:
        """Hot path: open, fill and sign thinking blocks; stream the thinking as partials."""
        if native_chunk is not None:
            kind = native_chunk.get("type")
            if kind == "content_block_delta":
                delta = native_chunk.get("delta") or {}
                dtype = delta.get("type")
                if dtype == "thinking_delta":
                    text = delta.get("thinking") or ""
                    state = _think(state, native_chunk.get("index", 0), text)
                    return [*partial_messages, reasoning_partial(text)], final_messages, native_messages, state
                if dtype == "signature_delta":
                    signature = delta.get("signature") or ""
                    state = _sign(state, native_chunk.get("index", 0), signature)
                    return [*partial_messages, _partial("thinking_signature", signature)], final_messages, \
                        native_messages, state
            elif kind == "content_block_start":
                block = native_chunk.get("content_block") or {}
                state = _open(state, native_chunk.get("index", 0), block)
                if block.get("type") == "redacted_thinking":
                    return [*partial_messages, _partial("redacted_thinking", block.get("data") or "")], \
                        final_messages, native_messages, state
            elif kind == "content_block_stop":
                state = _close(state, native_chunk.get("index", 0))
        return partial_messages, final_messages, native_messages, state

    def from_native_messages(self, native_messages: Msgs, messages: Msgs, state: Dict | None = None, *,
                             context: Dict | None = None) -> Msgs:
        """Thinking blocks surface as ``metadata["thinking_blocks"]`` and their text as ``metadata["reasoning"]``."""
        return annotate(native_messages, messages, _thinking_of)


def _partial(key: str, value: str) -> Dict:
    """A partial with no text, carrying a piece of a thinking block a live client must pass on whole."""
    return {"role": "assistant", "content": "", "metadata": {key: value}}


def _think(state: Dict, index: int, text: str) -> Dict:
    """A ``thinking_delta``: the text pushed onto its block (opened if the start went missing)."""
    block = block_at(state, index) or {"type": "thinking"}
    return with_block(state, index, {**block, "_thinking": push(block.get("_thinking"), text)})


def _sign(state: Dict, index: int, signature: str) -> Dict:
    """A ``signature_delta``: appended to the block's signature."""
    block = block_at(state, index) or {"type": "thinking"}
    return with_block(state, index, {**block, "signature": (block.get("signature") or "") + signature})


def _open(state: Dict, index: int, block: Dict) -> Dict:
    """A ``content_block_start``: a thinking block enters the block table (other blocks are not ours)."""
    if block.get("type") not in _THINKING_TYPES:
        return state
    opened = dict(block)
    if block.get("type") == "thinking":
        opened["_thinking"] = push(None, block.get("thinking") or "")
    return with_block(state, index, opened)


def _close(state: Dict, index: int) -> Dict:
    """A ``content_block_stop``: a thinking block's pieces are joined into its ``thinking`` text."""
    block = block_at(state, index)
    if block is None or block.get("type") != "thinking" or "_thinking" not in block:
        return state
    done = {k: v for k, v in block.items() if k != "_thinking"}
    done["thinking"] = text_of(block["_thinking"])
    done.setdefault("signature", "")
    return with_block(state, index, done)


def _thinking_of(native: Dict) -> Dict | None:
    content = native.get("content")
    if not isinstance(content, list):
        return None
    blocks = [b for b in content if isinstance(b, Mapping) and b.get("type") in _THINKING_TYPES]
    if not blocks:
        return None
    text = "\n\n".join(b.get("thinking", "") for b in blocks if b.get("type") == "thinking")
    return {"thinking_blocks": blocks, "reasoning": text} if text else {"thinking_blocks": blocks}
