"""The Responses fields whose shape differs from Chat Completions', as config keys.

The facade writes the config in Chat Completions' names (one provider reads one key
whichever API the client speaks). Each mapping here is one-to-one, and the
``openai_responses`` provider reads the same keys and writes the Responses spelling back,
so a Responses body reaches a Responses upstream as the client wrote it:

* ``text.format`` is ``response_format`` (a json_schema's ``name``, ``schema``, ``strict``
  and ``description`` move into ``json_schema``), ``text.verbosity`` is ``verbosity``;
* ``tool_choice`` in every form the API takes for function tools: ``auto``, ``none``,
  ``required``, ``{"type": "function", "name"}``, ``{"type": "allowed_tools", "mode",
  "tools"}``; a hosted or custom tool cannot be chosen, since neither can be declared here;
* ``reasoning.effort`` is ``reasoning_effort``, ``reasoning.summary`` is ``reasoning_summary``
  (``"none"`` when the client sent ``reasoning`` without one, so no summary is asked for
  behind its back);
* ``include``, ``truncation`` and ``max_tool_calls`` keep their names (``include`` only when sent).

A provider that reads none of ``include``, ``reasoning_summary``, ``truncation`` or
``max_tool_calls`` runs without them (:func:`droppable`): each asks for something only
OpenAI's platform has (encrypted reasoning, summaries, its truncation, its hosted tools).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..chat.fields import droppable as chat_droppable
from ...http.errors import ApiError

__all__ = ["DROPPABLE", "droppable", "include_of", "reasoning_config", "response_format", "tool_choice"]

#: config keys left out when no running plugin reads them (see the module docstring)
DROPPABLE = frozenset({"include", "reasoning_summary", "truncation", "max_tool_calls"})
_SCHEMA_KEYS = ("name", "schema", "strict", "description")
_FORMAT_KEYS = {"text": {"type"}, "json_object": {"type"}, "json_schema": {"type", *_SCHEMA_KEYS}}
_REASONING_KEYS = ("effort", "summary", "generate_summary")
_SUMMARIES = ("auto", "concise", "detailed")


def _bad(message: str, param: str) -> ApiError:
    return ApiError(400, "invalid_request_error", message, param=param)


def droppable(key: str, value: Any) -> bool:
    """Whether a key the running plugins do not read may be left out: Chat's rule, and :data:`DROPPABLE`."""
    return key in DROPPABLE or chat_droppable(key, value)


def response_format(fmt: Any) -> dict[str, Any]:
    """``text.format`` as Chat's ``response_format`` (400 naming the key the API would refuse)."""
    if not isinstance(fmt, Mapping):
        raise _bad(f"text.format: expected an object, got {type(fmt).__name__}", "text.format")
    kind = fmt.get("type")
    if not isinstance(kind, str) or kind not in _FORMAT_KEYS:  # a list or an object would not even hash
        raise _bad(f"text.format.type: expected text, json_object or json_schema, got {kind!r}", "text.format.type")
    extra = sorted(set(fmt) - _FORMAT_KEYS[kind])
    if extra:
        raise _bad(f"text.format.{extra[0]}: unknown parameter for a {kind} format", f"text.format.{extra[0]}")
    if kind != "json_schema":
        return {"type": kind}
    if not isinstance(fmt.get("name"), str) or not isinstance(fmt.get("schema"), Mapping):
        missing = "name" if not isinstance(fmt.get("name"), str) else "schema"
        raise _bad(f"text.format.{missing}: a json_schema format needs its {missing}", f"text.format.{missing}")
    return {"type": "json_schema", "json_schema": {k: fmt[k] for k in _SCHEMA_KEYS if fmt.get(k) is not None}}


def _function(tool: Any, where: str) -> dict[str, Any]:
    if not isinstance(tool, Mapping) or tool.get("type") != "function" or not isinstance(tool.get("name"), str):
        kind = tool.get("type") if isinstance(tool, Mapping) else type(tool).__name__
        raise _bad(f"{where}: only a function tool (with its name) can be chosen here, got {kind!r}", where)
    return {"type": "function", "function": {"name": tool["name"]}}


def tool_choice(choice: Any) -> Any:
    """``tool_choice`` in Chat's shape; a tool that cannot be declared here cannot be chosen (400)."""
    if isinstance(choice, str):
        if choice not in ("auto", "none", "required"):
            raise _bad(f"tool_choice: expected auto, none or required, got {choice!r}", "tool_choice")
        return choice
    if not isinstance(choice, Mapping):
        raise _bad("tool_choice: expected a string or an object", "tool_choice")
    if choice.get("type") != "allowed_tools":
        return _function(choice, "tool_choice")
    mode, tools = choice.get("mode"), choice.get("tools")
    if mode not in ("auto", "required"):
        raise _bad(f"tool_choice.mode: expected auto or required, got {mode!r}", "tool_choice.mode")
    if not isinstance(tools, list) or not tools:
        raise _bad("tool_choice.tools: expected a non-empty list of tools", "tool_choice.tools")
    allowed = [_function(t, f"tool_choice.tools[{i}]") for i, t in enumerate(tools)]
    return {"type": "allowed_tools", "allowed_tools": {"mode": mode, "tools": allowed}}


def reasoning_config(reasoning: Any) -> dict[str, Any]:
    """``reasoning`` as ``reasoning_effort`` and ``reasoning_summary``."""
    if reasoning is None:
        return {}
    if not isinstance(reasoning, Mapping):
        raise _bad("reasoning: expected an object", "reasoning")
    extra = sorted(set(reasoning) - set(_REASONING_KEYS))
    if extra:
        raise _bad(f"reasoning.{extra[0]}: unknown parameter", f"reasoning.{extra[0]}")
    config: dict[str, Any] = {}
    for key, field in (("reasoning_effort", "effort"), ("reasoning_summary", "summary")):
        value = reasoning.get(field)
        if field == "summary" and value is None:
            value = reasoning.get("generate_summary")  # the older name of the same setting
        if value is not None and not isinstance(value, str):
            raise _bad(f"reasoning.{field}: expected a string", f"reasoning.{field}")
        if field == "summary" and value is not None and value not in _SUMMARIES:
            raise _bad(f"reasoning.summary: expected auto, concise or detailed, got {value!r}", "reasoning.summary")
        if value is not None:
            config[key] = value
    config.setdefault("reasoning_summary", "none")
    return config


def include_of(include: Any) -> list[str]:
    """``include`` as sent (strings only).

    Without one, ``openai_responses`` may still ask for encrypted reasoning for its own
    needs; the facade shows a client ``encrypted_content`` only when its ``include`` asked.
    """
    if not isinstance(include, list) or not all(isinstance(i, str) for i in include):
        raise _bad("include: expected a list of strings", "include")
    return list(include)
