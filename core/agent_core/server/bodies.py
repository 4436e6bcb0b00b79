"""Request bodies, parsed once where they enter into typed values.

Every JSON body is decoded here and nowhere else: checked for nesting depth,
then converted into the route's :class:`msgspec.Struct`, so a wrong type
anywhere is a 400 whose message gives the path of the field
(``Expected `str`, got `int` - at `$.messages[1].role```). The routes then
trust what they get. The sessions API's own bodies refuse unknown fields (a
typo is named rather than ignored). The facades' bodies declare every field
their API documents; :func:`parse_fields` hands back the others too, so a
field no plugin can honour is refused by name rather than dropped.
"""

from __future__ import annotations

import re
from typing import Any, Literal, TypeVar

import msgspec

from .errors import ApiError

__all__ = [
    "ActionBody",
    "ChatBody",
    "ChatMessage",
    "ChatTool",
    "CreateSessionBody",
    "TurnBody",
    "json_depth",
    "parse_body",
    "parse_fields",
]

T = TypeVar("T")


class ChatPart(msgspec.Struct):
    type: str
    text: str | None = None


class ChatFunctionCall(msgspec.Struct):
    name: str
    arguments: str = ""


class ChatToolCall(msgspec.Struct):
    id: str
    function: ChatFunctionCall
    type: Literal["function"] = "function"


class ChatMessage(msgspec.Struct):
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[ChatPart] | None = None
    tool_calls: list[ChatToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    function_call: ChatFunctionCall | None = None  # the legacy functions API's one call
    refusal: str | None = None


class FunctionSpec(msgspec.Struct, omit_defaults=True):
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class ChatTool(msgspec.Struct):
    type: Literal["function"]
    function: FunctionSpec


class StreamOptions(msgspec.Struct):
    include_usage: bool | None = None


class ChatBody(msgspec.Struct):
    """A Chat Completions request: every field OpenAI documents (what each becomes: ``docs/server.md``)."""

    model: str
    messages: list[ChatMessage]
    stream: bool | None = None
    stream_options: StreamOptions | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    stop: str | list[str] | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    logit_bias: dict[str, float] | None = None
    tool_choice: str | dict[str, Any] | None = None
    response_format: dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    user: str | None = None
    safety_identifier: str | None = None
    prompt_cache_key: str | None = None
    reasoning_effort: str | None = None
    verbosity: str | None = None
    service_tier: str | None = None
    n: int | None = None
    logprobs: bool | None = None
    top_logprobs: int | None = None
    tools: list[ChatTool] | None = None
    functions: list[FunctionSpec] | None = None  # the legacy form of tools
    function_call: str | dict[str, Any] | None = None  # the legacy form of tool_choice
    store: bool | None = None
    metadata: dict[str, str] | None = None
    modalities: list[str] | None = None
    audio: dict[str, Any] | None = None
    prediction: dict[str, Any] | None = None
    web_search_options: dict[str, Any] | None = None


class TurnBody(msgspec.Struct, forbid_unknown_fields=True):
    """``POST /v1/sessions/{id}/turns``: the new message and the request's own config."""

    message: str | dict[str, Any]
    config: dict[str, Any] | None = None


class CreateSessionBody(msgspec.Struct, forbid_unknown_fields=True):
    """``POST /v1/sessions``."""

    id: str | None = None
    metadata: dict[str, Any] | None = None
    messages: list[str | dict[str, Any]] | None = None


class ActionBody(msgspec.Struct, forbid_unknown_fields=True):
    """``POST /v1/sessions/{id}/actions/{action}``."""

    params: dict[str, Any] | None = None
    config: dict[str, Any] | None = None


_decode = msgspec.json.Decoder().decode


def json_depth(value: Any, limit: int) -> int:
    """How deeply ``value`` nests (a scalar is 0), counting no further than ``limit + 1``."""
    deepest = 0
    stack = [(value, 1)] if isinstance(value, (dict, list)) else []
    while stack:
        item, depth = stack.pop()
        if depth > deepest:
            deepest = depth
            if deepest > limit:
                break
        children = item.values() if isinstance(item, dict) else item
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return deepest


def parse_fields(raw: bytes, kind: type[T], *, max_depth: int) -> tuple[T, dict[str, Any]]:
    """``raw`` as a ``kind`` value, and the top-level fields ``kind`` does not declare (by name)."""
    value = _object_of(raw, max_depth, empty_ok=False)
    known = set(kind.__struct_fields__)  # type: ignore[attr-defined]
    return _converted(value, kind), {k: v for k, v in value.items() if k not in known}


def parse_body(raw: bytes, kind: type[T], *, max_depth: int, empty_ok: bool = False) -> T:
    """``raw`` as a ``kind`` value.

    Raises:
        ApiError: 400 ``invalid_json`` (not JSON, not an object, too deep) or
            ``invalid_request_error`` (a field of the wrong type or value, named by its path).
    """
    return _converted(_object_of(raw, max_depth, empty_ok=empty_ok), kind)


def _object_of(raw: bytes, max_depth: int, *, empty_ok: bool) -> dict[str, Any]:
    if not raw.strip():
        if empty_ok:
            return {}
        raise ApiError(400, "invalid_json", "the request body is empty; send a JSON object")
    try:
        value = _decode(raw)
    except RecursionError:
        raise ApiError(400, "invalid_json", f"the request body nests deeper than {max_depth} levels") from None
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ApiError(400, "invalid_json", f"the request body is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ApiError(400, "invalid_json", f"the request body must be a JSON object, got {type(value).__name__}")
    if json_depth(value, max_depth) > max_depth:
        raise ApiError(400, "invalid_json",
                       f"the request body nests deeper than {max_depth} levels (max_json_depth)")
    return value


def _converted(value: dict[str, Any], kind: type[T]) -> T:
    try:
        return msgspec.convert(value, kind)
    except msgspec.ValidationError as exc:
        raise ApiError(400, "invalid_request_error", str(exc), param=_param(str(exc))) from None


def _param(message: str) -> str | None:
    """The field a msgspec validation message is about, as ``messages[0].role``."""
    where = _AT.search(message)
    path = where.group(1) if where else ""
    missing = _MISSING.search(message)
    if missing:
        path = f"{path}.{missing.group(1)}" if path else missing.group(1)
    return path or None


_AT = re.compile(r"- at `\$\.?([^`]*)`$")
_MISSING = re.compile(r"missing required field `([^`]*)`")
