"""What each dialect's body becomes, counted into :class:`~agent_core.server.access.amounts.Amounts`.

A walk over the typed body, before any of it is converted: no message is built. The
limits they are held to, and the shallow count a large body gets before it is parsed at
all, are the front door's (:mod:`agent_core.server.access.amounts`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ..access.amounts import Amounts, early_check
from ..http.bodies import ChatMessage, aparse_fields
from ..state import ServerState
from .messages.dialect import AnthropicBody, ToolResultBlock, ToolUseBlock
from .responses.dialect import ResponsesBody

__all__ = ["chat_amounts", "messages_amounts", "read_body", "responses_amounts"]

T = TypeVar("T")


async def read_body(state: ServerState, raw: bytes, kind: type[T], counted: Callable[[T], Amounts],
                    where: str = "messages") -> tuple[T, dict[str, Any]]:
    """A facade's body parsed into ``kind`` and the fields it does not declare, held to the operator's limits.

    ``counted`` says what the parsed body becomes; a large body is first counted shallowly
    (:func:`~agent_core.server.access.amounts.early_check`), so one over a limit is refused
    before it is parsed whole. ``where`` names the body's list of messages in a refusal.
    """
    settings = state.settings
    return await aparse_fields(raw, kind, max_depth=settings.max_json_depth,
                               check=lambda parsed: counted(parsed).check(settings, where),
                               early=early_check(settings, where))


def chat_amounts(messages: Sequence[ChatMessage]) -> Amounts:
    """A Chat Completions body's ``messages``: each is one message; its parts are blocks."""
    counted = Amounts(messages=len(messages))
    for m in messages:
        if isinstance(m.content, list):
            counted.blocks += len(m.content)
        counted.tool_calls += len(m.tool_calls or ()) + (m.function_call is not None)
        counted.tool_results += m.role in ("tool", "function")
    return counted


def messages_amounts(body: AnthropicBody) -> Amounts:
    """A Messages body: every ``tool_result`` block becomes a message of its own, beside its turn's."""
    counted = Amounts(messages=len(body.messages) + (body.system is not None))
    if isinstance(body.system, list):
        counted.blocks += len(body.system)
    for m in body.messages:
        if isinstance(m.content, str):
            continue
        counted.blocks += len(m.content)
        for block in m.content:
            if isinstance(block, ToolResultBlock):
                counted.tool_results += 1
                counted.messages += 1
                if isinstance(block.content, list):
                    counted.blocks += len(block.content)
            elif isinstance(block, ToolUseBlock):
                counted.tool_calls += 1
    return counted


def responses_amounts(body: ResponsesBody) -> Amounts:
    """A Responses body: each input item is at most one message; a message item's parts are blocks."""
    items: list[Any] = body.input if isinstance(body.input, list) else []
    counted = Amounts(messages=len(items) + (body.instructions is not None) + isinstance(body.input, str))
    for item in items:
        kind = item.get("type", "message") if isinstance(item, dict) else None
        content = item.get("content") if isinstance(item, dict) else None
        if isinstance(content, list):
            counted.blocks += len(content)
        counted.tool_calls += kind == "function_call"
        counted.tool_results += kind == "function_call_output"
    return counted
