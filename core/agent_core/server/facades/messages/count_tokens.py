"""``POST /v1/messages/count_tokens``: how many input tokens a Messages body would cost.

Agents ask before they send, to trim a long history. Only the model's own API knows the
count, so the body goes to the provider that would run it when that provider can count (it
has a ``count_tokens(config, body)`` method: the ``anthropic`` provider asks its API's
``/v1/messages/count_tokens``). Any other provider gets an estimate, about four characters
a token over the body's ``system``, ``messages`` and ``tools``, and says so: the answer
carries ``"estimated": true`` and the ``x-token-count: estimate`` header.

The body is checked as a Messages request is (the same fields, amounts, model names and
tenant policy through ``config_for``), so a client may not learn more here than it could
send there. What goes upstream is the client's body as sent, with the server's model name:
a count is for what the client wrote.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from ..runner import read_body
from .facade import messages_amounts
from .dialect import (
    AnthropicBody,
    AnthropicMessage,
    AnthropicTool,
    AnthropicToolChoice,
    TextBlock,
    ThinkingConfig,
    messages_config,
    messages_session,
)
from ..fields import declared_keys, with_extra_fields
from ..models import model_name
from ...access.ids import request_id_of
from ...http.wire import json_bytes
from ...state import state_of
from ..fields import FACADE_DEFAULTS

__all__ = ["CountBody", "count_tokens"]

#: the body fields a count reads and passes on (the API's own list, less its server-side features)
_COUNTED = ("messages", "system", "tools", "tool_choice", "thinking")


class CountBody(msgspec.Struct):
    """A ``count_tokens`` body: a Messages request without ``max_tokens`` or sampling."""

    model: str
    messages: list[AnthropicMessage]
    system: str | list[TextBlock] | None = None
    tools: list[AnthropicTool] | None = None
    tool_choice: AnthropicToolChoice | None = None
    thinking: ThinkingConfig | None = None

    def as_messages(self) -> AnthropicBody:
        """The Messages request this count is for (``max_tokens`` 1: a count generates nothing)."""
        return AnthropicBody(model=self.model, messages=self.messages, max_tokens=1, system=self.system,
                             tools=self.tools, tool_choice=self.tool_choice, thinking=self.thinking)


def estimate(body: dict[str, Any]) -> int:
    """About four characters a token over what the model would read; at least 1."""
    read = {key: body[key] for key in ("system", "messages", "tools") if key in body}
    return max(1, math.ceil(len(json_bytes(read)) / 4))


async def count_tokens(request: Request) -> Response:
    """Count the body's input tokens with the provider that would run it, or estimate them.

    Raises:
        ApiError: what ``POST /v1/messages`` refuses for the same body (400, 403, 404).
    """
    state = state_of(request)
    raw = await request.body()
    settings = state.settings
    body, rest = await read_body(state, raw, CountBody, lambda parsed: messages_amounts(parsed.as_messages()))
    as_sent = body.as_messages()
    model = model_name(state, body.model)
    native = model.partition("/")[0] == "anthropic"
    client = messages_config(as_sent, model, native)
    del client["max_tokens"]  # not the client's: a count has none
    with_extra_fields(client, rest, declared_keys(state.core), "Messages")
    config = state.config_for(request, client)
    messages_session("count", as_sent, settings.max_messages, native)  # refuses what /v1/messages would
    counted = {key: value for key, value in msgspec.json.decode(raw).items() if key in _COUNTED}
    resolution = state.core.resolve(config)
    provider = resolution.live[resolution.provider].instance
    rid = request_id_of(request)
    headers = {"x-request-id": rid, "request-id": rid}
    if callable(getattr(provider, "count_tokens", None)):
        config.update({k: v for k, v in FACADE_DEFAULTS.items() if k not in state.config})
        tokens = await run_in_threadpool(provider.count_tokens, config, counted)
        return Response(json_bytes({"input_tokens": tokens}), media_type="application/json", headers=headers)
    answer = {"input_tokens": estimate(counted), "estimated": True}
    return Response(json_bytes(answer), media_type="application/json",
                    headers={**headers, "x-token-count": "estimate"})
