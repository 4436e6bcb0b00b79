"""Wire-format builders: the exact SSE bodies the two APIs send, for scripting the server."""

from __future__ import annotations

from typing import Any

from ._server import Reply, json_reply, sse, sse_reply

# -- OpenAI Chat Completions ---------------------------------------------------------


def oa_chunk(
    delta: dict | None = None, finish: str | None = None, *, usage: dict | None = None, choices: bool = True
) -> bytes:
    body: dict[str, Any] = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    body["choices"] = [{"index": 0, "delta": delta or {}, "finish_reason": finish}] if choices else []
    if usage is not None:
        body["usage"] = usage
    return sse(body)


OA_DONE = sse("[DONE]")
OA_USAGE = {
    "prompt_tokens": 11,
    "completion_tokens": 7,
    "total_tokens": 18,
    "prompt_tokens_details": {"cached_tokens": 4},
    "completion_tokens_details": {"reasoning_tokens": 0},
}


def oa_text(*pieces: str, usage: dict | None = OA_USAGE) -> Reply:
    """A complete streamed text answer."""
    parts = [oa_chunk({"role": "assistant", "content": ""})]
    parts += [oa_chunk({"content": p}) for p in pieces]
    parts.append(oa_chunk({}, "stop"))
    if usage is not None:
        parts.append(oa_chunk(usage=usage, choices=False))
    return sse_reply(*parts, OA_DONE)


def oa_tool_calls() -> Reply:
    """Two parallel calls, interleaved, with arguments split mid-token."""

    def tc(index: int, **fields: Any) -> dict:
        return {"tool_calls": [{"index": index, **fields}]}

    return sse_reply(
        oa_chunk({"role": "assistant", "content": None}),
        oa_chunk(tc(0, id="call_a", type="function", function={"name": "add", "arguments": ""})),
        oa_chunk(tc(0, function={"arguments": '{"a": '})),
        oa_chunk(tc(1, id="call_b", type="function", function={"name": "mul", "arguments": '{"x"'})),
        oa_chunk(tc(0, function={"arguments": '1, "b": 2}'})),
        oa_chunk(tc(1, function={"arguments": ': 3, "y": 4}'})),
        oa_chunk({}, "tool_calls"),
        oa_chunk(usage={"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29}, choices=False),
        OA_DONE,
    )


# -- Anthropic Messages ----------------------------------------------------------------


def an_event(kind: str, **fields: Any) -> bytes:
    return sse({"type": kind, **fields}, event=kind)


def an_start(input_tokens: int = 12) -> bytes:
    return an_event(
        "message_start",
        message={
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": "claude-test",
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": input_tokens,
                "output_tokens": 1,
                "cache_read_input_tokens": 3,
                "cache_creation_input_tokens": 0,
            },
        },
    )


def an_block(index: int, block: dict, deltas: list[dict]) -> list[bytes]:
    out = [an_event("content_block_start", index=index, content_block=block)]
    out += [an_event("content_block_delta", index=index, delta=d) for d in deltas]
    out.append(an_event("content_block_stop", index=index))
    return out


def an_end(stop_reason: str = "end_turn", output_tokens: int = 15) -> list[bytes]:
    return [
        an_event(
            "message_delta",
            delta={"stop_reason": stop_reason, "stop_sequence": None},
            usage={"output_tokens": output_tokens},
        ),
        an_event("message_stop"),
    ]


def an_text(*pieces: str) -> Reply:
    return sse_reply(
        an_start(),
        an_event("ping"),
        *an_block(0, {"type": "text", "text": ""}, [{"type": "text_delta", "text": p} for p in pieces]),
        *an_end(),
    )


def an_thinking_tools() -> Reply:
    """Thinking (signed), a redacted block, text, then two tool_use blocks with fragmented input."""
    return sse_reply(
        an_start(),
        *an_block(
            0,
            {"type": "thinking", "thinking": ""},
            [
                {"type": "thinking_delta", "thinking": "The user wants "},
                {"type": "thinking_delta", "thinking": "two sums."},
                {"type": "signature_delta", "signature": "sig-AAA"},
            ],
        ),
        *an_block(1, {"type": "redacted_thinking", "data": "opaque-blob"}, []),
        *an_block(2, {"type": "text", "text": ""}, [{"type": "text_delta", "text": "Let me compute."}]),
        *an_block(
            3,
            {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {}},
            [
                {"type": "input_json_delta", "partial_json": ""},
                {"type": "input_json_delta", "partial_json": '{"a": 1, '},
                {"type": "input_json_delta", "partial_json": '"b": 2}'},
            ],
        ),
        *an_block(
            4,
            {"type": "tool_use", "id": "toolu_2", "name": "mul", "input": {}},
            [
                {"type": "input_json_delta", "partial_json": '{"x": 3, "y"'},
                {"type": "input_json_delta", "partial_json": ": 4}"},
            ],
        ),
        *an_end("tool_use", 40),
    )


def an_message(*content: dict, stop_reason: str = "end_turn") -> Reply:
    """A non-streamed Messages answer holding ``content`` blocks."""
    return json_reply({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
                       "content": list(content), "stop_reason": stop_reason, "stop_sequence": None,
                       "usage": {"input_tokens": 12, "output_tokens": 15}})
