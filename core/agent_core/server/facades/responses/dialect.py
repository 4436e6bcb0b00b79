"""OpenAI Responses bodies to and from the engine's values (``POST /v1/responses``).

A request's ``instructions`` and ``input`` items become a session; its other fields
become the client's part of the config, named as the Chat Completions facade names
them (``max_output_tokens`` is ``max_completion_tokens``, ``text.format`` is
``response_format``, ``reasoning.effort`` is ``reasoning_effort``), so one provider
reads one key whichever API the client speaks. The engine's reply becomes a
``response`` object whose ``output`` holds a ``reasoning`` item (when the provider gave
reasoning), a ``message`` item and one ``function_call`` item per tool call.

The server keeps nothing between requests, so anything that points at server-side
state (``previous_response_id``, ``conversation``, ``prompt``, an ``item_reference``) is
refused by name rather than half-honoured; a client sends the whole conversation each
time, as the Agents SDK does unless told otherwise.

Every field OpenAI documents has a fate (``docs/server.md`` has the table):

* **passed**: ``temperature``, ``top_p``, ``tool_choice``, ``parallel_tool_calls``, ``user``,
  ``safety_identifier``, ``prompt_cache_key``, ``service_tier`` under their own names;
  ``max_output_tokens``, ``text.format``, ``text.verbosity``, ``reasoning.effort`` renamed.
  A key the running provider does not read is refused or left out as on the chat facade
  (:func:`~agent_core.server.facades.chat.fields.droppable`).
* **ignored**: ``store`` (nothing is kept; the answer says ``store``'s value back),
  ``metadata`` (said back), ``include`` and ``reasoning.summary`` (they ask for things no
  provider here produces: encrypted reasoning, search results), ``truncation``,
  ``max_tool_calls`` (about OpenAI's hosted tools), ``stream_options``,
  ``prompt_cache_retention``, ``prompt_cache_options``, ``background: false``.
* **refused**: the stateful fields above, ``background: true``, ``context_management``,
  hosted tools (``web_search``, ``file_search``...), ``top_logprobs`` above 0, and input
  parts other than text.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import msgspec

from ....types import Message, Session
from ...http.errors import ApiError

__all__ = [
    "FIELDS",
    "ResponsesBody",
    "finish_of",
    "function_call_item",
    "message_item",
    "output_items",
    "reasoning_item",
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


def _messages(items: Sequence[Any]) -> list[Message]:
    """Input items as the engine's messages.

    Function calls join the assistant message just before them (the API lists a reply's
    text and its calls as separate items; the engine keeps them in one message), or start
    an empty one. Reasoning items are dropped: their content is the upstream's own
    (often encrypted) and no provider here can send it back.
    """
    out: list[Message] = []
    pending: list[dict[str, Any]] = []  # the calls of the assistant message being gathered

    def close() -> None:
        if pending:
            last = out[-1] if out and out[-1].role == "assistant" and "tool_calls" not in out[-1].metadata else None
            if last is not None:
                out[-1] = Message("assistant", last.content, {**last.metadata, "tool_calls": list(pending)})
            else:
                out.append(Message("assistant", "", {"tool_calls": list(pending)}))
            pending.clear()

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
            continue
        close()
        if kind == "message":
            role = item.get("role")
            if not isinstance(role, str) or role not in _ROLES:
                raise _bad(f"{where}.role: expected one of user, system, developer, assistant; got {role!r}",
                           f"{where}.role")
            out.append(Message(_ROLES[role], _text(item.get("content"), f"{where}.content")))
        elif kind == "function_call_output":
            output = _text(item.get("output"), f"{where}.output")
            out.append(Message("tool", output, {"tool_call_id": _string(item, "call_id", where)}))
        elif kind == "item_reference":
            raise _bad(f"{where}: item_reference needs the items OpenAI stores; this server keeps none, so send "
                       "the item itself", f"{where}.type")
        else:
            raise _bad(f"{where}.type: {kind!r} items are not supported here (messages, function_call, "
                       "function_call_output and reasoning are)", f"{where}.type")
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
        built.insert(0, Message("system", body.instructions))
    try:
        return Session(session_id, built, {})
    except (TypeError, ValueError) as exc:
        raise _bad(f"input: {exc}", "input") from None


# -- fields -> config ----------------------------------------------------------------------

#: config key -> the Responses field it comes from (for the 400 that names a field a provider cannot honour)
FIELDS = {"max_completion_tokens": "max_output_tokens", "response_format": "text.format",
          "verbosity": "text.verbosity", "reasoning_effort": "reasoning.effort", "client_tools": "tools"}
_PASSED = ("temperature", "top_p", "parallel_tool_calls", "user", "safety_identifier", "prompt_cache_key",
           "service_tier")


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


def _tool_choice(choice: str | Mapping[str, Any]) -> Any:
    if isinstance(choice, str):
        if choice not in ("auto", "none", "required"):
            raise _bad(f"tool_choice: expected auto, none or required, got {choice!r}", "tool_choice")
        return choice
    if choice.get("type") == "function" and isinstance(choice.get("name"), str):
        return {"type": "function", "function": {"name": choice["name"]}}
    raise _bad(f"tool_choice: only a function tool can be chosen, got {choice.get('type')!r}", "tool_choice")


def _response_format(fmt: Any) -> dict[str, Any]:
    if not isinstance(fmt, Mapping):
        raise _bad(f"text.format: expected an object, got {type(fmt).__name__}", "text.format")
    kind = fmt.get("type")
    if kind in ("text", "json_object"):
        return {"type": kind}
    if kind == "json_schema":
        schema = {k: fmt[k] for k in ("name", "schema", "strict", "description") if fmt.get(k) is not None}
        return {"type": "json_schema", "json_schema": schema}
    raise _bad(f"text.format.type: expected text, json_object or json_schema, got {kind!r}", "text.format.type")


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
        config["tool_choice"] = _tool_choice(body.tool_choice)
    text = body.text or {}
    if text.get("format") is not None:
        config["response_format"] = _response_format(text["format"])
    if text.get("verbosity") is not None:
        if not isinstance(text["verbosity"], str):
            raise _bad("text.verbosity: expected low, medium or high", "text.verbosity")
        config["verbosity"] = text["verbosity"]
    effort = (body.reasoning or {}).get("effort")
    if effort is not None:
        if not isinstance(effort, str):
            raise _bad("reasoning.effort: expected a string such as low, medium or high", "reasoning.effort")
        config["reasoning_effort"] = effort
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


def reasoning_item(item_id: str, text: str, status: str = "completed") -> dict[str, Any]:
    """The reply's reasoning as the API's ``reasoning`` item (its text in ``content``; no summary is made)."""
    content = [{"type": "reasoning_text", "text": text}] if status == "completed" else []
    return {"type": "reasoning", "id": item_id, "summary": [], "content": content, "status": status}


def function_call_item(call: Mapping[str, Any], status: str = "completed") -> dict[str, Any]:
    arguments = call["function"].get("arguments") or ""
    return {"type": "function_call", "id": f"fc_{call['id']}", "call_id": call["id"],
            "name": call["function"]["name"], "arguments": arguments if status == "completed" else "",
            "status": status}


def output_items(request_id: str, reply: Message | None) -> list[dict[str, Any]]:
    """The reply as output items: its reasoning, a message when it has text, then one function_call per call."""
    items: list[dict[str, Any]] = []
    reasoning = reply.metadata.get("reasoning") if reply is not None else None
    if isinstance(reasoning, str) and reasoning:
        items.append(reasoning_item(f"rs_{request_id}", reasoning))
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
                  error: dict[str, Any] | None = None) -> dict[str, Any]:
    """A ``response`` object; the request's settings are said back as the API does."""
    return {
        "id": f"resp_{request_id}", "object": "response", "created_at": created or int(time.time()),
        "status": status, "model": body.model, "output": output or [], "usage": usage,
        "error": error, "incomplete_details": incomplete, "instructions": body.instructions,
        "tools": list(body.tools or ()), "tool_choice": body.tool_choice or "auto",
        "parallel_tool_calls": True if body.parallel_tool_calls is None else body.parallel_tool_calls,
        "temperature": body.temperature, "top_p": body.top_p, "max_output_tokens": body.max_output_tokens,
        "metadata": dict(body.metadata or {}), "previous_response_id": None,
        "reasoning": {"effort": (body.reasoning or {}).get("effort"), "summary": None},
        "text": {"format": (body.text or {}).get("format") or {"type": "text"}},
        "truncation": body.truncation or "disabled", "user": body.user, "store": bool(body.store),
        "background": False, "service_tier": body.service_tier,
    }
