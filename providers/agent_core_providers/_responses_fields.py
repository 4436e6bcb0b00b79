"""Chat Completions' names for what the Responses API spells its own way, read by ``openai_responses``.

A client of any dialect sets one config key per meaning (the server's facades write Chat
Completions' names: ``response_format``, ``verbosity``, ``tool_choice`` in its object form), so
this provider reads those keys and writes the Responses API's spelling: ``text.format`` with
the schema's fields at the top level, ``text.verbosity``, and the flat ``tool_choice`` objects.
Each mapping is one-to-one, so a Responses body that a facade wrote in Chat's names arrives
upstream as the client wrote it. So do a request's ``instructions``: a system message marked
``metadata["instructions"]`` (as the Responses facade marks them) goes out as the body's
``instructions`` when it comes first, not as an input item.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent_core.errors import ConfigError

__all__ = ["TEXT_FIELDS", "instructions_of", "responses_reasoning", "responses_text", "responses_tool_choice"]

Dict = dict[str, Any]

#: the config keys read here, for the provider's schema
TEXT_FIELDS: Dict = {
    "response_format": {"type": "object", "description": 'the answer\'s format in Chat Completions\' shape '
                        '({"type": "json_schema", "json_schema": {...}}), sent as text.format'},
    "verbosity": {"type": "string", "description": '"low", "medium" or "high": sent as text.verbosity'},
}
_SCHEMA_KEYS = ("name", "schema", "strict", "description")


def _format(value: Any) -> Dict:
    """``response_format`` as ``text.format``: a json_schema's fields move up a level."""
    if not isinstance(value, Mapping) or not isinstance(value.get("type"), str):
        raise ConfigError(f"openai_responses: response_format must be an object with a type, got {value!r}",
                          key="response_format")
    if value["type"] != "json_schema":
        return dict(value)
    schema = value.get("json_schema")
    if not isinstance(schema, Mapping):
        raise ConfigError("openai_responses: response_format json_schema needs its json_schema object",
                          key="response_format")
    return {"type": "json_schema", **{k: schema[k] for k in _SCHEMA_KEYS if schema.get(k) is not None}}


def responses_text(config: Mapping[str, Any]) -> Dict | None:
    """``text``: the config's own ``text`` object, with ``response_format`` and ``verbosity`` written in.

    Raises:
        ConfigError: ``response_format`` is not a format object.
    """
    text = dict(config["text"]) if isinstance(config.get("text"), Mapping) else {}
    if config.get("response_format") is not None:
        text["format"] = _format(config["response_format"])
    if config.get("verbosity") is not None:
        text["verbosity"] = config["verbosity"]
    return text or None


def _flat_tool(tool: Any) -> Any:
    """A chosen tool in Chat's shape (``{"type": "function", "function": {"name"}}``) as the Responses one."""
    if isinstance(tool, Mapping):
        for kind in ("function", "custom"):
            inner = tool.get(kind)
            if tool.get("type") == kind and isinstance(inner, Mapping):
                return {"type": kind, "name": inner.get("name")}
    return tool


def responses_tool_choice(choice: Any) -> Any:
    """``tool_choice`` in the Responses layout; Chat's object forms are flattened, the API's own pass.

    Chat's ``{"type": "allowed_tools", "allowed_tools": {"mode", "tools"}}`` becomes the
    Responses ``{"type": "allowed_tools", "mode", "tools"}`` with each tool flattened too.
    """
    if not isinstance(choice, Mapping):
        return choice
    allowed = choice.get("allowed_tools")
    if choice.get("type") == "allowed_tools" and isinstance(allowed, Mapping):
        return {"type": "allowed_tools", "mode": allowed.get("mode"),
                "tools": [_flat_tool(t) for t in allowed.get("tools") or ()]}
    return _flat_tool(choice)


def responses_reasoning(config: Mapping[str, Any]) -> Dict:
    """``reasoning``: the effort asked for, with a summary (``auto`` unless ``reasoning_summary`` says)."""
    effort = config.get("reasoning_effort")
    summary = config.get("reasoning_summary") or ("auto" if effort else None)
    out: Dict = {}
    if effort:
        out["effort"] = effort
    if summary and summary != "none":
        out["summary"] = summary
    return out


def instructions_of(native_messages: list[Dict], configured: Any) -> tuple[Any, list[Dict]]:
    """The body's ``instructions`` and the native entries left for ``input``.

    The config's ``instructions`` wins; else a first system entry marked ``_instructions``
    (text only) is taken out of the input to be them.
    """
    if configured:
        return configured, native_messages
    first = native_messages[0] if native_messages else None
    if first is not None and first.get("_instructions") and isinstance(first.get("content"), str):
        return first["content"], native_messages[1:]
    return None, native_messages
