"""The Messages API's named server-sent events, built from the engine's events.

Kept apart from :mod:`.anthropic_compat` (the bodies) because it is the one stateful
piece: which block is open, and what the final message still has to add.
"""

from __future__ import annotations

import json
from typing import Any

from ....types import Message
from ..usage_details import anthropic_usage
from .dialect import calls_of, input_of, stop_reason, stop_sequence, thinking_blocks

__all__ = ["MessageStream", "sse"]


def sse(event: str, data: dict[str, Any]) -> bytes:
    return b"event: " + event.encode() + b"\ndata: " + json.dumps(data).encode() + b"\n\n"


class MessageStream:
    """Engine events in, Messages API server-sent events out, in the order the API sends them.

    Text and reasoning open a block the first time they arrive and stream as deltas; a block
    closes when another kind starts. Tool calls are sent once complete (the engine hands them
    over with the final message), each as a ``tool_use`` block whose input arrives in one
    ``input_json_delta``.
    """

    def __init__(self, request_id: str, model: str) -> None:
        self.request_id = request_id
        self.model = model
        self.index = -1
        # the kind of the block being streamed: "text", "thinking", "signed" (thinking whose signature
        # came), "redacted_thinking", "tool_use", or None
        self.open: str | None = None
        self.streamed_text = False
        self.streamed_reasoning = False
        self.ended = False  # message_stop or an error event sent: the stream is complete
        self.replies: list[Message] = []  # the turn's answers: their cache counts go in the last usage

    def start(self) -> bytes:
        message = {"id": f"msg_{self.request_id}", "type": "message", "role": "assistant", "model": self.model,
                   "content": [], "stop_reason": None, "stop_sequence": None,
                   "usage": {"input_tokens": 0, "output_tokens": 0}}
        return sse("message_start", {"type": "message_start", "message": message})

    def _switch(self, kind: str | None, block: dict[str, Any] | None = None) -> bytes:
        out = b""
        if self.open is not None:
            out += sse("content_block_stop", {"type": "content_block_stop", "index": self.index})
            self.open = None
        if kind is not None and block is not None:
            self.index += 1
            self.open = kind
            out += sse("content_block_start", {"type": "content_block_start", "index": self.index,
                                               "content_block": block})
        return out

    def _delta(self, delta: dict[str, Any]) -> bytes:
        return sse("content_block_delta", {"type": "content_block_delta", "index": self.index, "delta": delta})

    def text(self, text: str) -> bytes:
        self.streamed_text = True
        out = b"" if self.open == "text" else self._switch("text", {"type": "text", "text": ""})
        return out + self._delta({"type": "text_delta", "text": text})

    def thinking(self, text: str) -> bytes:
        self.streamed_reasoning = True
        out = b"" if self.open == "thinking" else self._switch("thinking",
                                                               {"type": "thinking", "thinking": "", "signature": ""})
        return out + self._delta({"type": "thinking_delta", "thinking": text})

    def signature(self, signature: str) -> bytes:
        """The open thinking block's signature, which ends it: more thinking opens another."""
        out = b"" if self.open == "thinking" else self.thinking("")
        self.open = "signed"  # still open (closed at the next switch), no longer thinking
        return out + self._delta({"type": "signature_delta", "signature": signature})

    def redacted(self, data: str) -> bytes:
        self.streamed_reasoning = True
        return self._switch("redacted_thinking", {"type": "redacted_thinking", "data": data})

    def partial(self, message: Message) -> bytes:
        out = b""
        meta = message.metadata
        if meta:
            reasoning = meta.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                out += self.thinking(reasoning)
            if isinstance(meta.get("thinking_signature"), str):
                out += self.signature(meta["thinking_signature"])
            if isinstance(meta.get("redacted_thinking"), str):
                out += self.redacted(meta["redacted_thinking"])
        if isinstance(message.content, str) and message.content:
            out += self.text(message.content)
        return out

    def final(self, reply: Message) -> bytes:
        """What the final message adds: thinking or text not streamed before, then its tool calls."""
        out = b""
        self.replies.append(reply)
        if not self.streamed_reasoning:
            for block in thinking_blocks(reply):
                if block["type"] == "redacted_thinking":
                    out += self.redacted(block["data"])
                    continue
                out += self.thinking(block["thinking"])
                if block["signature"]:
                    out += self.signature(block["signature"])
        if not self.streamed_text and isinstance(reply.content, str) and reply.content:
            out += self.text(reply.content)
        for call in calls_of(reply):
            out += self._switch("tool_use", {"type": "tool_use", "id": call["id"], "name": call["function"]["name"],
                                             "input": {}})
            out += self._delta({"type": "input_json_delta", "partial_json": json.dumps(input_of(call))})
        return out

    def end(self, reply: Message | None, usage: Any) -> bytes:
        out = self._switch(None)
        self.ended = True
        # The input count is known only now (message_start went out before the upstream said it), and
        # the API's message_delta may carry it: the SDK takes it into the final message's usage.
        counts = anthropic_usage(usage, self.replies) if usage is not None else {"output_tokens": 0}
        delta = {"type": "message_delta",
                 "delta": {"stop_reason": stop_reason(reply), "stop_sequence": stop_sequence(reply)}, "usage": counts}
        return out + sse("message_delta", delta) + sse("message_stop", {"type": "message_stop"})

    def error(self, kind: str, message: str) -> bytes:
        self.ended = True
        return sse("error", {"type": "error", "error": {"type": kind, "message": message}})
