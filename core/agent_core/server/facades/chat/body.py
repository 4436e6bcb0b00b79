"""A Chat Completions request body as msgspec Structs: every field OpenAI documents, parsed once where it enters.

What each field becomes is :mod:`.fields`' to say; what a body with the wrong types is
refused as, :mod:`agent_core.server.http.bodies`'.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

__all__ = ["ChatBody", "ChatFunctionCall", "ChatMessage", "ChatPart", "ChatTool", "ChatToolCall", "FunctionSpec",
           "StreamOptions"]


class ChatPart(msgspec.Struct, omit_defaults=True):
    type: str
    text: str | None = None
    image_url: dict[str, Any] | None = None
    input_audio: dict[str, Any] | None = None
    file: dict[str, Any] | None = None


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
