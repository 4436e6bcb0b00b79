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
from ..usage_details import anthropic_usage
from .content import as_written, block_kind, system_message, text_content, tool_message, user_message

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
    "stop_sequence",
    "thinking_blocks",
]


class TextBlock(msgspec.Struct, tag="text", omit_defaults=True):
    text: str
    cache_control: dict[str, Any] | None = None
    citations: list[Any] | None = None


class Base64Source(msgspec.Struct, tag="base64"):
    media_type: str
    data: str


class UrlSource(msgspec.Struct, tag="url"):
    url: str


class ImageBlock(msgspec.Struct, tag="image", omit_defaults=True):
    source: Base64Source | UrlSource
    cache_control: dict[str, Any] | None = None


class DocumentBlock(msgspec.Struct, tag="document", omit_defaults=True):
    source: dict[str, Any]  # base64 PDF, plain text, a URL or content blocks: the API checks which
    title: str | None = None
    context: str | None = None
    citations: dict[str, Any] | None = None
    cache_control: dict[str, Any] | None = None


class ToolUseBlock(msgspec.Struct, tag="tool_use"):
    id: str
    name: str
    input: dict[str, Any]


class ToolResultBlock(msgspec.Struct, tag="tool_result"):
    tool_use_id: str
    content: str | list[TextBlock | ImageBlock | DocumentBlock] | None = None
    is_error: bool | None = None
    cache_control: dict[str, Any] | None = None


class ThinkingBlock(msgspec.Struct, tag="thinking"):
    thinking: str
    signature: str | None = None


class RedactedThinkingBlock(msgspec.Struct, tag="redacted_thinking"):
    data: str


Block = (TextBlock | ImageBlock | DocumentBlock | ToolUseBlock | ToolResultBlock | ThinkingBlock
         | RedactedThinkingBlock)


class AnthropicMessage(msgspec.Struct):
    role: Literal["user", "assistant"]
    content: str | list[Block]


class AnthropicTool(msgspec.Struct, omit_defaults=True):
    name: str
    input_schema: dict[str, Any]
    description: str | None = None
    type: str | None = None
    cache_control: dict[str, Any] | None = None


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


def _user_turn(content: list[Block], where: str, native: bool) -> list[Message]:
    """A user turn: its tool results (one ``tool`` message each), then its other blocks (:mod:`.content`)."""
    out: list[Message] = []
    blocks: list[Block] = []
    paths: list[str] = []
    for j, block in enumerate(content):
        if isinstance(block, ToolResultBlock):
            out.append(tool_message(block, f"{where}[{j}]", native))
        elif isinstance(block, (TextBlock, ImageBlock, DocumentBlock)):
            blocks.append(block)
            paths.append(f"{where}[{j}]")
        else:
            raise _bad(f"{where}[{j}]: a {block_kind(block)} block is not supported in a user turn", f"{where}[{j}]")
    if blocks or not out:
        out.append(user_message(blocks, paths, native))
    return out


def _assistant_turn(content: list[Block], where: str, native: bool) -> Message:
    """An assistant turn: text, tool calls (OpenAI's shape in metadata) and reasoning, in one message."""
    texts: list[TextBlock] = []
    calls: list[dict[str, Any]] = []
    thoughts: list[str] = []
    thinking: list[dict[str, Any]] = []  # the blocks an Anthropic upstream checks, as the client sent them
    for j, block in enumerate(content):
        if isinstance(block, TextBlock):
            texts.append(block)
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
            raise _bad(f"{where}[{j}]: a {block_kind(block)} block is not supported in an assistant turn",
                       f"{where}[{j}]")
    meta: dict[str, Any] = {}
    if calls:
        meta["tool_calls"] = calls
    if thoughts:
        meta["reasoning"] = "".join(thoughts)
    if thinking:  # the API wants signed blocks back unchanged before a tool_use
        meta["thinking_blocks"] = thinking
    return Message("assistant", text_content(texts, native), meta)


def messages_session(session_id: str, body: AnthropicBody, max_messages: int, native: bool = False) -> Session:
    """The body's ``system`` and ``messages`` as a session (refusing, by path, what cannot be sent).

    ``native``: the model that runs is an Anthropic one, so blocks go on as written (:mod:`.content`).
    """
    if not body.messages:
        raise _bad("messages must be a non-empty list", "messages")
    if len(body.messages) > max_messages:
        raise _bad(f"messages: {len(body.messages)} messages is more than this server takes in one request "
                   f"({max_messages}, max_messages)", "messages")
    built: list[Message] = []
    if body.system:
        built.append(Message("system", body.system) if isinstance(body.system, str)
                     else system_message(body.system, native))
    for i, m in enumerate(body.messages):
        where = f"messages[{i}].content"
        if isinstance(m.content, str):
            built.append(Message(m.role, m.content))
        elif m.role == "user":
            built.extend(_user_turn(m.content, where, native))
        else:
            built.append(_assistant_turn(m.content, where, native))
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
          "max_tokens": "max_tokens", "user": "metadata.user_id", "metadata": "metadata",
          "parallel_tool_calls": "tool_choice.disable_parallel_tool_use"}
#: left out, not refused, when the running provider lacks them (one tool call at a time asks nothing
#: of a provider that makes no parallel calls)
DROPPABLE = ("max_tokens", "user", "metadata", "service_tier", "parallel_tool_calls")


def messages_config(body: AnthropicBody, model: str, native: bool = False) -> dict[str, Any]:
    """The client's part of the config (the server's policy decides what of it runs).

    ``model`` is the server's name for the model the client asked for, as on the Chat
    Completions facade (``anthropic/claude-sonnet-4-5``, ``openai/gpt-4o-mini``, ``echo``). Keys are named as
    the Messages API names them; :func:`~agent_core.server.facades.fields.fit_to_provider` fits them
    to the provider that runs. ``native`` (an Anthropic model runs): tools go on as written,
    with their ``cache_control``; for another provider, in the OpenAI shape the engine offers.
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
    if body.metadata is not None and body.metadata.user_id is not None:  # as written for Anthropic, else mapped
        config.update({"metadata": {"user_id": body.metadata.user_id}} if native else {"user": body.metadata.user_id})
    if body.tools:
        for i, tool in enumerate(body.tools):
            if tool.type not in (None, "custom"):
                raise _bad(f"tools[{i}]: server tools ({tool.type!r}) are not supported; send client tools",
                           f"tools[{i}].type")
        config["client_tools"] = [as_written(t) for t in body.tools] if native else [
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


def stop_sequence(reply: Message | None) -> str | None:
    """The stop sequence that ended the reply, as the upstream named it (None when none did)."""
    value = reply.metadata.get("stop_sequence") if reply is not None else None
    return value if isinstance(value, str) and stop_reason(reply) == "stop_sequence" else None


def message_body(request_id: str, model: str, reply: Message | None, usage: Any,
                 replies: Sequence[Message] = ()) -> dict[str, Any]:
    """The non-streamed answer: one ``message`` object (``replies``: the turn's answers, for the cache counts)."""
    return {"id": f"msg_{request_id}", "type": "message", "role": "assistant", "model": model,
            "content": content_blocks(reply), "stop_reason": stop_reason(reply), "stop_sequence": stop_sequence(reply),
            "usage": anthropic_usage(usage, replies or (reply,))}
