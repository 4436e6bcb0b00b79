"""What a person at a client answers and types: tool approvals and input completions.

``POST /v1/requests/{request_id}/approvals/{call_id}`` answers the ``approval`` frame a
sessions-API turn sent (:mod:`.approvals`). ``POST /v1/input/completions`` asks the enabled
features' ``get_completions`` hook for the text being typed, and
``POST /v1/input/completions/apply`` their ``apply_completion`` hook for the text a chosen
completion makes. Both take the request's ``config`` through the tenant's policy, as every
route does; the text is capped so no client can hand a feature unbounded input.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .approvals import ApprovalBody
from ..http.bodies import aparse_body
from ..http.errors import ApiError
from ..access.ids import path_id
from ..http.wire import plain
from ..state import state_of
from ..fleet.peers import forward_approval

__all__ = ["MAX_INPUT_CHARS", "CompletionApplyBody", "CompletionBody", "answer_approval", "apply_input_completion",
           "input_completions"]

#: the longest text a completion route reads (a chat input, not a document)
MAX_INPUT_CHARS = 20_000


class CompletionBody(msgspec.Struct, forbid_unknown_fields=True):
    """``POST /v1/input/completions``: the text typed so far."""

    text: str
    config: dict[str, Any] | None = None


class CompletionApplyBody(msgspec.Struct, forbid_unknown_fields=True):
    """``POST /v1/input/completions/apply``: the text and the completion chosen (as the server offered it)."""

    text: str
    completion: dict[str, Any]
    config: dict[str, Any] | None = None


def _capped(text: str) -> str:
    if len(text) > MAX_INPUT_CHARS:
        raise ApiError(400, "invalid_request_error", f"text: longer than {MAX_INPUT_CHARS} characters", param="text")
    return text


async def answer_approval(request: Request) -> Response:
    state = state_of(request)
    rid = path_id(request, "request_id")
    call_id = request.path_params["call_id"]
    if not 0 < len(call_id) <= 200:
        raise ApiError(400, "invalid_request_error", "the call id must be 1 to 200 characters", param="call_id")
    body = await aparse_body(await request.body(), ApprovalBody, max_depth=state.settings.max_json_depth)
    scoped = state.tenant(request).scope(rid)
    if not (state.approvals.answer(scoped, call_id, body.decision)
            or await forward_approval(state.relay, scoped, call_id, body.decision)):
        where = "any server process on this store" if state.relay is not None else "this server process"
        raise ApiError(404, "approval_not_found",
                       f"no tool call {call_id[:200]!r} of request {rid!r} is waiting for approval in {where}")
    return Response(status_code=204)


async def input_completions(request: Request) -> Response:
    state = state_of(request)
    body = await aparse_body(await request.body(), CompletionBody, max_depth=state.settings.max_json_depth)
    config = state.config_for(request, body.config)
    found = await asyncio.to_thread(state.core.get_completions, config, _capped(body.text))
    return JSONResponse({"object": "list", "data": json.loads(json.dumps(found, default=plain))})


async def apply_input_completion(request: Request) -> Response:
    state = state_of(request)
    body = await aparse_body(await request.body(), CompletionApplyBody, max_depth=state.settings.max_json_depth)
    config = state.config_for(request, body.config)
    text = await asyncio.to_thread(state.core.apply_completion, config, _capped(body.text), body.completion)
    return JSONResponse({"text": text})
