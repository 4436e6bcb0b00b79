"""What each field of a Chat Completions request becomes.

Every field OpenAI documents is named here with its fate, so none is dropped without
a word (``docs/server.md`` has the same table for people):

* **passed**: becomes the config key of the same name, read by the plugins that run
  (the ``openai`` provider sends it upstream). When the selected provider reads another
  key for the same thing (``max_tokens`` for ``max_completion_tokens``, ``stop_sequences``
  for ``stop``), it is renamed; when it reads none, the request is a 400 naming the field,
  unless the value asks nothing (``tool_choice: "auto"``) or the field changes nothing
  such a provider could honour (a token cap for a provider that counts no tokens).
* **mapped**: the legacy ``functions`` and ``function_call`` become ``tools`` and
  ``tool_choice``; ``tools`` become the ``client_tools`` the server offers but never runs.
* **ignored**: ``store`` and ``metadata`` mean something only to OpenAI's own platform
  (its stored completions); ``stream_options`` shapes the stream and is read by the route.

A field the body does not declare is passed as a config key of its name when a running
plugin declares that key (``top_k`` for a provider that reads it), and refused otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import AbstractSet, Any

import msgspec

from .body import ChatBody
from ...http.errors import ApiError
from ..fields import with_extra_fields

__all__ = ["ASKS_NOTHING", "DROPPABLE", "IGNORED", "PASSED", "chat_config", "droppable"]

#: wire fields passed as the config key of the same name
PASSED = (
    "max_tokens", "max_completion_tokens", "temperature", "top_p", "seed", "stop", "presence_penalty",
    "frequency_penalty", "logit_bias", "tool_choice", "response_format", "parallel_tool_calls", "user",
    "safety_identifier", "prompt_cache_key", "reasoning_effort", "verbosity", "service_tier", "logprobs",
    "top_logprobs", "modalities", "audio", "prediction", "web_search_options",
)
#: values that ask nothing of the model: left out when no running plugin reads the key
ASKS_NOTHING: dict[str, Callable[[Any], bool]] = {
    "tool_choice": lambda v: v in ("auto", "none"),
    "response_format": lambda v: isinstance(v, Mapping) and v.get("type") == "text",
    "parallel_tool_calls": lambda v: True,  # a permission, not a demand
    "logprobs": lambda v: v is False,
    "top_logprobs": lambda v: v == 0,
    "modalities": lambda v: v == ["text"],
    "service_tier": lambda v: v in ("auto", "default"),
}
#: fields left out, whatever their value, when the running provider lacks them: nothing it could honour changes
DROPPABLE = frozenset({"max_tokens", "max_completion_tokens", "seed", "user", "safety_identifier",
                       "prompt_cache_key", "service_tier"})
#: fields never passed on (see the module's docstring)
IGNORED = ("store", "metadata", "stream_options")


def droppable(key: str, value: Any) -> bool:
    """Whether a client key the running plugins do not read may be left out rather than refused."""
    return key in DROPPABLE or (key in ASKS_NOTHING and ASKS_NOTHING[key](value))


def _legacy_tools(body: ChatBody) -> tuple[list[dict[str, Any]] | None, Any]:
    """``functions``/``function_call`` as ``tools``/``tool_choice`` (both forms at once is a 400)."""
    if body.functions is None and body.function_call is None:
        return None, None
    if body.tools is not None or body.tool_choice is not None:
        raise ApiError(400, "invalid_request_error",
                       "functions: send either tools/tool_choice or the legacy functions/function_call, not both",
                       param="functions")
    tools = [{"type": "function", "function": msgspec.to_builtins(f)} for f in body.functions or ()]
    choice = body.function_call
    if isinstance(choice, Mapping):
        choice = {"type": "function", "function": {"name": choice.get("name")}}
    return tools, choice


def chat_config(body: ChatBody, rest: Mapping[str, Any], model: str, installed: AbstractSet[str]) -> dict[str, Any]:
    """The client's part of the config for a request (the server's policy decides what of it runs).

    ``model`` is the server's name for the model the client asked for; ``rest`` holds the
    body's fields that Chat Completions does not document, passed on only when some
    installed plugin reads a key of that name (``installed``).
    """
    config: dict[str, Any] = {"model": model}
    for field in PASSED:
        value = getattr(body, field)
        if value is not None:
            config[field] = value
    legacy_tools, legacy_choice = _legacy_tools(body)
    if legacy_choice is not None:
        config["tool_choice"] = legacy_choice
    tools = legacy_tools if legacy_tools is not None else [msgspec.to_builtins(t) for t in body.tools or ()]
    if tools:
        config["client_tools"] = tools
    with_extra_fields(config, rest, installed, "Chat Completions")
    return config
