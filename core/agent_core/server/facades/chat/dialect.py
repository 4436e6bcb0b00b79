"""OpenAI Chat Completions bodies to and from the engine's values.

A request body becomes a session (its ``messages``) and a config (``model``
names the provider and the model: ``echo``, ``openai/gpt-4o-mini``); the
engine's result becomes a ``chat.completion`` body or ``chat.completion.chunk``
SSE chunks. Kept apart from the routes so the shapes can be read in one place.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from .... import thaw as plain
from ....types import Message, Session
from ..usage_details import chat_details, chat_notes
from .body import ChatMessage, ChatPart, ChatToolCall
from .content import parts_content
from ...http.errors import ApiError
from ...http.wire import json_bytes

__all__ = ["TextFrames", "chat_session", "choice_finish", "chunk", "completion_body", "finish_reason", "logprobs_of", "reply_message",
           "reply_of", "usage_body"]

_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant", "tool": "tool",
          "function": "tool"}


def _bad(message: str, param: str | None = None) -> ApiError:
    return ApiError(400, "invalid_request_error", message, param=param)


def _content(content: str | list[ChatPart] | None, where: str, native: bool) -> tuple[Any, list[Any] | None]:
    """A message's content and its multipart items (:mod:`.content`)."""
    if content is None or isinstance(content, str):
        return content or "", None
    return parts_content(content, f"{where}.content", native)


def chat_session(session_id: str, messages: list[ChatMessage], max_messages: int, native: bool = False) -> Session:
    """The body's ``messages`` as a session (refusing, by index, what the engine could not send).

    ``native``: the model that runs is an ``openai`` one, so content parts go on as written.
    """
    if not messages:
        raise _bad("messages must be a non-empty list", "messages")
    if len(messages) > max_messages:
        raise _bad(f"messages: {len(messages)} messages is more than this server takes in one request "
                   f"({max_messages}, max_messages)", "messages")
    built = []
    legacy_id = None  # the id given to the last legacy function_call, which a "function" message answers
    for i, m in enumerate(messages):
        where = f"messages[{i}]"
        metadata: dict[str, Any] = {}
        calls = list(m.tool_calls or ())
        if m.role == "assistant" and m.function_call is not None:
            legacy_id = f"call_legacy_{i}"
            calls.append(ChatToolCall(legacy_id, m.function_call))
        if m.role == "assistant" and calls:
            metadata["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.function.name, "arguments": c.function.arguments}}
                for c in calls
            ]
        if m.role == "function":
            if legacy_id is None:
                raise _bad(f"{where}: a function message must follow an assistant function_call", where)
            metadata["tool_call_id"], legacy_id = legacy_id, None
        if native and m.name is not None and m.role in ("system", "developer", "user", "assistant"):
            metadata["name"] = m.name  # the participant's name: Chat Completions' own, so only an openai model reads it
        if m.role == "tool":
            if m.tool_call_id is None:
                raise _bad(f"{where}: a tool message needs tool_call_id", f"{where}.tool_call_id")
            metadata["tool_call_id"] = m.tool_call_id
        content, items = _content(m.content, where, native)
        try:
            built.append(Message(_ROLES[m.role], content, metadata, multipart_content=items))
        except (TypeError, ValueError) as exc:
            raise _bad(f"{where}: {exc}", where) from None
    try:
        return Session(session_id, built, {})
    except (TypeError, ValueError) as exc:
        raise _bad(f"messages: {exc}", "messages") from None


def reply_of(final_messages: Sequence[Message]) -> Message | None:
    for m in reversed(final_messages):
        if m.role == "assistant":
            return m
    return None


def wire_calls(message: Message | None) -> list[dict[str, Any]]:
    """The reply's tool calls as the API sends them (``incomplete`` calls are cut off text: left out)."""
    if message is None:
        return []
    return [
        {"id": c["id"], "type": "function",
         "function": {"name": c["function"]["name"], "arguments": c["function"].get("arguments", "")}}
        for c in message.metadata.get("tool_calls") or () if not c.get("incomplete")
    ]


def finish_reason(message: Message | None) -> str:
    if message is None:
        return "stop"
    meta = message.metadata
    if meta.get("finish_reason") == "length" or meta.get("stop_reason") == "max_tokens":
        return "length"
    if wire_calls(message):
        return "tool_calls"
    if meta.get("finish_reason") == "content_filter":
        return "content_filter"
    return "stop"


def usage_body(*usages: Any, replies: Sequence[Message | None] = ()) -> dict[str, Any]:
    """The API's usage object, summed over the turns of several choices; details from the ``replies``."""
    prompt = sum(u.input_tokens for u in usages if u is not None)
    completion = sum(u.output_tokens for u in usages if u is not None)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
            **chat_details(replies)}


def reply_message(reply: Message | None, legacy: bool = False) -> dict[str, Any]:
    """The reply as the API's ``message``: ``content`` null beside tool calls, ``refusal`` always there.

    ``legacy``: the request used ``functions``, so a call comes back as its ``function_call``.
    """
    text = reply.content if reply is not None and isinstance(reply.content, str) else ""
    calls = wire_calls(reply)
    refusal = reply.metadata.get("refusal") if reply is not None else None
    message: dict[str, Any] = {"role": "assistant", "content": text or (None if calls or refusal else ""),
                               "refusal": refusal if isinstance(refusal, str) else None}
    if calls and legacy:
        message["function_call"] = calls[0]["function"]
    elif calls:
        message["tool_calls"] = calls
    return message


def choice_finish(reply: Message | None, legacy: bool = False) -> str:
    reason = finish_reason(reply)
    return "function_call" if legacy and reason == "tool_calls" else reason


def logprobs_of(reply: Message | None) -> Any:
    """The token log-probabilities the provider kept for the reply (``{"content": [...]}``), or None."""
    value = reply.metadata.get("logprobs") if reply is not None else None
    return plain(value) if value is not None else None


def completion_body(request_id: str, model: str, replies: Sequence[Message | None], usage: Any,
                    legacy: bool = False) -> dict[str, Any]:
    """A ``chat.completion``: one choice per reply (``n``), usage summed over them."""
    choices = [{"index": i, "message": reply_message(r, legacy), "finish_reason": choice_finish(r, legacy),
                "logprobs": logprobs_of(r)} for i, r in enumerate(replies)]
    return {"id": f"chatcmpl-{request_id}", "object": "chat.completion", "created": int(time.time()),
            "model": model, "choices": choices, "usage": usage, **chat_notes(replies[0] if replies else None)}


def chunk(request_id: str, model: str, created: int, delta: dict[str, Any] | None,
          finish: str | None = None, usage: dict[str, Any] | None = None, index: int = 0,
          logprobs: Any = None, notes: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One ``chat.completion.chunk``; ``notes``: the answer's ``system_fingerprint``/``service_tier``, once known."""
    choices = [] if delta is None else [{"index": index, "delta": delta, "finish_reason": finish,
                                         "logprobs": logprobs}]
    body: dict[str, Any] = {"id": f"chatcmpl-{request_id}", "object": "chat.completion.chunk", "created": created,
                            "model": model, "choices": choices}
    if usage is not None:
        body["usage"] = usage
    if notes:
        body.update((key, value) for key, value in notes.items() if value is not None)
    return body


class TextFrames:
    """The SSE frames of a stream's text chunks, from bytes made once per stream.

    A text chunk differs from the next only in its text (and its choice's index), so
    the bytes around the text are made when the stream starts and only the text is
    encoded per chunk: the same JSON object as :func:`chunk` with ``{"content": text}``.
    """

    __slots__ = ("_heads",)

    _TAIL = b'},"finish_reason":null,"logprobs":null}]}\n\n'

    def __init__(self, request_id: str, model: str, created: int, choices: int = 1) -> None:
        start = (b'data: {"id":' + json_bytes(f"chatcmpl-{request_id}") + b',"object":"chat.completion.chunk","created":'
                 + str(int(created)).encode() + b',"model":' + json_bytes(model) + b',"choices":[{"index":')
        self._heads = [start + str(i).encode() + b',"delta":{"content":' for i in range(choices)]

    def frame(self, text: str, index: int = 0) -> bytes:
        return self._heads[index] + json_bytes(text) + self._TAIL

