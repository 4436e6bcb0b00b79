"""Anthropic Messages bodies to and from the engine's values (``POST /v1/messages``).

A request body becomes a session and the client's part of the config; the
engine's events become a ``message`` body or the Messages API's named
server-sent events (``message_start``, ``content_block_start``,
``content_block_delta``, ``content_block_stop``, ``message_delta``,
``message_stop``). The engine speaks one shape whatever the provider: tool
calls in ``metadata["tool_calls"]`` (OpenAI's shape, arguments as JSON text)
and reasoning in ``metadata["reasoning"]``; this module maps that shape onto
Anthropic's content blocks, so an Anthropic client can use any provider.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import msgspec

from ....types import Message, Session
from ...http.errors import ApiError

__all__ = [
    "DROPPABLE",
    "FIELDS",
    "AnthropicBody",
    "calls_of",
    "content_blocks",
    "input_of",
    "message_body",
    "messages_config",
    "messages_session",
    "stop_reason",
    "thinking_blocks",
]


class TextBlock(msgspec.Struct, tag="text"):
    text: str


class ImageBlock(msgspec.Struct, tag="image"):
    source: dict[str, Any]


class ToolUseBlock(msgspec.Struct, tag="tool_use"):
    id: str
    name: str
    input: dict[str, Any]


class ToolResultBlock(msgspec.Struct, tag="tool_result"):
    tool_use_id: str
    content: str | list[TextBlock | ImageBlock] | None = None
    is_error: bool | None = None


class ThinkingBlock(msgspec.Struct, tag="thinking"):
    thinking: str
    signature: str | None = None


class RedactedThinkingBlock(msgspec.Struct, tag="redacted_thinking"):
    data: str


Block = TextBlock | ImageBlock | ToolUseBlock | ToolResultBlock | ThinkingBlock | RedactedThinkingBlock


class AnthropicMessage(msgspec.Struct):
    role: Literal["user", "assistant"]
    content: str | list[Block]


class AnthropicTool(msgspec.Struct):
    name: str
    input_schema: dict[str, Any]
    description: str | None = None
    type: str | None = None


class AnthropicToolChoice(msgspec.Struct):
    type: Literal["auto", "any", "tool", "none"]
    name: str | None = None
    disable_parallel_tool_use: bool | None = None


class ThinkingConfig(msgspec.Struct):
    type: Literal["enabled", "disabled"]
    budget_tokens: int | None = None


class AnthropicMetadata(msgspec.Struct):
    user_id: str | None = None


class AnthropicBody(msgspec.Struct):
    """A Messages request: every field Anthropic documents (what each becomes: ``docs/server.md``)."""

    model: str
    messages: list[AnthropicMessage]
    max_tokens: int
    system: str | list[TextBlock] | None = None
    stream: bool | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    stop_sequences: list[str] | None = None
    tools: list[AnthropicTool] | None = None
    tool_choice: AnthropicToolChoice | None = None
    thinking: ThinkingConfig | None = None
    metadata: AnthropicMetadata | None = None
    service_tier: str | None = None
    # Anthropic's server-side features: no provider here can run them, so a request that sets one is refused
    container: Any = None
    context_management: Any = None
    mcp_servers: Any = None


def _bad(message: str, param: str) -> ApiError:
    return ApiError(400, "invalid_request_error", message, param=param)


def _joined(blocks: Sequence[Any], where: str) -> str:
    texts = []
    for j, block in enumerate(blocks):
        if not isinstance(block, TextBlock):
            kind = type(block).__name__.removesuffix("Block").lower()
            raise _bad(f"{where}[{j}]: only text is supported here, got a {kind} block", f"{where}[{j}]")
        texts.append(block.text)
    return "".join(texts)


def _user_turn(content: list[Block], where: str) -> list[Message]:
    """A user turn: its tool results (one ``tool`` message each), then its text."""
    out: list[Message] = []
    texts: list[str] = []
    for j, block in enumerate(content):
        if isinstance(block, ToolResultBlock):
            result = block.content if isinstance(block.content, str) else _joined(block.content or [],
                                                                                  f"{where}[{j}].content")
            meta: dict[str, Any] = {"tool_call_id": block.tool_use_id}
            if block.is_error:
                meta["is_error"] = True
            out.append(Message("tool", result, meta))
        elif isinstance(block, TextBlock):
            texts.append(block.text)
        else:
            kind = type(block).__name__.removesuffix("Block").lower()
            raise _bad(f"{where}[{j}]: a {kind} block is not supported in a user turn", f"{where}[{j}]")
    if texts or not out:
        out.append(Message("user", "".join(texts)))
    return out


def _assistant_turn(content: list[Block], where: str) -> Message:
    """An assistant turn: text, tool calls (OpenAI's shape in metadata) and reasoning, in one message."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    thoughts: list[str] = []
    thinking: list[dict[str, Any]] = []  # the blocks an Anthropic upstream checks, as the client sent them
    for j, block in enumerate(content):
        if isinstance(block, TextBlock):
            texts.append(block.text)
        elif isinstance(block, ToolUseBlock):
            calls.append({"id": block.id, "type": "function",
                          "function": {"name": block.name, "arguments": json.dumps(block.input)}})
        elif isinstance(block, ThinkingBlock):
            thoughts.append(block.thinking)
            if block.signature:  # unsigned (another provider's reasoning, as this facade gave it): text only
                thinking.append({"type": "thinking", "thinking": block.thinking, "signature": block.signature})
        elif isinstance(block, RedactedThinkingBlock):
            thinking.append({"type": "redacted_thinking", "data": block.data})
        else:
            kind = type(block).__name__.removesuffix("Block").lower()
            raise _bad(f"{where}[{j}]: a {kind} block is not supported in an assistant turn", f"{where}[{j}]")
    meta: dict[str, Any] = {}
    if calls:
        meta["tool_calls"] = calls
    if thoughts:
        meta["reasoning"] = "".join(thoughts)
    if thinking:  # the API wants signed blocks back unchanged before a tool_use
        meta["thinking_blocks"] = thinking
    return Message("assistant", "".join(texts), meta)


def messages_session(session_id: str, body: AnthropicBody, max_messages: int) -> Session:
    """The body's ``system`` and ``messages`` as a session (refusing, by path, what cannot be sent)."""
    if not body.messages:
        raise _bad("messages must be a non-empty list", "messages")
    if len(body.messages) > max_messages:
        raise _bad(f"messages: {len(body.messages)} messages is more than this server takes in one request "
                   f"({max_messages}, max_messages)", "messages")
    built: list[Message] = []
    if body.system:
        system = body.system if isinstance(body.system, str) else _joined(body.system, "system")
        built.append(Message("system", system))
    for i, m in enumerate(body.messages):
        where = f"messages[{i}].content"
        if isinstance(m.content, str):
            built.append(Message(m.role, m.content))
        elif m.role == "user":
            built.extend(_user_turn(m.content, where))
        else:
            built.append(_assistant_turn(m.content, where))
    try:
        return Session(session_id, built, {})
    except (TypeError, ValueError) as exc:
        raise _bad(f"messages: {exc}", "messages") from None


def _tool_choice(choice: AnthropicToolChoice) -> Any:
    """Anthropic's ``tool_choice`` in the OpenAI shape the engine's tool extensions read."""
    if choice.type == "auto":
        return "auto"
    if choice.type == "any":
        return "required"
    if choice.type == "none":
        return "none"
    if not choice.name:
        raise _bad("tool_choice: a choice of type 'tool' needs a name", "tool_choice.name")
    return {"type": "function", "function": {"name": choice.name}}


#: config key -> the Messages API field it comes from (for errors); the keys a provider may ignore
FIELDS = {"service_tier": "service_tier", "stop_sequences": "stop_sequences", "temperature": "temperature", "top_p": "top_p", "top_k": "top_k",
          "tool_choice": "tool_choice", "thinking_budget": "thinking", "client_tools": "tools",
          "max_tokens": "max_tokens", "user": "metadata.user_id",
          "parallel_tool_calls": "tool_choice.disable_parallel_tool_use"}
#: left out, not refused, when the running provider lacks them (one tool call at a time asks nothing
#: of a provider that makes no parallel calls)
DROPPABLE = ("max_tokens", "user", "service_tier", "parallel_tool_calls")


def messages_config(body: AnthropicBody, model: str) -> dict[str, Any]:
    """The client's part of the config (the server's policy decides what of it runs).

    ``model`` is the server's name for the model the client asked for, as on the Chat
    Completions facade (``anthropic/claude-sonnet-4-5``, ``openai/gpt-4o-mini``, ``echo``). Keys are named as
    the Messages API names them; :func:`~agent_core.server.facades.fields.fit_to_provider` fits them
    to the provider that runs.
    """
    if body.max_tokens < 1:
        raise _bad("max_tokens must be at least 1", "max_tokens")
    for field in ("container", "context_management", "mcp_servers"):
        if getattr(body, field) is not None:
            raise _bad(f"{field}: Anthropic's server-side {field.replace('_', ' ')} are not run by this server", field)
    config: dict[str, Any] = {"model": model, "max_tokens": body.max_tokens}
    if body.service_tier is not None:
        config["service_tier"] = body.service_tier
    for key in ("temperature", "top_p", "top_k"):
        if getattr(body, key) is not None:
            config[key] = getattr(body, key)
    if body.stop_sequences:
        config["stop_sequences"] = list(body.stop_sequences)
    if body.metadata is not None and body.metadata.user_id is not None:
        config["user"] = body.metadata.user_id
    if body.tools:
        for i, tool in enumerate(body.tools):
            if tool.type not in (None, "custom"):
                raise _bad(f"tools[{i}]: server tools ({tool.type!r}) are not supported; send client tools",
                           f"tools[{i}].type")
        config["client_tools"] = [
            {"type": "function", "function": {"name": t.name, "description": t.description or "",
                                              "parameters": t.input_schema}}
            for t in body.tools
        ]
    if body.tool_choice is not None:
        config["tool_choice"] = _tool_choice(body.tool_choice)
        if body.tool_choice.disable_parallel_tool_use:
            config["parallel_tool_calls"] = False
    if body.thinking is not None and body.thinking.type == "enabled":
        if not body.thinking.budget_tokens or body.thinking.budget_tokens < 1:
            raise _bad("thinking.budget_tokens must be a positive number", "thinking.budget_tokens")
        config["thinking_budget"] = body.thinking.budget_tokens
    return config


def stop_reason(reply: Message | None) -> str:
    """Anthropic's ``stop_reason`` for the reply the engine gave."""
    if reply is None:
        return "end_turn"
    meta = reply.metadata
    if meta.get("stop_reason") in ("end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "refusal"):
        return str(meta["stop_reason"])
    if meta.get("finish_reason") == "length":
        return "max_tokens"
    if calls_of(reply):
        return "tool_use"
    return "end_turn"


def calls_of(reply: Message | None) -> list[dict[str, Any]]:
    if reply is None:
        return []
    return [c for c in reply.metadata.get("tool_calls") or () if not c.get("incomplete")]


def input_of(call: Any) -> dict[str, Any]:
    try:
        value = json.loads(call["function"].get("arguments") or "{}")
    except ValueError:
        value = {}
    return value if isinstance(value, dict) else {"value": value}


def thinking_blocks(reply: Message) -> list[dict[str, Any]]:
    """The reply's thinking as Messages blocks: the provider's own, signed, when it kept them.

    An Anthropic upstream's blocks (``metadata["thinking_blocks"]``) carry the signature a
    client must send back; other providers' reasoning becomes one unsigned block.
    """
    kept = reply.metadata.get("thinking_blocks")
    if isinstance(kept, Sequence) and not isinstance(kept, str) and kept:
        out = []
        for b in kept:
            if not isinstance(b, Mapping):
                continue
            if b.get("type") == "thinking":
                out.append({"type": "thinking", "thinking": b.get("thinking") or "",
                            "signature": b.get("signature") or ""})
            elif b.get("type") == "redacted_thinking":
                out.append({"type": "redacted_thinking", "data": b.get("data") or ""})
        return out
    reasoning = reply.metadata.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        return [{"type": "thinking", "thinking": reasoning, "signature": ""}]
    return []


def content_blocks(reply: Message | None) -> list[dict[str, Any]]:
    """The reply as content blocks: its thinking, its text, its tool calls."""
    if reply is None:
        return []
    blocks = thinking_blocks(reply)
    if isinstance(reply.content, str) and reply.content:
        blocks.append({"type": "text", "text": reply.content})
    for call in calls_of(reply):
        blocks.append({"type": "tool_use", "id": call["id"], "name": call["function"]["name"], "input": input_of(call)})
    return blocks


def usage_of(usage: Any) -> dict[str, int]:
    return {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}


def message_body(request_id: str, model: str, reply: Message | None, usage: Any) -> dict[str, Any]:
    """The non-streamed answer: one ``message`` object."""
    return {"id": f"msg_{request_id}", "type": "message", "role": "assistant", "model": model,
            "content": content_blocks(reply), "stop_reason": stop_reason(reply), "stop_sequence": None,
            "usage": usage_of(usage)}
