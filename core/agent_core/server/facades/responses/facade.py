"""``POST /v1/responses``: OpenAI's Responses API over the same pipeline as the other facades.

The Responses API is what the OpenAI Agents SDK and Codex speak by default. Like
``/v1/chat/completions`` it reaches any provider with the same config policy,
``X-Session-Id`` storage and cancelling by ``X-Request-Id``; tools are the client's
(calls go back as ``function_call`` items, results come in as ``function_call_output``
items). Unlike OpenAI's own endpoint it stores nothing: see :mod:`.dialect`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from ...access.amounts import Amounts
from ...http.failures import Failure, openai_body
from ...http.wire import json_bytes
from ...state import ServerState
from ..chat.dialect import reply_of
from ..fields import declared_keys, with_extra_fields
from ..models import model_name
from ..protocol import OneAnswer, Plan
from ..runner import read_body, run_facade
from ..server_tools import client_tool_names, for_client
from .dialect import (
    FIELDS,
    ResponsesBody,
    finish_of,
    output_items,
    response_body,
    responses_config,
    responses_session,
    usage_of,
)
from .fields import droppable
from .stream import ResponseStream

__all__ = ["ResponsesFacade", "responses", "responses_amounts"]


class ResponsesFacade:
    """The Responses dialect (a :class:`~..protocol.Facade`)."""

    dialect = "openai"

    async def plan(self, state: ServerState, request: Request, raw: bytes, session_id: str) -> Plan:
        body, rest = await read_body(state, raw, ResponsesBody, responses_amounts, "input")
        client = responses_config(body, model_name(state, body.model))
        with_extra_fields(client, rest, declared_keys(state.core), "Responses")
        session = responses_session(session_id, body, state.settings.max_messages)
        return Plan(body, client, session, stream=bool(body.stream), fields=FIELDS, droppable=droppable)

    def headers(self, request_id: str) -> dict[str, str]:
        return {"x-request-id": request_id}

    def answer(self, plan: Plan, request_id: str, results: Sequence[Any]) -> tuple[bytes, Any]:
        result = results[0]
        reply = for_client(reply_of(result.final_messages), client_tool_names(plan.client))
        status, incomplete = finish_of(reply)
        answer = response_body(request_id, plan.body, int(time.time()), status=status,
                               output=output_items(request_id, reply, plan.body.include or ()),
                               usage=usage_of(result.usage, reply), incomplete=incomplete, reply=reply)
        return json_bytes(answer), reply

    def frames(self, plan: Plan, request_id: str) -> OneAnswer:
        """Responses events, ``response.created`` to ``response.completed``; an early end is ``error`` and ``response.failed``."""
        return OneAnswer(ResponseStream(request_id, plan.body, int(time.time())), _error_events)


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


def _error_events(out: ResponseStream, failure: Failure) -> bytes:
    return out.error(openai_body(failure)["error"])


_RESPONSES = ResponsesFacade()


async def responses(request: Request) -> Response:
    """``POST /v1/responses``."""
    return await run_facade(_RESPONSES, request)
