"""What a facade request becomes, counted from its parsed body before any of it is converted.

A limit on the messages a client sends is not a limit on the work: one Anthropic user
message of 100,000 ``tool_result`` blocks becomes 100,000 engine messages, and one
assistant message of 20,000 ``tool_calls`` leaves 20,000 calls to answer. So each dialect
counts its body into :class:`Amounts` (a walk over the typed body, in each facade's
``facade.py``: no message is built) and :meth:`Amounts.check` refuses the request with a
400 naming the amount over its limit, before the conversion, the engine or the upstream
see anything. ``--max-body-bytes`` bounds the bytes of all of it; these bound the work
per byte.

Parsing a body is itself work per block: decoding 100,000 small objects holds the
interpreter for a tenth of a second, time no other client's request gets. So a large body
is first counted over a shallow decode (:func:`early_check`): each dialect's messages and
their content lists, with every block left as raw bytes (``msgspec.Raw``), a fifth of the
cost. That count is a lower bound of the real one, so a body it refuses is refused
rightly; what it lets through is small enough to parse, and is counted exactly after.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from ..http.errors import ApiError

__all__ = ["Amounts", "early_check"]


class Amounts(msgspec.Struct, kw_only=True):
    """Messages (after expansion), content blocks, tool calls and tool results of one request."""

    messages: int = 0
    blocks: int = 0
    tool_calls: int = 0
    tool_results: int = 0

    def check(self, settings: Any, where: str = "messages") -> None:
        """Raises ApiError (400) naming the first amount over ``settings``' limit."""
        limits = (("messages", self.messages, settings.max_messages, "max_messages"),
                  ("content blocks", self.blocks, settings.max_blocks, "max_blocks"),
                  ("tool calls", self.tool_calls, settings.max_tool_calls, "max_tool_calls"),
                  ("tool results", self.tool_results, settings.max_tool_calls, "max_tool_calls"))
        for name, count, limit, setting in limits:
            if count > limit:
                raise ApiError(400, "invalid_request_error",
                               f"{where}: the request becomes {count} {name}, more than this server takes in one "
                               f"request ({limit}, {setting})", param=where)


# -- the shallow shapes a large body is first counted in ------------------------------------------


class _Listed(msgspec.Struct):
    """A message or input item: its content blocks, and a chat message's tool calls, as raw bytes."""

    content: list[msgspec.Raw] | str | None = None
    tool_calls: list[msgspec.Raw] | None = None


class _Shallow(msgspec.Struct):
    messages: list[_Listed] | None = None  # Chat Completions, Messages
    input: list[_Listed] | str | None = None  # Responses


def early_check(settings: Any, where: str = "messages") -> Callable[[bytes], None]:
    """What :func:`~agent_core.server.http.bodies.parse_fields` runs first on a large body (module docstring)."""

    def check(raw: bytes) -> None:
        try:
            shallow = msgspec.json.decode(raw, type=_Shallow)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            return  # not this shape: the full parse names what is wrong
        listed = shallow.messages if shallow.messages is not None else shallow.input
        if not isinstance(listed, list):
            return
        counted = Amounts(messages=len(listed))
        for item in listed:
            if isinstance(item.content, list):
                counted.blocks += len(item.content)
            counted.tool_calls += len(item.tool_calls or ())
        counted.check(settings, where)

    return check
