"""Read-only views that hand plugins a session without copying it.

Contexts carry ``context["session"]`` in the serialized shape
(``session_id``, ``messages``, ``metadata``), as the original platform's
``session.to_dict()`` did. Building that dict thaws the whole conversation:
O(history) per tool call, per lifecycle action. :func:`session_view` builds
the same shape in O(1): a frozen dict whose ``messages`` is a
:class:`MessagesView`, a sequence that makes each core message dict
(``Message.as_mapping()``) when it is read. It compares equal to the list
``to_dict()`` would give; ``thaw()`` turns either into plain dicts and lists.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from .frozen import FrozenDict
from .messages import Message, Session

__all__ = ["MessagesView", "session_view"]


class MessagesView(Sequence[FrozenDict]):
    """A session's messages as frozen core message dicts, made on access."""

    __slots__ = ("_messages",)

    def __init__(self, messages: Sequence[Message]) -> None:
        self._messages = messages

    def __len__(self) -> int:
        return len(self._messages)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [m.as_mapping() for m in self._messages[index]]
        return self._messages[index].as_mapping()

    def __iter__(self) -> Iterator[FrozenDict]:
        for m in self._messages:
            yield m.as_mapping()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MessagesView):
            return self._messages == other._messages
        if isinstance(other, (list, tuple)):
            return len(other) == len(self._messages) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"MessagesView({len(self._messages)} messages)"


def session_view(session: Session) -> FrozenDict:
    """``session`` in its serialized shape, in O(1): messages are read through a :class:`MessagesView`."""
    return FrozenDict.from_frozen(
        {"session_id": session.session_id, "messages": MessagesView(session.messages), "metadata": session.metadata}
    )
