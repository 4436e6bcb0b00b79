"""OpenAI Responses bodies to and from the engine's values (``POST /v1/responses``).

A request's ``instructions`` and ``input`` items become a session; its other fields
become the client's part of the config, named as the Chat Completions facade names
them (``max_output_tokens`` is ``max_completion_tokens``, ``text.format`` is
``response_format``, ``reasoning.effort`` is ``reasoning_effort``: :mod:`.fields`),
so one provider reads one key whichever API the client speaks; ``openai_responses`` writes
each back in the Responses spelling. Reasoning items travel unchanged both ways
(:mod:`.items`). The engine's reply becomes a ``response`` object whose
``output`` holds its ``reasoning`` items (when the provider gave reasoning), a ``message``
item and one ``function_call`` item per tool call.

The server keeps nothing between requests, so anything that points at server-side
state (``previous_response_id``, ``conversation``, ``prompt``, an ``item_reference``) is
refused by name rather than half-honoured; a client sends the whole conversation each
time, as the Agents SDK does unless told otherwise.

Every field OpenAI documents has a fate (``docs/server.md`` has the table):

* **passed**: ``temperature``, ``top_p``, ``parallel_tool_calls``, ``user``,
  ``safety_identifier``, ``prompt_cache_key``, ``service_tier``, ``include``, ``truncation``,
  ``max_tool_calls`` under their own names; ``max_output_tokens``, ``tool_choice``,
  ``text.format``, ``text.verbosity``, ``reasoning.effort``, ``reasoning.summary`` mapped.
  A key the running provider does not read is refused or left out
  (:func:`~agent_core.server.facades.responses.fields.droppable`).
* **ignored**: ``store`` (nothing is kept; the answer says ``store``'s value back),
  ``metadata`` (said back), ``stream_options``, ``prompt_cache_retention``,
  ``prompt_cache_options``, ``background: false``.
* **refused**: the stateful fields above, ``background: true``, ``context_management``,
  hosted tools (``web_search``, ``file_search``...), ``top_logprobs`` above 0, and input
  parts other than text and (in a user message) images by URL.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import msgspec

from ....types import Message, Session
from ...http.errors import ApiError
from .fields import include_of, reasoning_config, response_format, tool_choice
from .items import image_parts, reasoning_input, reasoning_output

__all__ = [
    "FIELDS",
    "ResponsesBody",
    "finish_of",
    "function_call_item",
    "message_item",
    "output_items",
    "response_body",
    "responses_config",
    "responses_session",
    "usage_of",
]


class ResponsesBody(msgspec.Struct):
    """A Responses request: every field OpenAI documents (what each becomes: the module docstring)."""

    model: str
    input: str | list[dict[str, Any]] | None = None
    instructions: str | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    stream: bool | None = None
    stream_options: dict[str, Any] | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    user: str | None = None
    safety_identifier: str | None = None
    prompt_cache_key: str | None = None
    prompt_cache_retention: str | None = None
    prompt_cache_options: dict[str, Any] | None = None
    service_tier: str | None = None
    reasoning: dict[str, Any] | None = None
    text: dict[str, Any] | None = None
    include: list[str] | None = None
    truncation: str | None = None
    store: bool | None = None
    metadata: dict[str, str] | None = None
    max_tool_calls: int | None = None
    top_logprobs: int | None = None
    background: bool | None = None
    # server-side state: refused (see the module docstring)
    previous_response_id: str | None = None
    conversation: Any = None
    prompt: Any = None
    context_management: Any = None


def _bad(message: str, param: str) -> ApiError:
    return ApiError(400, "invalid_request_error", message, param=param)


# -- input items -> session ----------------------------------------------------------------

_ROLES = {"user": "user", "system": "system", "developer": "system", "assistant": "assistant"}
_TEXT_PARTS = ("input_text", "output_text", "text")


def _text(content: Any, where: str) -> str:
    """A string as is; a list of text parts joined. Any other part is a 400 naming it."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise _bad(f"{where}: expected a string or a list of content parts", where)
    texts = []
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "refusal" and isinstance(part.get("refusal"), str):
            texts.append(part["refusal"])
            continue
        if kind not in _TEXT_PARTS or not isinstance(part.get("text"), str):
            raise _bad(f"{where}[{j}]: only text parts are supported, got {kind!r}", f"{where}[{j}]")
        texts.append(part["text"])
    return "".join(texts)


def _string(item: Mapping[str, Any], key: str, where: str) -> str:
    value = item.get(key)
    if not isinstance(value, str):
        raise _bad(f"{where}.{key}: expected a string", f"{where}.{key}")
    return value


def _item_message(item: Mapping[str, Any], kind: Any, where: str, meta: dict[str, Any]) -> Message:
    """A ``message`` or ``function_call_output`` item as a message; any other kind is a 400 naming it."""
    if kind == "message":
        role = item.get("role")
        if not isinstance(role, str) or role not in _ROLES:
            raise _bad(f"{where}.role: expected one of user, system, developer, assistant; got {role!r}",
                       f"{where}.role")
        content, images = image_parts(item.get("content"), f"{where}.content") if role == "user" else (
            item.get("content"), [])
        return Message(_ROLES[role], _text(content, f"{where}.content"), meta, images or None)
    if kind == "function_call_output":
        output = _text(item.get("output"), f"{where}.output")
        return Message("tool", output, {"tool_call_id": _string(item, "call_id", where)})
    if kind == "item_reference":
        raise _bad(f"{where}: item_reference needs the items OpenAI stores; this server keeps none, so send "
                   "the item itself", f"{where}.type")
    raise _bad(f"{where}.type: {kind!r} items are not supported here (messages, function_call, "
               "function_call_output and reasoning are)", f"{where}.type")


def _messages(items: Sequence[Any]) -> list[Message]:
    """Input items as the engine's messages.

    Function calls join the assistant message just before them (the API lists a reply's
    text and its calls as separate items; the engine keeps them in one message), or start
    an empty one. Reasoning items ride, as sent, on the assistant message that follows
    them (``metadata["reasoning_items"]``, :mod:`.items`), or on one of their own
    when no answer follows.
    """
    out: list[Message] = []
    pending: list[dict[str, Any]] = []  # the calls of the assistant message being gathered
    thoughts: list[dict[str, Any]] = []  # reasoning items waiting for the answer they precede

    def taken() -> dict[str, Any]:
        meta = {"reasoning_items": list(thoughts)} if thoughts else {}
        thoughts.clear()
        return meta

    def close(answer_follows: bool = False) -> None:
        if pending:
            last = out[-1] if out and out[-1].role == "assistant" and "tool_calls" not in out[-1].metadata else None
            if last is not None:
                meta = {**last.metadata, "tool_calls": list(pending)}
                kept = [*(last.metadata.get("reasoning_items") or ()), *taken().get("reasoning_items", ())]
                if kept:
                    meta["reasoning_items"] = kept
                out[-1] = Message("assistant", last.content, meta)
            else:
                out.append(Message("assistant", "", {**taken(), "tool_calls": list(pending)}))
            pending.clear()
        elif thoughts and not answer_follows:
            out.append(Message("assistant", "", taken()))

    for i, item in enumerate(items):
        where = f"input[{i}]"
        if not isinstance(item, Mapping):
            raise _bad(f"{where}: expected an input item object", where)
        kind = item.get("type", "message")
        if kind == "function_call":
            pending.append({"id": _string(item, "call_id", where), "type": "function",
                            "function": {"name": _string(item, "name", where),
                                         "arguments": _string(item, "arguments", where)}})
            continue
        if kind == "reasoning":
            thoughts.append(reasoning_input(item, where))
            continue
        answer = kind == "message" and item.get("role") == "assistant"
        close(answer_follows=answer)
        out.append(_item_message(item, kind, where, taken() if answer else {}))
    close()
    return out


def responses_session(session_id: str, body: ResponsesBody, max_messages: int) -> Session:
    """``instructions`` and ``input`` as a session (refusing, by path, what cannot be sent)."""
    if body.input is None or body.input == [] or body.input == "":
        raise _bad("input is required: a string or a list of input items", "input")
    items = [{"role": "user", "content": body.input}] if isinstance(body.input, str) else body.input
    if len(items) > max_messages:
        raise _bad(f"input: {len(items)} items is more than this server takes in one request "
                   f"({max_messages}, max_messages)", "input")
    built = _messages(items)
    if body.instructions:
        built.insert(0, Message("system", body.instructions, {"instructions": True}))  # sent back as such
    try:
        return Session(session_id, built, {})
    except (TypeError, ValueError) as exc:
        raise _bad(f"input: {exc}", "input") from None


# -- fields -> config ----------------------------------------------------------------------

#: config key -> the Responses field it comes from (for the 400 that names a field a provider cannot honour)
FIELDS = {"max_completion_tokens": "max_output_tokens", "response_format": "text.format",
          "verbosity": "text.verbosity", "reasoning_effort": "reasoning.effort",
          "reasoning_summary": "reasoning.summary", "client_tools": "tools"}
_PASSED = ("temperature", "top_p", "parallel_tool_calls", "user", "safety_identifier", "prompt_cache_key",
           "service_tier", "truncation", "max_tool_calls")


def _refuse_state(body: ResponsesBody) -> None:
    if body.previous_response_id is not None:
        raise _bad("previous_response_id: this server keeps no responses (it is stateless); send the whole "
                   "conversation in input", "previous_response_id")
    for field in ("conversation", "prompt", "context_management"):
        if getattr(body, field) is not None:
            raise _bad(f"{field}: needs state kept on OpenAI's platform, which this server does not have", field)
    if body.background:
        raise _bad("background: this server answers in the foreground only", "background")
    if body.top_logprobs:
        raise _bad("top_logprobs: log-probabilities are not returned by this server's Responses API",
                   "top_logprobs")


def _tools(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Function tools in the Chat Completions shape the ``client_tools`` plugin offers."""
    out = []
    for i, tool in enumerate(tools):
        if tool.get("type") != "function":
            raise _bad(f"tools[{i}].type: only function tools are supported (the client runs them), got "
                       f"{tool.get('type')!r}", f"tools[{i}].type")
        if not isinstance(tool.get("name"), str):
            raise _bad(f"tools[{i}].name: a function tool needs a name", f"tools[{i}].name")
        function = {"name": tool["name"], "description": tool.get("description") or "",
                    "parameters": tool.get("parameters") or {"type": "object", "properties": {}}}
        if tool.get("strict") is not None:
            function["strict"] = tool["strict"]
        out.append({"type": "function", "function": function})
    return out


def responses_config(body: ResponsesBody, model: str) -> dict[str, Any]:
    """The client's part of the config (the server's policy decides what of it runs).

    Raises:
        ApiError: 400 naming a field that needs server-side state or a hosted tool.
    """
    _refuse_state(body)
    config: dict[str, Any] = {"model": model}
    for key in _PASSED:
        if getattr(body, key) is not None:
            config[key] = getattr(body, key)
    if body.max_output_tokens is not None:
        if body.max_output_tokens < 1:
            raise _bad("max_output_tokens must be at least 1", "max_output_tokens")
        config["max_completion_tokens"] = body.max_output_tokens
    if body.tools:
        config["client_tools"] = _tools(body.tools)
    if body.tool_choice is not None:
        config["tool_choice"] = tool_choice(body.tool_choice)
    text = body.text or {}
    extra = sorted(set(text) - {"format", "verbosity"})
    if extra:
        raise _bad(f"text.{extra[0]}: unknown parameter", f"text.{extra[0]}")
    if text.get("format") is not None:
        config["response_format"] = response_format(text["format"])
    if text.get("verbosity") is not None:
        if not isinstance(text["verbosity"], str):
            raise _bad("text.verbosity: expected low, medium or high", "text.verbosity")
        config["verbosity"] = text["verbosity"]
    config.update(reasoning_config(body.reasoning))
    if body.include is not None:
        config["include"] = include_of(body.include)
    return config


# -- reply -> response object ---------------------------------------------------------------

Status = Literal["completed", "incomplete"]


def finish_of(reply: Message | None) -> tuple[Status, dict[str, str] | None]:
    """The response's ``status`` and ``incomplete_details`` for the reply the engine gave."""
    meta = reply.metadata if reply is not None else {}
    if meta.get("finish_reason") == "length" or meta.get("stop_reason") == "max_tokens":
        return "incomplete", {"reason": "max_output_tokens"}
    if meta.get("finish_reason") == "content_filter":
        return "incomplete", {"reason": "content_filter"}
    return "completed", None


def calls_of(reply: Message | None) -> list[dict[str, Any]]:
    """The reply's complete tool calls (a call cut off mid-arguments is not one the client can run)."""
    if reply is None:
        return []
    return [c for c in reply.metadata.get("tool_calls") or () if not c.get("incomplete")]


def message_item(item_id: str, text: str, status: str = "completed") -> dict[str, Any]:
    content = [{"type": "output_text", "text": text, "annotations": []}] if status == "completed" else []
    return {"type": "message", "id": item_id, "role": "assistant", "status": status, "content": content}


def function_call_item(call: Mapping[str, Any], status: str = "completed") -> dict[str, Any]:
    arguments = call["function"].get("arguments") or ""
    return {"type": "function_call", "id": f"fc_{call['id']}", "call_id": call["id"],
            "name": call["function"]["name"], "arguments": arguments if status == "completed" else "",
            "status": status}


def output_items(request_id: str, reply: Message | None, include: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The reply as output items: its reasoning, a message when it has text, then one function_call per call."""
    items = reasoning_output(request_id, reply, include)
    text = reply.content if reply is not None and isinstance(reply.content, str) else ""
    if text:
        items.append(message_item(f"msg_{request_id}", text))
    items += [function_call_item(call) for call in calls_of(reply)]
    return items


def usage_of(usage: Any, reply: Message | None) -> dict[str, Any]:
    """The response's usage; the cached and reasoning counts come from the provider's own usage."""
    counted = (reply.metadata.get("usage") if reply is not None else None) or {}
    return {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
            "total_tokens": usage.input_tokens + usage.output_tokens,
            "input_tokens_details": {"cached_tokens": int(counted.get("cache_read_tokens") or 0)},
            "output_tokens_details": {"reasoning_tokens": int(counted.get("reasoning_tokens") or 0)}}


def response_body(request_id: str, body: ResponsesBody, created: int | None = None, *,
                  status: str = "completed", output: list[dict[str, Any]] | None = None,
                  usage: dict[str, Any] | None = None, incomplete: dict[str, str] | None = None,
                  error: dict[str, Any] | None = None, reply: Message | None = None) -> dict[str, Any]:
    """A ``response`` object; the request's settings are said back as the API does.

    ``service_tier`` is the tier the upstream says it served (``reply``'s), else the one asked for.
    """
    tier = reply.metadata.get("service_tier") if reply is not None else None
    return {
        "id": f"resp_{request_id}", "object": "response", "created_at": created or int(time.time()),
        "status": status, "model": body.model, "output": output or [], "usage": usage,
        "error": error, "incomplete_details": incomplete, "instructions": body.instructions,
        "tools": list(body.tools or ()), "tool_choice": body.tool_choice or "auto",
        "parallel_tool_calls": True if body.parallel_tool_calls is None else body.parallel_tool_calls,
        "temperature": body.temperature, "top_p": body.top_p, "max_output_tokens": body.max_output_tokens,
        "metadata": dict(body.metadata or {}), "previous_response_id": None,
        "reasoning": {"effort": (body.reasoning or {}).get("effort"), "summary": (body.reasoning or {}).get("summary")},
        "text": {"format": (body.text or {}).get("format") or {"type": "text"},
                 **({"verbosity": body.text["verbosity"]} if (body.text or {}).get("verbosity") else {})},
        "truncation": body.truncation or "disabled", "user": body.user, "store": bool(body.store),
        "background": False, "service_tier": tier if isinstance(tier, str) else body.service_tier,
    }
