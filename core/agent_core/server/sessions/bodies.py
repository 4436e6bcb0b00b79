"""The sessions API's request bodies: each refuses a field it does not know, so a typo is named, not ignored."""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["ActionBody", "CreateSessionBody", "TurnBody"]


class TurnBody(msgspec.Struct, forbid_unknown_fields=True):
    """``POST /v1/sessions/{id}/turns``: the new message and the request's own config."""

    message: str | dict[str, Any]
    config: dict[str, Any] | None = None


class CreateSessionBody(msgspec.Struct, forbid_unknown_fields=True):
    """``POST /v1/sessions``."""

    id: str | None = None
    metadata: dict[str, Any] | None = None
    messages: list[str | dict[str, Any]] | None = None


class ActionBody(msgspec.Struct, forbid_unknown_fields=True):
    """``POST /v1/sessions/{id}/actions/{action}``."""

    params: dict[str, Any] | None = None
    config: dict[str, Any] | None = None
