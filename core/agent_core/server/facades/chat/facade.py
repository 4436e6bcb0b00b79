"""``/v1/chat/completions``: the OpenAI-compatible facade over the engine.

The client's conversation arrives whole in each request; ``X-Session-Id`` also keeps
the exchange in the store (see ``docs/server.md``). What each request field becomes is
in :mod:`.fields`; how a name becomes a model, in :mod:`..models`. ``n`` choices are
``n`` turns run side by side, their streams merged into one, as the API interleaves them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from ...access.amounts import Amounts
from .body import ChatBody, ChatMessage
from ...http.errors import ApiError
from ...access.ids import session_id_of
from ...http.wire import json_bytes
from ...state import ServerState
from ..fields import declared_keys
from ..models import model_name
from ..protocol import Plan
from ..runner import read_body, run_facade
from ..server_tools import client_tool_names, for_client
from .dialect import chat_session, completion_body, reply_of, usage_body
from .fields import chat_config, droppable
from .stream import ChatStream

__all__ = ["ChatFacade", "chat", "chat_amounts"]


class ChatFacade:
    """The Chat Completions dialect (a :class:`~..protocol.Facade`)."""

    dialect = "openai"

    async def plan(self, state: ServerState, request: Request, raw: bytes, session_id: str) -> Plan:
        body, rest = await read_body(state, raw, ChatBody, lambda parsed: chat_amounts(parsed.messages))
        model = model_name(state, body.model)
        client = chat_config(body, rest, model, declared_keys(state.core))
        session = chat_session(session_id, body.messages, state.settings.max_messages,
                               model.partition("/")[0] == "openai")  # the dialect matches: parts go on as written
        return Plan(body, client, session, stream=bool(body.stream), fields={}, droppable=droppable,
                    choices=_choices(state, request, body))

    def headers(self, request_id: str) -> dict[str, str]:
        return {"x-request-id": request_id}

    def answer(self, plan: Plan, request_id: str, results: Sequence[Any]) -> tuple[bytes, Any]:
        body = plan.body
        declared = client_tool_names(plan.client)
        replies = [for_client(reply_of(result.final_messages), declared) for result in results]
        answers = [m for result in results for m in result.final_messages]
        answer = completion_body(request_id, body.model, replies,
                                 usage_body(*(result.usage for result in results), replies=answers),
                                 body.functions is not None)
        return json_bytes(answer), replies[0]

    def frames(self, plan: Plan, request_id: str) -> ChatStream:
        body = plan.body
        include_usage = bool(body.stream_options and body.stream_options.include_usage)
        return ChatStream(request_id, body.model, plan.choices, include_usage, body.functions is not None)


def chat_amounts(messages: Sequence[ChatMessage]) -> Amounts:
    """A Chat Completions body's ``messages``: each is one message; its parts are blocks."""
    counted = Amounts(messages=len(messages))
    for m in messages:
        if isinstance(m.content, list):
            counted.blocks += len(m.content)
        counted.tool_calls += len(m.tool_calls or ()) + (m.function_call is not None)
        counted.tool_results += m.role in ("tool", "function")
    return counted


def _choices(state: ServerState, request: Request, body: ChatBody) -> int:
    """How many choices (``n``) the request asks for, within the operator's ``max_choices``."""
    n = 1 if body.n is None else body.n
    if not 1 <= n <= state.settings.max_choices:
        raise ApiError(400, "invalid_request_error",
                       f"n: must be from 1 to {state.settings.max_choices} on this server (max_choices), got {n}",
                       param="n")
    if n > 1 and session_id_of(request) is not None:
        raise ApiError(400, "invalid_request_error",
                       "n: a stored exchange (X-Session-Id) keeps one reply; ask for n=1", param="n")
    return n


_CHAT = ChatFacade()


async def chat(request: Request) -> Response:
    """``POST /v1/chat/completions``."""
    return await run_facade(_CHAT, request)
