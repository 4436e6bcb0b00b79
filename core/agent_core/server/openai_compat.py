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

import msgspec

from ..types import Message, Session
from .bodies import ChatBody, ChatMessage, ChatPart
from .errors import ApiError

__all__ = ["chat_config", "chat_session", "chunk", "completion_body", "finish_reason", "reply_of", "split_model", "usage_body"]

# OpenAI body key -> config key, passed only when some installed plugin declares the config key.
_SAMPLING = {
    "max_tokens": "max_tokens",
    "max_completion_tokens": "max_tokens",
    "temperature": "temperature",
    "top_p": "top_p",
    "seed": "seed",
    "stop": "stop",
    "presence_penalty": "presence_penalty",
    "frequency_penalty": "frequency_penalty",
}
# OpenAI body keys passed as config keys of the same name when a plugin declares them; when none
# does, a value that changes the answer is refused (400 naming the key) instead of being dropped.
_PASSED = ("tool_choice", "response_format", "parallel_tool_calls", "user")
_HARMLESS: dict[str, Any] = {
    "tool_choice": lambda v: v == "auto",
    "response_format": lambda v: isinstance(v, Mapping) and v.get("type") == "text",
    "parallel_tool_calls": lambda v: v is True,
    "user": lambda v: True,
}
_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant", "tool": "tool"}


def _bad(message: str, param: str | None = None) -> ApiError:
    return ApiError(400, "invalid_request_error", message, param=param)


def _text(content: str | list[ChatPart] | None, where: str) -> str:
    """String content as is; a list of text parts joined (other part types are refused, by name)."""
    if content is None or isinstance(content, str):
        return content or ""
    texts = []
    for j, part in enumerate(content):
        if part.type != "text" or part.text is None:
            raise _bad(f"{where}.content[{j}]: only text parts are supported, got {part.type!r}",
                       f"{where}.content[{j}]")
        texts.append(part.text)
    return "".join(texts)


def chat_session(session_id: str, messages: list[ChatMessage], max_messages: int) -> Session:
    """The body's ``messages`` as a session (refusing, by index, what the engine could not send)."""
    if not messages:
        raise _bad("messages must be a non-empty list", "messages")
    if len(messages) > max_messages:
        raise _bad(f"messages: {len(messages)} messages is more than this server takes in one request "
                   f"({max_messages}, max_messages)", "messages")
    built = []
    for i, m in enumerate(messages):
        where = f"messages[{i}]"
        metadata: dict[str, Any] = {}
        if m.role == "assistant" and m.tool_calls:
            metadata["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.function.name, "arguments": c.function.arguments}}
                for c in m.tool_calls
            ]
        if m.role == "tool":
            if m.tool_call_id is None:
                raise _bad(f"{where}: a tool message needs tool_call_id", f"{where}.tool_call_id")
            metadata["tool_call_id"] = m.tool_call_id
        try:
            built.append(Message(_ROLES[m.role], _text(m.content, where), metadata))
        except (TypeError, ValueError) as exc:
            raise _bad(f"{where}: {exc}", where) from None
    try:
        return Session(session_id, built, {})
    except (TypeError, ValueError) as exc:
        raise _bad(f"messages: {exc}", "messages") from None


def split_model(model: str, providers: Sequence[str]) -> None:
    """Refuse (404) a ``model`` whose provider part names no installed provider."""
    if not model:
        raise _bad("model is required: a provider name, or provider/model (e.g. 'echo', 'openai/gpt-4o-mini')",
                   "model")
    provider = model.partition("/")[0]
    if provider not in providers:
        raise ApiError(404, "model_not_found",
                       f"model {model!r}: no provider named {provider!r} (installed: {', '.join(providers)})",
                       param="model")


def chat_config(body: ChatBody, providers: Sequence[str], declared: set[str]) -> dict[str, Any]:
    """The client's part of the config for a request body (the server's policy decides what of it runs).

    ``model`` names the provider and then, optionally, the model (``echo``, ``openai/gpt-4o-mini``);
    an unknown provider is refused by name (404).
    """
    split_model(body.model, providers)
    config: dict[str, Any] = {"model": body.model}
    for key, target in _SAMPLING.items():
        value = getattr(body, key)
        if value is not None and target in declared:
            config[target] = value
    if body.n is not None and body.n != 1:
        raise _bad(f"n: only one choice is supported (n=1), got {body.n!r}", "n")
    if body.logprobs or body.top_logprobs:
        raise _bad("logprobs: token log-probabilities are not relayed by this server; leave logprobs unset",
                   "logprobs")
    for key in _PASSED:
        value = getattr(body, key)
        if value is None:
            continue
        if key in declared:
            config[key] = value
        elif not _HARMLESS[key](value):
            raise _bad(f"{key}: no installed plugin supports it, so {value!r} cannot be honoured", key)
    if body.tools:
        config["client_tools"] = [msgspec.to_builtins(t) for t in body.tools]
    return config


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


def usage_body(usage: Any) -> dict[str, int]:
    return {"prompt_tokens": usage.input_tokens, "completion_tokens": usage.output_tokens,
            "total_tokens": usage.input_tokens + usage.output_tokens}


def completion_body(request_id: str, model: str, final_messages: Sequence[Message], usage: Any) -> dict[str, Any]:
    reply = reply_of(final_messages)
    content = reply.content if reply is not None else None
    message: dict[str, Any] = {"role": "assistant", "content": content if isinstance(content, str) else None}
    calls = wire_calls(reply)
    if calls:
        message["tool_calls"] = calls
    return {
        "id": f"chatcmpl-{request_id}", "object": "chat.completion", "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(reply), "logprobs": None}],
        "usage": usage_body(usage),
    }


def chunk(request_id: str, model: str, created: int, delta: dict[str, Any] | None,
          finish: str | None = None, usage: dict[str, int] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": f"chatcmpl-{request_id}", "object": "chat.completion.chunk", "created": created, "model": model,
        "choices": [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
    }
    if usage is not None:
        body["usage"] = usage
    return body
