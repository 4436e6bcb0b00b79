"""Hypothesis strategies for agent-core values (needs ``pip install 'agent-core[testing]'``).

* :func:`messages` / :func:`sessions`: core values that round-trip through JSON;
* :func:`tool_calls`: calls in the core (OpenAI) shape, arguments as JSON text;
* :func:`native_chunks`: streamed chunks of the bundled APIs for one text
  (``"openai"``: ``chat.completion.chunk`` deltas; ``"anthropic"``: a Messages
  event stream), cut in any places;
* :func:`splits`: every way to cut a text into non-empty pieces, so a property
  test can say "however the server splits the answer, the result is the same".

Hypothesis is imported with this module, never by ``agent_core.testing``
itself, so the core install does not need it.
"""

from __future__ import annotations

import json
from typing import Any

try:
    from hypothesis import strategies as st
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    from ..errors import install_hint

    raise ImportError(f"agent_core.testing.strategies needs hypothesis: {install_hint('testing')}") from exc

from .. import Message, Session

__all__ = ["messages", "native_chunks", "sessions", "splits", "tool_calls"]

# Alphabets are listed, not drawn by Unicode category: category tables cost hypothesis a second
# or more to build in a fresh project, which its health check reports as slow generation.
_chars = st.characters(min_codepoint=0x20, max_codepoint=0x7E) | st.sampled_from("\n\té߀中😀\u200b")
_text = st.text(_chars, max_size=40)
_word = "abcdefghijklmnopqrstuvwxyz"
_names = st.builds(lambda a, b: a + b, st.sampled_from(_word), st.text(_word + "0123456789_", max_size=15))
_ids = st.text(_word + _word.upper() + "0123456789", min_size=4, max_size=12)
_json_scalars = st.none() | st.booleans() | st.integers(-10**6, 10**6) | _text


def splits(text: str, *, max_pieces: int | None = None) -> st.SearchStrategy[list[str]]:
    """Lists of non-empty strings whose concatenation is ``text`` (``[]`` for an empty text)."""
    if not text:
        return st.just([])
    limit = len(text) - 1 if max_pieces is None else min(len(text) - 1, max_pieces - 1)
    cuts = st.sets(st.integers(1, len(text) - 1), max_size=limit) if len(text) > 1 else st.just(set())

    def cut(points: set[int]) -> list[str]:
        edges = [0, *sorted(points), len(text)]
        return [text[a:b] for a, b in zip(edges, edges[1:])]

    return cuts.map(cut)


@st.composite
def tool_calls(draw: Any, name: st.SearchStrategy[str] | None = None) -> dict[str, Any]:
    """One tool call in the core shape: ``{"id", "type": "function", "function": {"name", "arguments"}}``."""
    args = draw(st.dictionaries(_names, _json_scalars, max_size=4))
    return {
        "id": "call_" + draw(_ids),
        "type": "function",
        "function": {"name": draw(name or _names), "arguments": json.dumps(args, sort_keys=True)},
    }


@st.composite
def messages(draw: Any, roles: tuple[str, ...] = ("system", "user", "assistant", "tool")) -> Message:
    """A core ``Message``; assistant messages may carry tool calls, tool messages answer one."""
    role = draw(st.sampled_from(roles))
    metadata: dict[str, Any] = {}
    if role == "assistant" and draw(st.booleans()):
        metadata["tool_calls"] = draw(st.lists(tool_calls(), min_size=1, max_size=3))
    if role == "tool":
        metadata["tool_call_id"] = "call_" + draw(_ids)
        metadata["tool_name"] = draw(_names)
    return Message(role=role, content=draw(_text), metadata=metadata or None)


@st.composite
def sessions(draw: Any, max_messages: int = 8) -> Session:
    """A ``Session`` of up to ``max_messages`` messages."""
    msgs = draw(st.lists(messages(), max_size=max_messages))
    sid = draw(st.text(_word + "0123456789-", min_size=1, max_size=20))
    return Session(session_id=sid, messages=msgs)


def _openai_chunks(pieces: list[str]) -> list[dict[str, Any]]:
    head = {"id": "chatcmpl-prop", "object": "chat.completion.chunk", "created": 0, "model": "m"}
    out = [{**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}]
    out += [{**head, "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]} for p in pieces]
    out.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return out


def _anthropic_chunks(pieces: list[str]) -> list[dict[str, Any]]:
    start = {"id": "msg_prop", "type": "message", "role": "assistant", "model": "m", "content": [],
             "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}
    out: list[dict[str, Any]] = [
        {"type": "message_start", "message": start},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    ]
    out += [{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}} for p in pieces]
    out += [
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
         "usage": {"output_tokens": max(1, len(pieces))}},
        {"type": "message_stop"},
    ]
    return out


def native_chunks(provider: str, text: st.SearchStrategy[str] | None = None) -> st.SearchStrategy[tuple[str, list]]:
    """``(text, chunks)``: a text and the parsed stream events ``provider``'s API would send for it, cut anywhere.

    Raises:
        ValueError: ``provider`` is not ``"openai"`` or ``"anthropic"``.
    """
    build = {"openai": _openai_chunks, "anthropic": _anthropic_chunks}.get(provider)
    if build is None:
        raise ValueError(f"native_chunks knows 'openai' and 'anthropic', not {provider!r}")
    return (_text if text is None else text).flatmap(lambda t: splits(t).map(lambda pieces: (t, build(pieces))))
