"""The Responses API's wire shapes: input items, output items, usage, and what a failure says.

Pure functions, no I/O, for :mod:`.openai_responses`. The Responses API does
not speak in messages but in *items*: a request's ``input`` is a list of
items (``{"role", "content"}`` messages, ``function_call`` /
``function_call_output`` pairs, ``reasoning`` items), and an answer's
``output`` is a list of items too (``message``, ``reasoning``,
``function_call``, and the API's own tool calls such as ``web_search_call``).

The provider's native history keeps one native entry per core message (the
engine counts them one to one): an answer is stored as
``{"role": "assistant", "items": [<output items as received>], "_...": ...}``
and :func:`input_items` unrolls it into input items when the next request is
built. Keeping the items as the API sent them is what lets a stateless caller
(``store: false``) hand reasoning back: a ``reasoning`` item carries its
``encrypted_content``, which only the API can read.

Checking shapes here (:func:`event_fault`, :func:`answer_fault`) follows
:mod:`.shapes`: valid JSON in a shape the API never sends becomes a
``MalformedResponseError`` at the edge, never a ``TypeError`` inside a hook.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from agent_core.errors import LLMError

from ._errors import error_from_event
from ._openai_answer import openai_usage
from ._openai_parts import multipart_parts
from ._text import json_text, message_text
from .shapes import usage_fault

__all__ = [
    "CLIENT_ITEM_TYPES",
    "answer_fault",
    "assistant_items",
    "core_calls",
    "event_fault",
    "failure",
    "finish_reason",
    "input_content",
    "input_items",
    "items_text",
    "mark_cut_calls",
    "normalize_usage",
    "reasoning_text",
    "responses_tools",
]

Dict = dict[str, Any]

#: Output items the client deals with itself; any other type is a tool the API ran on its own side.
CLIENT_ITEM_TYPES = frozenset({"message", "reasoning", "function_call"})
_TOKEN_KEYS = ("input_tokens", "output_tokens", "total_tokens")
#: Delta events whose ``delta`` must be text (the hot path reads it as such).
_TEXT_DELTAS = frozenset({
    "response.output_text.delta",
    "response.refusal.delta",
    "response.function_call_arguments.delta",
    "response.reasoning_summary_text.delta",
    "response.reasoning_text.delta",
})
#: ``response.failed`` error codes -> the error type our table knows (others are the request's fault).
_FAILED_TYPES = {
    "server_error": "server_error",
    "rate_limit_exceeded": "rate_limit_error",
    "vector_store_timeout": "timeout_error",
}


# -- tools -------------------------------------------------------------------------------------


def responses_tools(tools: Iterable[Any]) -> list[Any]:
    """Chat Completions function tools (what the engine adapted them to) in the Responses layout.

    The Responses API wants the function's fields at the top level:
    ``{"type": "function", "name", "description", "parameters", "strict"}``.
    Anything else (a hosted tool such as ``{"type": "web_search"}`` written
    into the config by hand) is sent as it is.
    """
    out = []
    for tool in tools:
        fn = tool.get("function") if isinstance(tool, Mapping) and tool.get("type") == "function" else None
        if isinstance(fn, Mapping):
            flat = {"type": "function", **{k: v for k, v in fn.items() if v is not None}}
            flat.setdefault("parameters", {"type": "object", "properties": {}})
            out.append(flat)
        else:
            out.append(tool)
    return out


# -- core messages -> input items ----------------------------------------------------------------


def _input_text(text: str) -> Dict:
    return {"type": "input_text", "text": text}


def _input_image(url: str, detail: Any) -> Dict:
    return {"type": "input_image", "image_url": url, "detail": detail or "auto"}


def input_content(message: Mapping[str, Any]) -> Any:
    """A core message's content as an input message's ``content``: text, or input parts with images."""
    content = message.get("content")
    multipart = message.get("multipartContent")
    text = content if isinstance(content, str) else message_text(content)
    if not multipart:
        return text
    parts: list[Any] = [{"type": "input_text", "text": text}] if text else []
    parts.extend(multipart_parts(multipart, _input_text, _input_image))
    return parts


def _wire_call(call: Mapping[str, Any]) -> Dict:
    """A core tool call (Chat Completions shape) as a ``function_call`` input item."""
    fn = call.get("function") or {}
    args = fn.get("arguments")
    if not isinstance(args, str):
        args = json_text(args if args is not None else {})
    return {"type": "function_call", "call_id": call.get("id"), "name": fn.get("name"), "arguments": args}


def assistant_items(message: Mapping[str, Any]) -> list[Dict]:
    """The output items of a core assistant message the native history does not hold (another provider's).

    Reasoning items the message carries in ``metadata["reasoning_items"]`` come
    first, as the API produced them (only encrypted ones are sent without ``store``); calls marked ``incomplete`` were never made
    and are left out.
    """
    metadata = message.get("metadata") or {}
    items: list[Dict] = [dict(i) for i in metadata.get("reasoning_items") or () if isinstance(i, Mapping)]
    text = message_text(message.get("content"))
    if text:
        items.append({"type": "message", "role": "assistant",
                      "content": [{"type": "output_text", "text": text, "annotations": []}]})
    items.extend(_wire_call(c) for c in metadata.get("tool_calls") or () if not c.get("incomplete"))
    return items


# -- native history -> request input ---------------------------------------------------------------


def _sendable(item: Mapping[str, Any], store: bool) -> bool:
    """Whether a stored output item may go back as input.

    A call cut off mid-arguments was never made. Without ``store`` the API
    keeps nothing, so a reasoning item it cannot read back (no
    ``encrypted_content``) would be refused as an unknown id.
    """
    if item.get("_incomplete"):
        return False
    return store or item.get("type") != "reasoning" or bool(item.get("encrypted_content"))


def _clean(item: Mapping[str, Any]) -> Mapping[str, Any]:
    """An item without our ``_`` keys (only copied when it has one)."""
    for key in item:
        if key[:1] == "_":
            return {k: v for k, v in item.items() if k[:1] != "_"}
    return item


def input_items(native_messages: Iterable[Mapping[str, Any]], store: bool) -> list[Mapping[str, Any]]:
    """The request's ``input``: every native entry as input items, in order.

    A result whose call is not in the input (a call cut off, never sent) is
    left out as well: the API refuses an output without its call.
    """
    out: list[Mapping[str, Any]] = []
    for native in native_messages:
        items = native.get("items")
        if native.get("role") == "assistant" and isinstance(items, (list, tuple)):
            out.extend(_clean(i) for i in items if isinstance(i, Mapping) and _sendable(i, store))
        elif native.get("role") == "tool":
            out.append({"type": "function_call_output", "call_id": native.get("tool_call_id"),
                        "output": native.get("content") if isinstance(native.get("content"), str)
                        else message_text(native.get("content"))})
        else:
            out.append(_clean(native))
    calls = {i.get("call_id") for i in out if i.get("type") == "function_call"}
    if any(i.get("type") == "function_call_output" and i.get("call_id") not in calls for i in out):
        out = [i for i in out if i.get("type") != "function_call_output" or i.get("call_id") in calls]
    return out


# -- output items -> core metadata -----------------------------------------------------------------


def items_text(items: Iterable[Mapping[str, Any]], kind: str = "output_text") -> str:
    """The text of the ``message`` items' parts of type ``kind`` (``output_text`` or ``refusal``)."""
    field = "refusal" if kind == "refusal" else "text"
    return "".join(
        part.get(field) or ""
        for item in items if item.get("type") == "message"
        for part in item.get("content") or () if isinstance(part, Mapping) and part.get("type") == kind
    )


def reasoning_text(items: Iterable[Mapping[str, Any]]) -> str:
    """What the reasoning items say: their summaries, else their raw reasoning text (open-weight models)."""
    texts = []
    for item in items:
        if item.get("type") != "reasoning":
            continue
        parts = [p.get("text") or "" for p in item.get("summary") or () if isinstance(p, Mapping)]
        if not any(parts):
            parts = [p.get("text") or "" for p in item.get("content") or () if isinstance(p, Mapping)]
        texts.extend(t for t in parts if t)
    return "\n\n".join(texts)


def _is_object(arguments: Any) -> bool:
    try:
        return isinstance(json.loads(arguments), dict)
    except (TypeError, ValueError):
        return False


def core_calls(items: Iterable[Mapping[str, Any]]) -> list[Dict]:
    """The ``function_call`` items as core tool calls (Chat Completions shape); cut ones marked ``incomplete``."""
    calls = []
    for item in items:
        if item.get("type") != "function_call":
            continue
        call: Dict = {"id": item.get("call_id"), "type": "function",
                      "function": {"name": item.get("name"), "arguments": item.get("arguments") or ""}}
        if item.get("_incomplete"):
            call["incomplete"] = True
        calls.append(call)
    return calls


def mark_cut_calls(items: list[Dict], status: Any) -> list[Dict]:
    """``items`` with each call whose arguments were cut off marked ``_incomplete`` (never sent back).

    A call is cut when the answer stopped early (``status`` other than
    ``completed``) and its arguments do not parse as a JSON object, or when
    the API itself said the item is incomplete.
    """
    out = []
    for item in items:
        if item.get("type") == "function_call" and (
            item.get("status") == "incomplete" or (status != "completed" and not _is_object(item.get("arguments")))
        ):
            item = {**item, "_incomplete": True}
        out.append(item)
    return out


def finish_reason(status: Any, incomplete: Any, items: Iterable[Mapping[str, Any]]) -> str | None:
    """The answer's end in Chat Completions words, which the engine and the facades read.

    ``max_output_tokens`` becomes ``length`` (the engine's truncation rule
    reads it), ``content_filter`` stays; a completed answer with calls is
    ``tool_calls``, else ``stop``.
    """
    if status == "incomplete":
        reason = (incomplete or {}).get("reason") if isinstance(incomplete, Mapping) else None
        return "length" if reason == "max_output_tokens" else (reason or "incomplete")
    if status in (None, "completed"):
        return "tool_calls" if any(i.get("type") == "function_call" for i in items) else "stop"
    return str(status)


def normalize_usage(usage: Mapping[str, Any]) -> Dict:
    """Responses usage as ``{"input_tokens", "output_tokens", ...}`` (see :func:`openai_usage`)."""
    return openai_usage(usage, "input_tokens", "output_tokens")


# -- failures ---------------------------------------------------------------------------------------


def failure(provider: str, err: Any, secrets: tuple[str, ...]) -> LLMError:
    """The typed error for a failed response's ``error`` object (``response.failed``, a failed JSON answer).

    Its ``code`` names the cause (``server_error``, ``rate_limit_exceeded``,
    ``invalid_prompt``...) but it has no ``type``; the type our error table
    reads is derived from the code, and a code we do not know is the
    request's fault (the API lists only those three as transient).
    """
    err = dict(err) if isinstance(err, Mapping) else {"message": str(err) if err else None}
    if not err.get("type"):
        err["type"] = _FAILED_TYPES.get(str(err.get("code")), "invalid_request_error")
    return error_from_event(provider, {"error": err}, secrets)


# -- shapes ----------------------------------------------------------------------------------------


def _output_fault(output: Any) -> str | None:
    if type(output) is not list:
        return "output is not a list"
    for item in output:
        if type(item) is not dict or type(item.get("type")) is not str:
            return "an output item is not a typed object"
        if item["type"] == "function_call" and type(item.get("arguments", "")) is not str:
            return "a function call's arguments are not a string"
        if item["type"] == "message" and type(item.get("content", [])) is not list:
            return "a message item's content is not a list"
    return None


def answer_fault(answer: Any) -> str | None:
    """The first shape fault of a response object (a JSON answer, or the one a terminal event carries)."""
    if type(answer) is not dict:
        return "the response is not an object"
    if answer.get("output") is not None:
        fault = _output_fault(answer["output"])
        if fault:
            return fault
    if answer.get("usage") is not None:
        return usage_fault(answer["usage"], _TOKEN_KEYS)
    return None


def event_fault(event: Dict) -> str | None:
    """The first shape fault of a stream event (an object), or None; unknown event types pass."""
    kind = event.get("type")
    if type(kind) is not str:
        return "the event has no type"
    if kind in _TEXT_DELTAS:
        if type(event.get("delta")) is not str:
            return f"{kind} has no text delta"
        index = event.get("output_index")
        if index is not None and type(index) is not int:
            return "output_index is not an integer"
        return None
    if kind == "response.output_item.added" or kind == "response.output_item.done":
        if type(event.get("output_index", 0)) is not int:
            return "output_index is not an integer"
        item = event.get("item")
        return None if type(item) is dict and type(item.get("type")) is str else "item is not a typed object"
    if kind.startswith("response.") and "response" in event:
        return answer_fault(event["response"])
    return None
