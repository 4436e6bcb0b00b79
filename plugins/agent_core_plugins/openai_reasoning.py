"""Reasoning text for the ``openai`` provider (reasoning models behind Chat Completions).

Why an extension: OpenAI's own API keeps reasoning hidden, but compatible
servers stream it in a side field of the delta: ``reasoning_content``
(DeepSeek, vLLM, llama.cpp, xAI) or ``reasoning`` (Ollama, OpenRouter), or,
for Mistral's Magistral models, as ``{"type": "thinking"}`` parts of a
``content`` list (the provider keeps the text parts). That text
must never be mixed into ``content``, and must not be sent back on the next
turn (some servers reject it). This extension:

* collects reasoning deltas on the hot path and also emits them as partials
  with empty ``content`` and ``metadata["reasoning"]`` = the new text, so a
  UI can show the model thinking live;
* in the closing ``process_chunk(None, ...)`` stores the whole text on the
  final native message as ``reasoning_content`` (the same field a
  non-streamed answer has; the provider never sends it back);
* in ``from_native_messages`` surfaces it as ``metadata["reasoning"]``.

State: ``state["openai_reasoning"]`` holds the streamed text as ``Pieces``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_core.plugin_kit import (
    Extension,
    annotate,
    pushed,
    reasoning_partial,
    rewrite_last_assistant,
    text_of,
)
from agent_core_providers.openai import thinking_text

if TYPE_CHECKING:
    from agent_core.plugin_kit import ChunkOutput, Dict, Msgs

__all__ = ["OpenAIReasoningExtension"]

_FIELDS = ("reasoning_content", "reasoning")


class OpenAIReasoningExtension(Extension):
    """Keeps streamed reasoning out of ``content`` and in ``metadata["reasoning"]``."""

    name = "openai_reasoning"
    version = "0.1.0"
    priority = 60
    requires = ("provider:openai",)

    def initialize_request(self, native_messages: Msgs, state: Dict, *,
                           context: Dict | None = None) -> tuple[Msgs, Dict]:
        return native_messages, {**state, "openai_reasoning": None}

    def process_chunk(self, native_chunk: Dict | None, partial_messages: Msgs, final_messages: Msgs,
                      native_messages: Msgs, state: Dict) -> ChunkOutput:
        """Hot path: collect a reasoning delta and echo it as a reasoning-only partial."""
        if native_chunk is None:
            return self._attach(partial_messages, final_messages, native_messages, state)
        choices = native_chunk.get("choices")
        delta = choices and choices[0].get("delta")
        if not delta:
            return partial_messages, final_messages, native_messages, state
        text = delta.get("reasoning_content") or delta.get("reasoning")
        if not text or not isinstance(text, str):
            content = delta.get("content")
            if not isinstance(content, list):
                return partial_messages, final_messages, native_messages, state
            text = thinking_text(content)  # typed parts (Mistral): the thinking ones
            if not text:
                return partial_messages, final_messages, native_messages, state
        new_state = pushed(state, "openai_reasoning", text)
        return [*partial_messages, reasoning_partial(text)], final_messages, native_messages, new_state

    @staticmethod
    def _attach(partials: Msgs, finals: Msgs, native: Msgs, state: Dict) -> ChunkOutput:
        """Closing call: the streamed reasoning goes on the final answer as ``reasoning_content``."""
        pieces = state.get("openai_reasoning")
        if not pieces:
            return partials, finals, native, state
        text = text_of(pieces)
        finals, native = rewrite_last_assistant(finals, native, lambda old: {**old, "reasoning_content": text})
        return partials, finals, native, {**state, "openai_reasoning": None}

    def from_native_messages(self, native_messages: Msgs, messages: Msgs, state: Dict | None = None, *,
                             context: Dict | None = None) -> Msgs:
        """``reasoning_content`` (or ``reasoning``, or thinking parts) of each answer as ``metadata["reasoning"]``."""
        return annotate(native_messages, messages, _reasoning_of)


def _reasoning_of(native: Dict) -> Dict | None:
    text = next((native[f] for f in _FIELDS if isinstance(native.get(f), str) and native[f]), None)
    if not text:
        text = thinking_text(native.get("content"))
    return {"reasoning": text} if text else None
