"""What a well-formed answer looks like, checked once where it enters.

Valid JSON in a shape the API never uses (token counts as strings,
``"index": null``, ``choices: ["x"]``, a delta that is a string) is the
server's fault, or a proxy's. Left alone it would surface deep inside a hook
as a ``TypeError`` and be reported as a :class:`~agent_core.errors.PluginError`
blaming a bundled extension. So each provider's event reader (and its
non-streamed answer path) asks the functions here first; they return a short
description of the first fault, or ``None``, and :func:`malformed` turns it
into a :class:`~agent_core.errors.MalformedResponseError` quoting the event.

Only the fields the bundled plugins read are checked, with plain ``type()``
tests: unknown keys and future event or block types pass untouched. After
this gate, the hooks may trust the shapes they read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import msgspec
from agent_core.errors import MalformedResponseError

from ._errors import scrub
from ._sse import quote_line
from ._text import json_text

__all__ = [
    "anthropic_answer_fault", "anthropic_event_fault", "malformed", "openai_answer_fault", "openai_chunk_fault",
    "usage_fault",
]

Dict = dict[str, Any]
# Token counts the providers add up; other usage keys (Groq's timings,
# Anthropic's service_tier, nested details) may be any JSON value.
_TOKEN_KEYS = (
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)
# Anthropic delta type -> the field holding its text, which must be a string.
_DELTA_TEXT = {
    "text_delta": "text",
    "input_json_delta": "partial_json",
    "thinking_delta": "thinking",
    "signature_delta": "signature",
}


def malformed(provider: str, value: Any, fault: str, secrets: Iterable[str | None] = ()) -> MalformedResponseError:
    """The error for ``value`` (a decoded event or answer) whose shape is wrong.

    The value is re-encoded, scrubbed of ``secrets`` and only then cut to a
    bounded quote, so a key echoed by a proxy never reaches the message.
    """
    try:
        text = json_text(value)
    except (TypeError, msgspec.EncodeError):
        text = repr(value)
    return MalformedResponseError(
        f"the server sent an answer in an unexpected shape ({fault}): {quote_line(scrub(text, secrets))}",
        provider=provider,
    )


def usage_fault(usage: Any, keys: Iterable[str] = _TOKEN_KEYS) -> str | None:
    """Why a ``usage`` object cannot be read (not an object, a count that is no integer), or None."""
    if type(usage) is not dict:
        return "usage is not an object"
    for key in keys:
        value = usage.get(key)
        if value is not None and type(value) is not int:
            return f"usage.{key} is not an integer"
    return None


def _tool_calls_fault(calls: Any) -> str | None:
    if type(calls) is not list:
        return "tool_calls is not a list"
    for call in calls:
        if type(call) is not dict:
            return "a tool call is not an object"
        if "index" in call and type(call["index"]) is not int:
            return "a tool call's index is not an integer"
        fn = call.get("function")
        if fn is not None:
            if type(fn) is not dict:
                return "a tool call's function is not an object"
            args = fn.get("arguments")
            if args is not None and type(args) is not str:
                return "a tool call's arguments are not a string"
    return None


def _content_fault(content: Any) -> str | None:
    if content is None or type(content) is str:
        return None
    if type(content) is not list:
        return "content is neither text nor a list of parts"
    for part in content:
        if type(part) is not dict:
            return "a content part is not an object"
    return None


def _message_fault(message: Dict) -> str | None:
    """The first fault of a message's (or a streamed delta's) content and tool calls."""
    fault = _content_fault(message.get("content"))
    if fault is None and message.get("tool_calls") is not None:
        fault = _tool_calls_fault(message["tool_calls"])
    return fault


def _choice_fault(answer: Dict) -> str | None:
    choices = answer.get("choices")
    if type(choices) is not list or not choices:
        return "the answer has no choices list"
    choice = choices[0]
    if type(choice) is not dict or type(choice.get("message")) is not dict:
        return "choices[0] has no message object"
    fault = _message_fault(choice["message"])
    if fault is None and choice.get("finish_reason") is not None and type(choice["finish_reason"]) is not str:
        fault = "finish_reason is not a string"
    return fault


def _content_list_fault(answer: Dict) -> str | None:
    content = answer.get("content")
    if type(content) is not list:
        return "the answer has no content list"
    for block in content:
        if type(block) is not dict or type(block.get("type")) is not str:
            return "a content block is not a typed object"
    return None


def _answer_fault(answer: Any, body_fault: Callable[[Dict], str | None]) -> str | None:
    """A non-streamed answer's first fault: not an object, then its API's ``body_fault``, then its usage."""
    if type(answer) is not dict:
        return "the answer is not an object"
    fault = body_fault(answer)
    if fault is None and answer.get("usage") is not None:
        fault = usage_fault(answer["usage"])
    return fault


def openai_chunk_fault(chunk: Dict) -> str | None:
    """The first shape fault of a Chat Completions stream chunk (an object), or None."""
    choices = chunk.get("choices")
    if choices:
        if type(choices) is not list:
            return "choices is not a list"
        for choice in choices:
            if type(choice) is not dict:
                return "a choice is not an object"
            delta = choice.get("delta")
            if delta is not None and type(delta) is not dict:
                return "delta is not an object"
            if delta:
                content = delta.get("content")
                # the usual text delta skips the call: this runs for every chunk
                if (content is not None and type(content) is not str) or delta.get("tool_calls") is not None:
                    fault = _message_fault(delta)
                    if fault:
                        return fault
            finish = choice.get("finish_reason")
            if finish is not None and type(finish) is not str:
                return "finish_reason is not a string"
    elif choices is not None and type(choices) is not list:
        return "choices is not a list"
    usage = chunk.get("usage")
    if usage is not None:
        return usage_fault(usage)
    groq = chunk.get("x_groq")  # Groq's side channel: usage in the last chunk
    if groq is not None and type(groq) is dict and groq.get("usage") is not None:
        return usage_fault(groq["usage"])
    return None


def anthropic_event_fault(event: Dict) -> str | None:
    """The first shape fault of a Messages stream event (an object), or None."""
    kind = event.get("type")
    if type(kind) is not str:
        return "the event has no type"
    if kind.startswith("content_block_"):
        if type(event.get("index")) is not int:
            return "index is not an integer"
        if kind == "content_block_delta":
            delta = event.get("delta")
            if type(delta) is not dict or type(delta.get("type")) is not str:
                return "delta is not a typed object"
            field = _DELTA_TEXT.get(delta["type"])
            if field is not None and type(delta.get(field, "")) is not str:
                return f"{delta['type']}.{field} is not a string"
        elif kind == "content_block_start":
            block = event.get("content_block")
            if type(block) is not dict or type(block.get("type")) is not str:
                return "content_block is not a typed object"
    elif kind == "message_start":
        message = event.get("message")
        if type(message) is not dict:
            return "message is not an object"
        if message.get("usage") is not None:
            return usage_fault(message["usage"])
    elif kind == "message_delta":
        delta = event.get("delta")
        if delta is not None and type(delta) is not dict:
            return "delta is not an object"
        if delta and delta.get("stop_reason") is not None and type(delta["stop_reason"]) is not str:
            return "stop_reason is not a string"
        if event.get("usage") is not None:
            return usage_fault(event["usage"])
    return None


def openai_answer_fault(answer: Any) -> str | None:
    """The first shape fault of a non-streamed Chat Completions answer, or None."""
    return _answer_fault(answer, _choice_fault)


def anthropic_answer_fault(answer: Any) -> str | None:
    """The first shape fault of a non-streamed Messages answer, or None."""
    return _answer_fault(answer, _content_list_fault)
