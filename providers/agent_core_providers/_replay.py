"""A complete JSON answer replayed as the stream events its API would have sent.

Some servers ignore ``stream: true`` and answer with the whole completion as
one ``application/json`` body. Rather than fail (or retry, paying again),
the transport hands that answer to the provider, which turns it into the
events of a stream here, so the same ``process_chunk`` / ``finalize`` path
(extensions included) builds the message.

:func:`replay_answer` tells the two APIs apart by the answer's own shape:
Chat Completions answers carry ``choices``, Messages answers are
``{"type": "message", "content": [...]}``. A provider whose API has another
shape overrides ``HTTPProvider._api_events_from_answer``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
from agent_core.errors import MalformedResponseError

from ._sse import quote_line

__all__ = ["chat_completion_events", "message_events", "replay_answer"]

_encode = msgspec.json.encode


def chat_completion_events(answer: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A ``chat.completion`` as chunks: one delta carrying the whole message, then usage."""
    choice = answer["choices"][0]
    message = choice.get("message") or {}
    delta: dict[str, Any] = {k: v for k, v in message.items() if v is not None}
    calls = delta.get("tool_calls")
    if isinstance(calls, list):
        delta["tool_calls"] = [
            {**call, "index": i} if isinstance(call, Mapping) else call for i, call in enumerate(calls)
        ]
    head = {k: answer[k] for k in ("id", "created", "model") if k in answer}
    chunk = {**head, "object": "chat.completion.chunk"}
    events: list[dict[str, Any]] = [
        {**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": choice.get("finish_reason")}]}
    ]
    if answer.get("usage"):
        events.append({**chunk, "choices": [], "usage": answer["usage"]})
    return events


def _block_events(index: int, block: Mapping[str, Any]) -> list[dict[str, Any]]:
    kind = block.get("type")
    deltas: list[dict[str, Any]] = []
    if kind == "text":
        opened: Mapping[str, Any] = {"type": "text", "text": ""}
        deltas.append({"type": "text_delta", "text": block.get("text") or ""})
    elif kind == "thinking":
        opened = {"type": "thinking", "thinking": ""}
        deltas.append({"type": "thinking_delta", "thinking": block.get("thinking") or ""})
        if block.get("signature"):
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
    elif kind == "tool_use" and isinstance(block.get("input"), Mapping):
        opened = {**block, "input": {}}
        deltas.append({"type": "input_json_delta", "partial_json": _encode(block["input"]).decode()})
    else:  # redacted thinking, server tool blocks, anything newer: whole, as the stream opens them
        opened = block
    return [
        {"type": "content_block_start", "index": index, "content_block": dict(opened)},
        *({"type": "content_block_delta", "index": index, "delta": d} for d in deltas),
        {"type": "content_block_stop", "index": index},
    ]


def message_events(answer: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A Messages ``message`` as its stream: start, each block opened/filled/closed, delta, stop."""
    usage = dict(answer.get("usage") or {})
    start = {**answer, "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(answer.get("content") or ()):
        if isinstance(block, Mapping):
            events += _block_events(index, block)
    delta = {"stop_reason": answer.get("stop_reason"), "stop_sequence": answer.get("stop_sequence")}
    events.append({"type": "message_delta", "delta": delta, "usage": usage})
    events.append({"type": "message_stop"})
    return events


def replay_answer(provider: str, answer: Any, secrets: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """The stream events for a complete answer of either bundled API.

    Raises:
        MalformedResponseError: the answer has neither API's shape.
    """
    if isinstance(answer, Mapping):
        choices = answer.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
            return chat_completion_events(answer)
        if answer.get("type") == "message" and isinstance(answer.get("content"), list):
            return message_events(answer)
    raise MalformedResponseError(
        "the API answered a streaming request with JSON of an unknown shape: "
        + quote_line(repr(answer), secrets=secrets),
        provider=provider,
        status_code=200,
    )
