"""Optional request-body fields: sampling parameters and ``extra_body``.

Each provider declares the optional body fields its API takes in its config
schema (so a typo is pointed out and a wrong type is refused before any
request), and sends a field only when the config sets it: a server that does
not know a field never sees it unless the caller asked for it.

``extra_body`` is the way out for everything else a server accepts (vLLM's
``guided_json``, llama.cpp's ``min_p``, a new API field): its keys are merged
into the request body as they are, last, so they win over what the provider
built.

``max_tokens`` is the one field whose *name* depends on the model: OpenAI's
reasoning models (o1, o3, o4, gpt-5) answer 400 to ``max_tokens`` and want
``max_completion_tokens``, while llama.cpp, vLLM and older servers know only
``max_tokens``. :func:`token_limit` picks the name (``token_limit_field``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from agent_core.errors import ConfigError

__all__ = [
    "ANTHROPIC_FIELDS",
    "EXTRA_BODY",
    "OPENAI_FIELDS",
    "TOKEN_LIMIT_FIELD",
    "checked",
    "optional_fields",
    "token_limit",
    "with_extra_body",
]

Dict = dict[str, Any]

#: Chat Completions fields sent only when set (config key = body field).
OPENAI_FIELDS: dict[str, Dict] = {
    "max_completion_tokens": {
        "type": "integer",
        "description": "upper bound on generated tokens, reasoning included (newer OpenAI models)",
    },
    "seed": {"type": "integer", "description": "ask for deterministic sampling with this seed"},
    "top_p": {"type": "number", "description": "nucleus sampling: keep the tokens within this probability mass"},
    "stop": {"type": ["string", "array"], "description": "a stop sequence, or a list of up to 4"},
    "presence_penalty": {"type": "number", "description": "-2.0 to 2.0; penalise tokens already present"},
    "frequency_penalty": {"type": "number", "description": "-2.0 to 2.0; penalise tokens by their frequency"},
    "parallel_tool_calls": {"type": "boolean", "description": "allow several tool calls in one answer"},
    "response_format": {
        "type": "object",
        "description": '{"type": "json_object"} or {"type": "json_schema", "json_schema": {...}}',
    },
    "logprobs": {"type": "boolean", "description": "return the log probabilities of the output tokens"},
    "top_logprobs": {"type": "integer", "description": "with logprobs: how many alternatives per token"},
    "user": {"type": "string", "description": "an end-user id the API may use to detect abuse"},
    "safety_identifier": {"type": "string", "description": "a stable, hashed id of the end user, for abuse detection"},
    "prompt_cache_key": {"type": "string", "description": "groups requests that share a prefix, for the prompt cache"},
    "service_tier": {"type": "string", "description": '"auto", "default", "flex" or "priority"'},
    "logit_bias": {"type": "object", "description": "token id -> bias from -100 to 100"},
    "prediction": {"type": "object", "description": 'predicted output: {"type": "content", "content": ...}'},
    "web_search_options": {"type": "object", "description": "search models: how to search the web"},
    "n": {"type": "integer", "minimum": 1, "description": "how many answers to generate"},
    "reasoning_effort": {
        "type": "string",
        "description": 'reasoning models: "minimal", "low", "medium" or "high" (newer models know more values)',
    },
    "verbosity": {"type": "string", "description": 'gpt-5 models: "low", "medium" or "high"'},
}

#: The schema entry of ``token_limit_field`` (``openai``).
TOKEN_LIMIT_FIELD: Dict = {
    "token_limit_field": {
        "type": "string",
        "default": "auto",
        "enum": ["auto", "max_tokens", "max_completion_tokens"],
        "description": "the body field that carries max_tokens: auto = max_completion_tokens for OpenAI "
        "reasoning models (o1*, o3*, o4*, gpt-5*), max_tokens for every other model",
    },
}
# Model ids that refuse max_tokens: o1, o3-mini, o4-mini-2025-04-16, gpt-5, gpt-5.1, gpt-5-nano...
# (not o10 or gpt-50, and not a routed name such as "openai/gpt-5": a router maps max_tokens itself).
_REASONING_MODEL = re.compile(r"(?:o[134]|gpt-5)(?!\d)", re.IGNORECASE)

#: Messages API fields sent only when set (config key = body field).
ANTHROPIC_FIELDS: dict[str, Dict] = {
    "top_p": {"type": "number", "description": "nucleus sampling: keep the tokens within this probability mass"},
    "top_k": {"type": "integer", "description": "sample only from the k most likely tokens"},
    "stop_sequences": {"type": "array", "description": "strings that end the answer when generated"},
    "metadata": {"type": "object", "description": 'request metadata, e.g. {"user_id": "..."}'},
}

#: The schema entry of ``extra_body`` (both providers).
EXTRA_BODY: Dict = {
    "extra_body": {
        "type": "object",
        "description": "fields merged into the request body as they are (last, so they win)",
    },
}


def optional_fields(config: Mapping[str, Any], fields: Mapping[str, Any]) -> Dict:
    """The ``fields`` the config sets (not None), as body fields."""
    return {key: config[key] for key in fields if config.get(key) is not None}


def checked(config: Mapping[str, Any], fields: Mapping[str, Any], plugin: str) -> Mapping[str, Any]:
    """``config``, once every value of ``fields`` it sets is within the field's ``enum`` and ``minimum``.

    The engine checks types only; these bounds are the schema's too, so they
    are checked here, before anything is sent.

    Raises:
        ConfigError: naming the key, the value and what was expected.
    """
    for key, spec in fields.items():
        value = config.get(key)
        if value is None:
            continue
        allowed, least = spec.get("enum"), spec.get("minimum")
        if allowed is not None and value not in allowed:
            expected = "one of " + ", ".join(map(repr, allowed))
        elif least is not None and isinstance(value, (int, float)) and value < least:
            expected = f"at least {least}"
        else:
            continue
        raise ConfigError(f"[{plugin}] config key {key!r} must be {expected}, got {value!r}", key=key, plugins=[plugin])
    return config


def token_limit(config: Mapping[str, Any], model: str) -> Dict:
    """``max_tokens`` under the name the model takes (``token_limit_field``), or ``{}`` when unset.

    ``auto`` sends ``max_completion_tokens`` to OpenAI's reasoning models and
    ``max_tokens`` to every other. A ``max_completion_tokens`` set in the
    config is sent as it is and wins over ``max_tokens`` under that name.
    """
    limit = config.get("max_tokens")
    if not limit:
        return {}
    field = config.get("token_limit_field") or "auto"
    if field == "auto":
        field = "max_completion_tokens" if _REASONING_MODEL.match(model) else "max_tokens"
    if field == "max_completion_tokens" and config.get("max_completion_tokens") is not None:
        return {}
    return {field: limit}


def with_extra_body(payload: Mapping[str, Any], config: Mapping[str, Any]) -> Dict:
    """``payload`` with ``config["extra_body"]`` merged in at the top level."""
    extra = config.get("extra_body")
    return {**payload, **extra} if extra else dict(payload)
