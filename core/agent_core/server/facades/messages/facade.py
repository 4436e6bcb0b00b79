"""``POST /v1/messages``: the Anthropic Messages facade over the same pipeline as the OpenAI one.

An Anthropic client (the ``anthropic`` SDK, or anything speaking the Messages API)
reaches every installed provider and plugin, as an OpenAI client does through
``/v1/chat/completions``: the same config policy, the same ``X-Session-Id`` storage,
the same cancelling by ``X-Request-Id``. Tools are the client's: calls go back as
``tool_use`` blocks and the server never runs them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from ...access.amounts import Amounts
from ...http.failures import Failure, anthropic_body
from ...http.wire import json_bytes
from ...state import ServerState
from ..chat.dialect import reply_of
from ..fields import declared_keys, with_extra_fields
from ..models import model_name
from ..protocol import OneAnswer, Plan
from ..runner import read_body, run_facade
from ..server_tools import client_tool_names, for_client
from .dialect import (
    DROPPABLE,
    FIELDS,
    AnthropicBody,
    ToolResultBlock,
    ToolUseBlock,
    message_body,
    messages_config,
    messages_session,
)
from .stream import MessageStream

__all__ = ["MessagesFacade", "messages", "messages_amounts"]


class MessagesFacade:
    """The Messages dialect (a :class:`~..protocol.Facade`)."""

    dialect = "anthropic"

    async def plan(self, state: ServerState, request: Request, raw: bytes, session_id: str) -> Plan:
        body, rest = await read_body(state, raw, AnthropicBody, messages_amounts)
        model = model_name(state, body.model)
        native = model.partition("/")[0] == "anthropic"  # the dialect matches: blocks and tools go on as written
        client = messages_config(body, model, native)
        with_extra_fields(client, rest, declared_keys(state.core), "Messages")
        session = messages_session(session_id, body, state.settings.max_messages, native)
        return Plan(body, client, session, stream=bool(body.stream), fields=FIELDS,
                    droppable=lambda key, _value: key in DROPPABLE)

    def headers(self, request_id: str) -> dict[str, str]:
        return {"x-request-id": request_id, "request-id": request_id}

    def answer(self, plan: Plan, request_id: str, results: Sequence[Any]) -> tuple[bytes, Any]:
        result = results[0]
        reply = for_client(reply_of(result.final_messages), client_tool_names(plan.client))
        return json_bytes(message_body(request_id, plan.body.model, reply, result.usage, result.final_messages)), reply

    def frames(self, plan: Plan, request_id: str) -> OneAnswer:
        """The Messages API's events, ``message_start`` to ``message_stop``; an early end is an ``error`` event."""
        return OneAnswer(MessageStream(request_id, plan.body.model), _error_event)


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


def _error_event(out: MessageStream, failure: Failure) -> bytes:
    error = anthropic_body(failure)["error"]
    return out.error(error["type"], error["message"])


_MESSAGES = MessagesFacade()


async def messages(request: Request) -> Response:
    """``POST /v1/messages``."""
    return await run_facade(_MESSAGES, request)
