"""Optional request-body fields: sampling parameters and ``extra_body``.

Each provider declares the optional body fields its API takes in its config
schema (so a typo is pointed out and a wrong type is refused before any
request), and sends a field only when the config sets it: a server that does
not know a field never sees it unless the caller asked for it.

``extra_body`` is the way out for everything else a server accepts (vLLM's
``guided_json``, llama.cpp's ``min_p``, a new API field): its keys are merged
into the request body as they are, last, so they win over what the provider
built.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["ANTHROPIC_FIELDS", "EXTRA_BODY", "OPENAI_FIELDS", "optional_fields", "with_extra_body"]

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
}

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


def with_extra_body(payload: Mapping[str, Any], config: Mapping[str, Any]) -> Dict:
    """``payload`` with ``config["extra_body"]`` merged in at the top level."""
    extra = config.get("extra_body")
    return {**payload, **extra} if extra else dict(payload)
