"""The Messages API's answers, for the scripted upstream: thinking, text and tool_use blocks.

Kept apart from :mod:`._answers` (where the wire layouts are cited: ``anthropic-text.json``
and ``anthropic-tool-use.chunks.txt``), which plays the other answers.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._answers import _ANTHROPIC_HEADERS, _compact, _headers, _pieces
from ._upstream import API, Played

__all__ = ["Message", "Thinking", "ToolUse"]


@dataclass(frozen=True)
class ToolUse:
    id: str
    name: str
    input: Mapping[str, Any]


@dataclass(frozen=True)
class Thinking:
    """A signed ``thinking`` block (streamed as ``thinking_delta`` pieces, then one ``signature_delta``)."""

    thinking: str
    signature: str


@dataclass(frozen=True)
class Message:
    """One Messages API answer: thinking, text and tool_use blocks, in order, with usage."""

    blocks: Sequence[str | ToolUse | Thinking]
    stop_reason: str | None = None  #: default ``tool_use`` with a tool_use block, else ``end_turn``
    input_tokens: int = 12
    output_tokens: int = 29
    model: str = "claude-sonnet-4-5-20250929"
    id: str = "msg_01ScriptedUpstream00000001"
    api: API = "anthropic"
    cache_write: int = 0  #: ``cache_creation_input_tokens``
    cache_read: int = 0  #: ``cache_read_input_tokens``
    stop_sequence: str | None = None

    @property
    def signed(self) -> dict[str, str]:
        """The signatures this answer issues, and the thinking each one signs."""
        return {b.signature: b.thinking for b in self.blocks if isinstance(b, Thinking)}

    @property
    def stop(self) -> str:
        return self.stop_reason or ("tool_use" if any(isinstance(b, ToolUse) for b in self.blocks) else "end_turn")

    def _usage(self, output_tokens: int) -> dict[str, Any]:
        return {"input_tokens": self.input_tokens, "cache_creation_input_tokens": self.cache_write,
                "cache_read_input_tokens": self.cache_read,
                "cache_creation": {"ephemeral_5m_input_tokens": self.cache_write, "ephemeral_1h_input_tokens": 0},
                "output_tokens": output_tokens, "service_tier": "standard"}

    def _block(self, block: str | ToolUse | Thinking) -> dict[str, Any]:
        if isinstance(block, Thinking):
            return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
        if isinstance(block, ToolUse):
            return {"type": "tool_use", "id": block.id, "name": block.name, "input": dict(block.input)}
        return {"type": "text", "text": block}

    def play(self, request: Mapping[str, Any]) -> Played:
        if request.get("stream") is True:
            return Played(200, _headers("text/event-stream; charset=utf-8", _ANTHROPIC_HEADERS),
                          tuple(self._events()), streamed=True)
        body = {"model": self.model, "id": self.id, "type": "message", "role": "assistant",
                "content": [self._block(b) for b in self.blocks], "stop_reason": self.stop,
                "stop_sequence": self.stop_sequence,
                "usage": self._usage(self.output_tokens)}
        return Played(200, _headers("application/json", _ANTHROPIC_HEADERS), (_compact(body),), streamed=False)

    def _events(self) -> list[bytes]:
        def event(kind: str, **fields: Any) -> bytes:
            return b"event: %s\ndata: %s\n\n" % (kind.encode(), _compact({"type": kind, **fields}))

        start = {"model": self.model, "id": self.id, "type": "message", "role": "assistant", "content": [],
                 "stop_reason": None, "stop_sequence": None, "usage": self._usage(1)}
        out = [event("message_start", message=start)]
        for index, block in enumerate(self.blocks):
            if isinstance(block, Thinking):
                out.append(event("content_block_start", index=index,
                                 content_block={"type": "thinking", "thinking": "", "signature": ""}))
                deltas = [*({"type": "thinking_delta", "thinking": p} for p in _pieces(block.thinking)),
                          {"type": "signature_delta", "signature": block.signature}]
            elif isinstance(block, ToolUse):
                out.append(event("content_block_start", index=index,
                                 content_block={"type": "tool_use", "id": block.id, "name": block.name, "input": {}}))
                deltas = [{"type": "input_json_delta", "partial_json": p}
                          for p in ["", *_pieces(json.dumps(dict(block.input)))]]
            else:
                out.append(event("content_block_start", index=index, content_block={"type": "text", "text": ""}))
                deltas = [{"type": "text_delta", "text": p} for p in _pieces(block)]
            if index == 0:
                out.append(event("ping"))
            out += [event("content_block_delta", index=index, delta=d) for d in deltas]
            out.append(event("content_block_stop", index=index))
        out.append(event("message_delta", delta={"stop_reason": self.stop, "stop_sequence": self.stop_sequence},
                         usage={"output_tokens": self.output_tokens}))
        out.append(event("message_stop"))
        return out
