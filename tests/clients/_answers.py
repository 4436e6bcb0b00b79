"""What OpenAI's and Anthropic's APIs answer, on the wire, for the scripted upstream.

An answer is played in the form the request asks for (``"stream": true`` or not), so each
answer here renders both. The layout is the APIs' own, taken from bodies recorded from the
live APIs, not from their documentation's prose:

- OpenAI non-streamed: the ``chat.completion`` bodies recorded live in openai/openai-python
  ``tests/lib/chat/test_completions.py`` (key order; ``refusal: null``; ``logprobs: null``;
  ``system_fingerprint`` last). The API indents them by two spaces.
- OpenAI streamed: ``tests/providers/recordings/openai-text.sse`` and
  ``openai-parallel-tool-calls.sse`` (compact chunks; the first delta carries the role, with
  ``content: ""`` and ``refusal: null`` for text and ``content: null`` for tool calls; tool
  call arguments split mid-token; a last chunk with ``choices: []`` and the usage, only when
  ``stream_options.include_usage`` asks for it; ``data: [DONE]``).
- OpenAI errors: ``{"error": {"message", "type", "param", "code"}}`` indented by four spaces
  with a trailing newline, as the API sends them; the texts and codes are the API's own, as
  quoted in public client fixtures (newrelic/newrelic-python-agent
  ``tests/mlmodel_openai/_mock_external_openai_server.py`` for the headers and the 401/404
  bodies; the rate-limit, quota, context-length and 500 bodies as clients record them, e.g.
  sashabaranov/go-openai's stream error test for the 500).
- Anthropic: ``tests/providers/recordings/anthropic-text.json`` and
  ``anthropic-tool-use.chunks.txt`` (event names, ``message_start`` with empty content,
  ``ping``, ``input_json_delta`` fragments, ``message_delta`` with the stop reason and usage),
  and the ``{"type": "error", "error": {"type", "message"}, "request_id"}`` error shape.

:class:`Recorded` plays a pair of bodies recorded from the live API for the same prompt, byte
for byte (``recordings/README.md``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._upstream import API, Played

__all__ = [
    "ANTHROPIC_MODELS",
    "ANTHROPIC_OVERLOADED",
    "ANTHROPIC_PROMPT_TOO_LONG",
    "ANTHROPIC_RATE_LIMITED",
    "CONTEXT_LENGTH_EXCEEDED",
    "INSUFFICIENT_QUOTA",
    "OPENAI_MODELS",
    "PARALLEL_TOOL_CALLS",
    "RATE_HEADERS",
    "RATE_LIMITED",
    "SERVER_ERROR",
    "AnthropicModels",
    "Chat",
    "Failure",
    "OpenAIModels",
    "Recorded",
    "ToolCall",
    "Usage",
]

HERE = Path(__file__).parent
PROVIDER_RECORDINGS = HERE.parent / "providers" / "recordings"

#: The ``x-ratelimit-*`` headers OpenAI sends with every answer (values of a tier-1 key).
RATE_HEADERS = {
    "x-ratelimit-limit-requests": "10000",
    "x-ratelimit-limit-tokens": "200000",
    "x-ratelimit-remaining-requests": "9999",
    "x-ratelimit-remaining-tokens": "199969",
    "x-ratelimit-reset-requests": "8.64s",
    "x-ratelimit-reset-tokens": "9ms",
}
_OPENAI_HEADERS = {
    "openai-organization": "user-scripted",
    "openai-processing-ms": "312",
    "openai-version": "2020-10-01",
    "x-request-id": "req_7c0cbd3a1f7e4e5c9b0e5f6a1d2c3b4a",
}
_ANTHROPIC_HEADERS = {"request-id": "req_011CVscripted0000000000", "anthropic-organization-id": "org-scripted"}


def _headers(content_type: str, extra: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return (("content-type", content_type), *extra.items())


def _compact(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _pieces(text: str, count: int = 3) -> list[str]:
    """``text`` cut into about ``count`` pieces, mid-word as the API cuts tokens."""
    size = max(1, -(-len(text) // count))
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


# -- OpenAI Chat Completions -----------------------------------------------------------------


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 14
    completion_tokens: int = 37
    cached_tokens: int | None = None  #: with a count, the usage has ``prompt_tokens_details`` as OpenAI's does
    reasoning_tokens: int = 0

    def openai(self) -> dict[str, Any]:
        usage: dict[str, Any] = {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                                 "total_tokens": self.prompt_tokens + self.completion_tokens}
        if self.cached_tokens is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": self.cached_tokens, "audio_tokens": 0}
        usage["completion_tokens_details"] = {"reasoning_tokens": self.reasoning_tokens}
        return usage


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  #: the JSON text, as the model wrote it


@dataclass(frozen=True)
class Chat:
    """One Chat Completions answer: text or tool calls, with usage.

    ``alternatives`` are the texts of choices 1, 2, ... for a request with ``n`` > 1 (the
    first choice is ``text``); a request without ``n`` gets one choice.
    """

    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = Usage()
    finish_reason: str | None = None  #: default ``tool_calls`` with calls, else ``stop``
    alternatives: tuple[str, ...] = ()
    model: str = "gpt-4o-mini-2024-07-18"
    id: str = "chatcmpl-BscriptedUpstream0000000001"
    created: int = 1764000000
    headers: Mapping[str, str] = field(default_factory=lambda: dict(RATE_HEADERS))
    api: API = "openai"
    service_tier: str | None = None  #: set: in the answer (every chunk), as OpenAI's carries it

    @property
    def finish(self) -> str:
        return self.finish_reason or ("tool_calls" if self.tool_calls else "stop")

    def _texts(self, n: int) -> list[str | None]:
        others = list(self.alternatives) or [self.text or ""]
        return [self.text] + [others[(i - 1) % len(others)] for i in range(1, n)]

    def play(self, request: Mapping[str, Any]) -> Played:
        n = request.get("n") if isinstance(request.get("n"), int) and request.get("n", 1) > 1 else 1
        if request.get("stream") is True:
            options = request.get("stream_options")
            usage = isinstance(options, Mapping) and options.get("include_usage") is True
            parts = self._chunks(n, usage)
            return Played(200, _headers("text/event-stream; charset=utf-8", {**_OPENAI_HEADERS, **self.headers}),
                          tuple(parts), streamed=True)
        body = {"id": self.id, "object": "chat.completion", "created": self.created, "model": self.model,
                "choices": [{"index": i, "message": self._message(text, i == 0),
                             "logprobs": None, "finish_reason": self.finish if i == 0 else "stop"}
                            for i, text in enumerate(self._texts(n))],
                "usage": self.usage.openai(), **self._tier(), "system_fingerprint": "fp_b40fb1c6fb"}
        return Played(200, _headers("application/json", {**_OPENAI_HEADERS, **self.headers}),
                      (json.dumps(body, indent=2, ensure_ascii=False).encode(),), streamed=False)

    def _tier(self) -> dict[str, Any]:
        return {} if self.service_tier is None else {"service_tier": self.service_tier}

    def _message(self, text: str | None, first: bool) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if first and self.tool_calls:
            message["tool_calls"] = [{"id": c.id, "type": "function",
                                      "function": {"name": c.name, "arguments": c.arguments}}
                                     for c in self.tool_calls]
        message["refusal"] = None
        return message

    def _chunk(self, choices: list[dict[str, Any]], usage: dict[str, Any] | None = None) -> bytes:
        body: dict[str, Any] = {"id": self.id, "object": "chat.completion.chunk", "created": self.created,
                                "model": self.model, **self._tier(), "system_fingerprint": "fp_b40fb1c6fb",
                                "choices": choices}
        if usage is not None:
            body["usage"] = usage
        return b"data: " + _compact(body) + b"\n\n"

    def _chunks(self, n: int, include_usage: bool) -> list[bytes]:
        def choice(index: int, delta: dict[str, Any], finish: str | None = None) -> list[dict[str, Any]]:
            return [{"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}]

        parts = []
        for index, text in enumerate(self._texts(n)):
            if text is None:
                parts.append(self._chunk(choice(index, {"role": "assistant", "content": None})))
            else:
                parts.append(self._chunk(choice(index, {"role": "assistant", "content": "", "refusal": None})))
                parts += [self._chunk(choice(index, {"content": p})) for p in _pieces(text)]
            if index == 0:
                for k, call in enumerate(self.tool_calls):
                    first = {"index": k, "id": call.id, "type": "function",
                             "function": {"name": call.name, "arguments": ""}}
                    parts.append(self._chunk(choice(index, {"tool_calls": [first]})))
                    parts += [self._chunk(choice(index, {"tool_calls": [{"index": k, "function": {"arguments": p}}]}))
                              for p in _pieces(call.arguments)]
        for index in range(n):
            parts.append(self._chunk(choice(index, {}, self.finish if index == 0 else "stop")))
        if include_usage:
            parts.append(self._chunk([], self.usage.openai()))
        parts.append(b"data: [DONE]\n\n")
        return parts


@dataclass(frozen=True)
class Recorded:
    """A pair of bodies recorded from the live API for one prompt: one non-streamed, one streamed.

    Played byte for byte; the two differ only in ids (recordings/README.md).
    """

    json_path: Path
    sse_path: Path
    api: API = "openai"

    def play(self, request: Mapping[str, Any]) -> Played:
        if request.get("stream") is True:
            return Played(200, _headers("text/event-stream; charset=utf-8", {**_OPENAI_HEADERS, **RATE_HEADERS}),
                          tuple(_sse_events(self.sse_path.read_bytes())), streamed=True)
        return Played(200, _headers("application/json", {**_OPENAI_HEADERS, **RATE_HEADERS}),
                      (self.json_path.read_bytes(),), streamed=False)


def _sse_events(raw: bytes) -> list[bytes]:
    """A recorded SSE body cut at its event boundaries, so it is sent (and flushed) event by event."""
    return [event + b"\n\n" for event in raw.split(b"\n\n") if event.strip()]


#: The two parallel tool calls gpt-4o made for "weather in Edinburgh? price of AAPL?", both forms.
PARALLEL_TOOL_CALLS = Recorded(HERE / "recordings" / "openai-parallel-tool-calls.json",
                               PROVIDER_RECORDINGS / "openai-parallel-tool-calls.sse")


@dataclass(frozen=True)
class Failure:
    """An error answer: the same status, headers and body whether the request streams or not."""

    api: API
    status: int
    body: Mapping[str, Any]
    headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def error(self) -> dict[str, Any]:
        """The ``error`` object of the body, as a client gets it."""
        return dict(self.body["error"])

    def play(self, request: Mapping[str, Any]) -> Played:
        if self.api == "openai":
            raw = (json.dumps(self.body, indent=4) + "\n").encode()
            extra = {**_OPENAI_HEADERS, **self.headers}
            return Played(self.status, _headers("application/json; charset=utf-8", extra), (raw,), streamed=False)
        return Played(self.status, _headers("application/json", {**_ANTHROPIC_HEADERS, **self.headers}),
                      (_compact(self.body),), streamed=False)


def _openai_error(message: str, type_: str, param: str | None, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


#: A 429 for tokens per minute, with the wait in ``retry-after`` and the limits in ``x-ratelimit-*``.
RATE_LIMITED = Failure("openai", 429, _openai_error(
    "Rate limit reached for gpt-4o-mini in organization org-scripted on tokens per min (TPM): Limit 200000, "
    "Used 199850, Requested 512. Please try again in 20s. Visit https://platform.openai.com/account/rate-limits "
    "to learn more.", "tokens", None, "rate_limit_exceeded"),
    {**RATE_HEADERS, "x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "20s", "retry-after": "20"})

#: A 429 that no wait cures: the account is out of credit (no ``retry-after``).
INSUFFICIENT_QUOTA = Failure("openai", 429, _openai_error(
    "You exceeded your current quota, please check your plan and billing details. For more information on this "
    "error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.",
    "insufficient_quota", None, "insufficient_quota"))

#: A 400 naming the field at fault (``param``) and the reason (``code``).
CONTEXT_LENGTH_EXCEEDED = Failure("openai", 400, _openai_error(
    "This model's maximum context length is 128000 tokens. However, your messages resulted in 130421 tokens. "
    "Please reduce the length of the messages.", "invalid_request_error", "messages", "context_length_exceeded"))

SERVER_ERROR = Failure("openai", 500, _openai_error(
    "The server had an error while processing your request. Sorry about that!", "server_error", None, None))


@dataclass(frozen=True)
class OpenAIModels:
    """``GET /v1/models`` and ``GET /v1/models/{id}``."""

    ids: tuple[str, ...]

    def _model(self, model_id: str) -> dict[str, Any]:
        return {"id": model_id, "object": "model", "created": 1721172741, "owned_by": "system"}

    def play(self, request: Mapping[str, Any]) -> Played:
        body = {"object": "list", "data": [self._model(i) for i in self.ids]}
        return Played(200, _headers("application/json", _OPENAI_HEADERS), (json.dumps(body, indent=2).encode(),),
                      streamed=False)

    def one(self, model_id: str) -> Played:
        if model_id in self.ids:
            return Played(200, _headers("application/json", _OPENAI_HEADERS),
                          (json.dumps(self._model(model_id), indent=2).encode(),), streamed=False)
        return Failure("openai", 404, _openai_error(f"The model '{model_id}' does not exist", "invalid_request_error",
                                                    "model", "model_not_found")).play({})


OPENAI_MODELS = OpenAIModels(("gpt-4o-mini", "gpt-4o", "o4-mini"))


# -- Anthropic Messages ----------------------------------------------------------------------


def _anthropic_error(type_: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": type_, "message": message},
            "request_id": "req_011CVscripted0000000000"}


ANTHROPIC_RATE_LIMITED = Failure("anthropic", 429, _anthropic_error(
    "rate_limit_error", "This request would exceed the rate limit for your organization of 30,000 input tokens per "
    "minute. For details, refer to: https://docs.claude.com/en/api/rate-limits."),
    {"retry-after": "20", "anthropic-ratelimit-input-tokens-limit": "30000",
     "anthropic-ratelimit-input-tokens-remaining": "0",
     "anthropic-ratelimit-input-tokens-reset": "2026-11-25T17:00:20Z"})

ANTHROPIC_OVERLOADED = Failure("anthropic", 529, _anthropic_error("overloaded_error", "Overloaded"))

ANTHROPIC_PROMPT_TOO_LONG = Failure("anthropic", 400, _anthropic_error(
    "invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum"))


@dataclass(frozen=True)
class AnthropicModels:
    """``GET /v1/models`` of the Messages API."""

    ids: tuple[str, ...]

    def play(self, request: Mapping[str, Any]) -> Played:
        data = [{"type": "model", "id": i, "display_name": i, "created_at": "2025-09-29T00:00:00Z"} for i in self.ids]
        body = {"data": data, "has_more": False, "first_id": self.ids[0], "last_id": self.ids[-1]}
        return Played(200, _headers("application/json", _ANTHROPIC_HEADERS), (_compact(body),), streamed=False)


ANTHROPIC_MODELS = AnthropicModels(("claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001"))
