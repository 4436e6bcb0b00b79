"""What the pipeline offers a client: ``GET /v1/plugins``, ``/v1/ui-schema`` and ``/v1/actions``.

The console draws itself from these (its settings, its buttons); any client may read them.
Each takes the config it describes as query parameters, one per key, through the tenant's
policy as a request body's ``config`` would go, so a client learns only about the config it
could run with.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..http.bodies import json_depth
from ..http.errors import ApiError
from ..http.wire import plain
from ..state import state_of

__all__ = ["actions", "plugins", "ui_schema"]

_decode = msgspec.json.Decoder().decode


def _query_config(request: Request) -> dict[str, Any]:
    """The config of a GET: one query parameter per key (JSON values, as ``-c``), through the policy."""
    state = state_of(request)
    client: dict[str, Any] = {}
    depth = state.settings.max_json_depth
    for key, raw in request.query_params.items():
        try:
            value = _decode(raw)
        except RecursionError:
            raise ApiError(400, "invalid_request_error", f"query parameter {key!r} nests too deeply",
                           param=key) from None
        except (msgspec.DecodeError, msgspec.ValidationError):
            value = raw  # a bare word: the string itself
        if json_depth(value, depth) > depth:
            raise ApiError(400, "invalid_request_error",
                           f"query parameter {key!r} nests deeper than {depth} levels", param=key)
        client[key] = value
    return state.config_for(request, client)


async def plugins(request: Request) -> Response:
    """Every installed plugin, whether the config enables it, and why (not)."""
    core = state_of(request).core
    res = await asyncio.to_thread(core.resolve, _query_config(request))
    on = {str(res.provider), *map(str, res.extensions), *map(str, res.features), *map(str, res.tools)}
    data = [
        {"kind": kind, "name": name, "enabled": name in on,
         "reason": res.reasons.get(name) or "off: not the selected provider"}
        for kind in ("provider", "extension", "feature", "tool") for name in core.plugins(kind)
    ]
    return JSONResponse({"object": "list", "data": data, "warnings": list(res.warnings)})


async def ui_schema(request: Request) -> Response:
    """The enabled plugins' UI elements, each config element saying whether this client may set it."""
    state = state_of(request)
    elements = await asyncio.to_thread(state.core.get_ui_schema, _query_config(request))
    allowed = state.tenant(request).policy.allow
    for element in elements:  # which settings a client may send in its config (the console shows those)
        if element.get("ui_type") == "config" and "key" in element:
            element["client_settable"] = element["key"] in allowed
    return JSONResponse({"object": "list", "data": json.loads(json.dumps(elements, default=plain))})


async def actions(request: Request) -> Response:
    """The enabled plugins' actions (run one with ``POST /v1/sessions/{id}/actions/{action}``)."""
    found = await asyncio.to_thread(state_of(request).core.get_actions, _query_config(request))
    return JSONResponse({"object": "list", "data": json.loads(json.dumps(found, default=plain))})
