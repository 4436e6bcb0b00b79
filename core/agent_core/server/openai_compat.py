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

from ..types import Message, Session
from .errors import ApiError

__all__ = ["chat_config", "chat_session", "completion_body", "chunk", "finish_reason", "reply_of", "usage_body"]

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


def _bad(message: str) -> ApiError:
    return ApiError(400, "invalid_request_error", message)


def _text(content: Any, where: str) -> Any:
    """String content as is; a list of text parts joined (other part types are refused, by name)."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for j, part in enumerate(content):
            if not isinstance(part, Mapping) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                kind = part.get("type") if isinstance(part, Mapping) else type(part).__name__
                raise _bad(f"{where}.content[{j}]: only text parts are supported, got {kind!r}")
            texts.append(part["text"])
        return "".join(texts)
    raise _bad(f"{where}.content must be a string or a list of text parts, got {type(content).__name__}")


def _tool_calls(calls: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(calls, list):
        raise _bad(f"{where}.tool_calls must be a list")
    out = []
    for j, call in enumerate(calls):
        fn = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str) or not isinstance(call.get("id"), str):
            raise _bad(f"{where}.tool_calls[{j}] needs an id and function.name")
        args = fn.get("arguments", "")
        out.append({"id": call["id"], "type": "function",
                    "function": {"name": fn["name"], "arguments": args if isinstance(args, str) else ""}})
    return out


def chat_session(session_id: str, messages: Any) -> Session:
    """The body's ``messages`` as a session (refusing, by index, what the engine could not send)."""
    if not isinstance(messages, list) or not messages:
        raise _bad("messages must be a non-empty list")
    built = []
    for i, m in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(m, Mapping):
            raise _bad(f"{where} must be an object")
        role = _ROLES.get(m.get("role"))  # type: ignore[arg-type]
        if role is None:
            raise _bad(f"{where}.role must be one of {sorted(_ROLES)}, got {m.get('role')!r}")
        metadata: dict[str, Any] = {}
        if role == "assistant" and m.get("tool_calls"):
            metadata["tool_calls"] = _tool_calls(m["tool_calls"], where)
        if role == "tool":
            if not isinstance(m.get("tool_call_id"), str):
                raise _bad(f"{where}: a tool message needs tool_call_id")
            metadata["tool_call_id"] = m["tool_call_id"]
        content = _text(m.get("content"), where)
        built.append(Message(role, "" if content is None else content, metadata))
    return Session(session_id, built, {})


def chat_config(body: Mapping[str, Any], providers: Sequence[str], declared: set[str],
                base: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """``(config, model name)`` for a request body; unknown providers are refused by name (404)."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise _bad("model is required: a provider name, or provider/model (e.g. 'echo', 'openai/gpt-4o-mini')")
    provider, _, model_id = model.partition("/")
    if provider not in providers:
        raise ApiError(404, "model_not_found",
                       f"model {model!r}: no provider named {provider!r} (installed: {', '.join(providers)})")
    config: dict[str, Any] = {**base, "provider": provider, "max_iterations": 1, "run_pending_tool_calls": False}
    if model_id:
        config["model"] = model_id
    for key, target in _SAMPLING.items():
        if body.get(key) is not None and target in declared:
            config[target] = body[key]
    n = body.get("n")
    if n is not None and n != 1:
        raise _bad(f"n: only one choice is supported (n=1), got {n!r}")
    if body.get("logprobs") or body.get("top_logprobs"):
        raise _bad("logprobs: token log-probabilities are not relayed by this server; leave logprobs unset")
    for key in _PASSED:
        value = body.get(key)
        if value is None:
            continue
        if key in declared:
            config[key] = value
        elif not _HARMLESS[key](value):
            raise _bad(f"{key}: no installed plugin supports it, so {value!r} cannot be honoured")
    tools = body.get("tools")
    if tools is not None:
        if not isinstance(tools, list) or not all(isinstance(t, Mapping) and t.get("type") == "function"
                                                  and isinstance(t.get("function"), Mapping) for t in tools):
            raise _bad("tools must be a list of {'type': 'function', 'function': {...}} objects")
        if tools:
            config["client_tools"] = [dict(t) for t in tools]
    config["stream"] = bool(body.get("stream"))
    return config, model


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
