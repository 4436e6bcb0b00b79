"""A history walked the way a tool extension sends it: which calls were made, which results answer none.

An extension that gives its API tools turns the engine's messages into wire messages
in ``to_native_messages``, where the messages and the native messages line up one to
one. Two rules hold whatever the API: a tool call marked ``incomplete`` (the answer
stopped while its arguments streamed) was never made, so it is not sent; and a tool
result for such a call answers nothing the API has seen, so sending it as a result
gets the request refused. :func:`tool_turns` applies both rules in one place, and the
extension writes only its API's shapes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, NamedTuple

__all__ = ["ToolTurn", "tool_turns"]


class ToolTurn(NamedTuple):
    """One message of the history with its native form, as a tool extension needs to see it."""

    #: the engine's message
    message: Mapping[str, Any]
    #: its native form so far (what the provider made of it)
    native: Mapping[str, Any]
    #: an assistant message's tool calls that were made, in order; empty for every other message
    calls: tuple[Mapping[str, Any], ...]
    #: the message is a tool result (role ``tool``)
    is_result: bool
    #: a tool result whose call was never made: send it as nothing, or as the API's empty turn
    cut: bool


def tool_turns(messages: Iterable[Mapping[str, Any]],
               native_messages: Iterable[Mapping[str, Any]]) -> Iterator[ToolTurn]:
    """Each message with its native form, its calls that were made, and whether it is a result of a cut call.

    Raises:
        ValueError: the two lists differ in length (the engine hands them aligned).
    """
    cut_ids: set[Any] = set()
    for message, native in zip(messages, native_messages, strict=True):
        metadata = message.get("metadata") or {}
        role = message.get("role")
        if role == "assistant" and metadata.get("tool_calls"):
            made = []
            for call in metadata["tool_calls"]:
                if call.get("incomplete"):
                    cut_ids.add(call.get("id"))
                else:
                    made.append(call)
            yield ToolTurn(message, native, tuple(made), False, False)
        elif role == "tool":
            yield ToolTurn(message, native, (), True, bool(cut_ids) and metadata.get("tool_call_id") in cut_ids)
        else:
            yield ToolTurn(message, native, (), False, False)
