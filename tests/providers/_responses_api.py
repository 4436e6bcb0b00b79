"""The Responses API's own request checks, for a scripted upstream that refuses what it refuses.

An upstream that takes any body hides shape bugs: ``text.format`` in Chat Completions'
nesting, a ``tool_choice`` or a tool in Chat's shape, a reasoning item without its
``summary``, or one without ``encrypted_content`` while ``store`` is false, all pass a
lenient test and fail against the real API. :func:`responses_fault` says why the API would
refuse a body (None: it takes it); :func:`refuse_like_responses` installs it on a
:class:`ScriptedServer`, answering a refused body with the API's 400 (or 404 for an item it
does not keep) in its error shape, without using a scripted reply.

The rules follow the API reference of ``POST /v1/responses`` (request body, input items,
``text.format``, ``tool_choice``, ``include``); the messages and codes are the API's own
wording (``Unknown parameter: 'x'.``, ``Missing required parameter: 'x'.``,
``unknown_parameter``, ``missing_required_parameter``, ``invalid_value``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["BODY_FIELDS", "INCLUDABLE", "refuse_like_responses", "responses_error", "responses_fault"]

BODY_FIELDS = frozenset({
    "model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls", "stream", "stream_options",
    "max_output_tokens", "max_tool_calls", "temperature", "top_p", "top_logprobs", "user", "safety_identifier",
    "prompt_cache_key", "prompt_cache_retention", "service_tier", "reasoning", "text", "include", "truncation",
    "store", "metadata", "background", "previous_response_id", "conversation", "prompt",
})
INCLUDABLE = frozenset({
    "file_search_call.results", "web_search_call.results", "web_search_call.action.sources",
    "message.input_image.image_url", "computer_call_output.output.image_url", "code_interpreter_call.outputs",
    "reasoning.encrypted_content", "message.output_text.logprobs",
})
_FORMATS = {"text": {"type"}, "json_object": {"type"},
            "json_schema": {"type", "name", "schema", "strict", "description"}}
_CHOICE_KEYS = {"function": {"type", "name"}, "custom": {"type", "name"}, "allowed_tools": {"type", "mode", "tools"},
                "file_search": {"type"}, "web_search_preview": {"type"}, "computer_use_preview": {"type"},
                "code_interpreter": {"type"}, "image_generation": {"type"}, "mcp": {"type", "server_label", "name"}}
_FUNCTION_TOOL = {"type", "name", "description", "parameters", "strict"}
_ITEM_KEYS = {
    "message": {"type", "role", "content", "id", "status"},
    "function_call": {"type", "call_id", "name", "arguments", "id", "status"},
    "function_call_output": {"type", "call_id", "output", "id", "status"},
    "reasoning": {"type", "id", "summary", "content", "encrypted_content", "status"},
}
_REQUIRED = {"function_call": ("call_id", "name", "arguments"), "function_call_output": ("call_id", "output"),
             "reasoning": ("id", "summary")}

Fault = tuple[int, str, str, str]  # status, code, param, message


def _unknown(param: str) -> Fault:
    return 400, "unknown_parameter", param, f"Unknown parameter: '{param}'."


def _missing(param: str) -> Fault:
    return 400, "missing_required_parameter", param, f"Missing required parameter: '{param}'."


def _invalid(param: str, message: str) -> Fault:
    return 400, "invalid_value", param, message


def _extra(value: Mapping[str, Any], allowed: set[str] | frozenset[str], where: str) -> Fault | None:
    extra = sorted(set(value) - set(allowed))
    return _unknown(f"{where}.{extra[0]}" if where else extra[0]) if extra else None


def _text_fault(text: Any) -> Fault | None:
    if not isinstance(text, Mapping):
        return _invalid("text", "Invalid type for 'text': expected an object.")
    fault = _extra(text, {"format", "verbosity"}, "text")
    if fault or "format" not in text:
        return fault
    fmt = text["format"]
    kind = fmt.get("type") if isinstance(fmt, Mapping) else None
    if kind not in _FORMATS:
        return _invalid("text.format.type", f"Invalid value: {kind!r}. Supported values are: 'text', "
                                            "'json_schema', and 'json_object'.")
    fault = _extra(fmt, _FORMATS[kind], "text.format")
    if fault:
        return fault
    for key in ("name", "schema") if kind == "json_schema" else ():
        if key not in fmt:
            return _missing(f"text.format.{key}")
    return None


def _choice_fault(choice: Any) -> Fault | None:
    if isinstance(choice, str):
        return None if choice in ("auto", "none", "required") else _invalid("tool_choice", f"Invalid value: {choice!r}.")
    kind = choice.get("type") if isinstance(choice, Mapping) else None
    if kind not in _CHOICE_KEYS:
        return _invalid("tool_choice.type", f"Invalid value: {kind!r}.")
    fault = _extra(choice, _CHOICE_KEYS[kind], "tool_choice")
    if fault:
        return fault
    if kind in ("function", "custom") and not isinstance(choice.get("name"), str):
        return _missing("tool_choice.name")
    if kind == "allowed_tools":
        if choice.get("mode") not in ("auto", "required"):
            return _invalid("tool_choice.mode", f"Invalid value: {choice.get('mode')!r}.")
        for i, tool in enumerate(choice.get("tools") or ()):
            if not isinstance(tool, Mapping) or (tool.get("type") == "function" and "name" not in tool):
                return _missing(f"tool_choice.tools[{i}].name")
    return None


def _tools_fault(tools: Any) -> Fault | None:
    for i, tool in enumerate(tools if isinstance(tools, list) else ()):
        if isinstance(tool, Mapping) and tool.get("type") == "function":
            if "name" not in tool:
                return _missing(f"tools[{i}].name")
            fault = _extra(tool, _FUNCTION_TOOL, f"tools[{i}]")
            if fault:
                return fault
    return None


def _reasoning_fault(item: Mapping[str, Any], where: str, store: bool, following: Any) -> Fault | None:
    for part in item.get("summary") or ():
        if not isinstance(part, Mapping) or part.get("type") != "summary_text" or "text" not in part:
            return _invalid(f"{where}.summary", "Invalid summary part: expected a summary_text with its text.")
    if not store and not isinstance(item.get("encrypted_content"), str):
        return (404, "not_found", where, f"Item with id '{item.get('id')}' not found. Items are not persisted "
                "when `store` is set to false. Try again with `store` set to true, or remove this item from your input.")
    kind = following.get("type", "message") if isinstance(following, Mapping) else None
    if kind not in ("message", "function_call", "reasoning") or (
            kind == "message" and following.get("role") != "assistant"):
        return _invalid(where, f"Item '{item.get('id')}' of type 'reasoning' was provided without its required "
                               "following item.")
    return None


def _input_fault(items: Any, store: bool) -> Fault | None:
    if isinstance(items, str):
        return None
    if not isinstance(items, list):
        return _invalid("input", "Invalid type for 'input': expected a string or an array.")
    for i, item in enumerate(items):
        where = f"input[{i}]"
        if not isinstance(item, Mapping):
            return _invalid(where, f"Invalid type for '{where}': expected an object.")
        kind = item.get("type", "message")
        if kind not in _ITEM_KEYS:
            return _invalid(f"{where}.type", f"Invalid value: {kind!r}.")
        fault = _extra(item, _ITEM_KEYS[kind], where)
        if fault:
            return fault
        for key in _REQUIRED.get(kind, ("role", "content")):
            if key not in item:
                return _missing(f"{where}.{key}")
        if kind == "reasoning":
            fault = _reasoning_fault(item, where, store, items[i + 1] if i + 1 < len(items) else None)
            if fault:
                return fault
    return None


def responses_fault(body: Any) -> Fault | None:
    """Why the Responses API would refuse this body: ``(status, code, param, message)``; None when it takes it."""
    if not isinstance(body, Mapping):
        return _invalid("body", "We could not parse the JSON body of your request.")
    fault = _extra(body, BODY_FIELDS, "")
    if fault:
        return fault
    if "model" not in body:
        return _missing("model")
    for name in ("text", "tool_choice", "tools"):
        if name in body:
            fault = {"text": _text_fault, "tool_choice": _choice_fault, "tools": _tools_fault}[name](body[name])
            if fault:
                return fault
    if "reasoning" in body:
        fault = _extra(body["reasoning"], {"effort", "summary", "generate_summary"}, "reasoning")
        if fault:
            return fault
    for i, value in enumerate(body.get("include") or ()):
        if value not in INCLUDABLE:
            return _invalid(f"include[{i}]", f"Invalid value: {value!r}. Supported values are: "
                                             + ", ".join(f"'{v}'" for v in sorted(INCLUDABLE)) + ".")
    return _input_fault(body.get("input"), body.get("store", True) is not False)


def responses_error(fault: Fault) -> tuple[int, dict[str, Any]]:
    """The status and body the API answers a refused request with."""
    status, code, param, message = fault
    return status, {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}


def refuse_like_responses(server: Any) -> Any:
    """Make ``server`` (a :class:`ScriptedServer`) refuse, with the API's error, what the Responses API refuses."""
    from ._server import json_reply

    def check(request: Any) -> Any:
        if request.method != "POST" or not request.path.endswith("/responses"):
            return None
        fault = responses_fault(request.body)
        if fault is None:
            return None
        status, body = responses_error(fault)
        return json_reply(body, status)

    server.check = check
    return server
