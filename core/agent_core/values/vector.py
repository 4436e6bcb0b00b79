"""``FrozenVector``: a session's messages, as a persistent vector behind a read-only ``Sequence`` face.

Adding a message shares structure with the old session (O(log n)) instead of
copying the whole history; see :mod:`agent_core.values.frozen` for the other frozen
containers.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NoReturn, TypeVar, overload

import pyrsistent

__all__ = ["FrozenVector"]

T = TypeVar("T")


def refusing(name: str, message: str) -> Any:
    """A stand-in for the mutating method ``name`` of an immutable value: it raises ``TypeError(message)``.

    ``message`` says what to write instead. The frozen containers of
    :mod:`agent_core.values.frozen` use it too.
    """

    def method(self: Any, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError(message)

    method.__name__ = name
    return method


def _refuse_vector(name: str) -> Any:
    return refusing(
        name,
        f"{name}() cannot change a session's messages: sessions are values. "
        "Use session.with_message(msg) / session.with_messages(msgs), or "
        "core.add_message(session, msg), which return a new Session.",
    )


_NO_MEMO: pyrsistent.PVector = pyrsistent.pvector()


class FrozenVector(Sequence[T]):
    """A read-only sequence backed by a pyrsistent vector.

    Adding items with :meth:`appended` / :meth:`extended` shares structure
    with the original and costs O(log n). Compares equal to lists and tuples
    with the same items.

    A vector may also carry a *prefix memo*: one value per leading item that
    some caller computed from those items (see :meth:`prefix_memo`).
    """

    __slots__ = ("_items", "_hash", "_memo")

    def __init__(self, items: Iterable[T] = ()) -> None:
        self._items = items if isinstance(items, pyrsistent.PVector) else pyrsistent.pvector(items)
        self._hash: int | None = None
        self._memo: pyrsistent.PVector = _NO_MEMO

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> FrozenVector[T]: ...
    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            out = FrozenVector(self._items[index])
            if index.start in (None, 0) and index.step in (None, 1) and self._memo:
                # a prefix holds the very same leading items, so the memo still describes them
                out._memo = self._memo[: len(out)] if len(self._memo) > len(out) else self._memo
            return out
        return self._items[index]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[T]:
        return iter(self._items)

    def __reversed__(self) -> Iterator[T]:
        return reversed(self._items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FrozenVector):
            return self._items == other._items
        if isinstance(other, (list, tuple)):
            return len(other) == len(self._items) and all(a == b for a, b in zip(self._items, other))
        return NotImplemented

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(tuple(self._items))
        return self._hash

    def __repr__(self) -> str:
        return f"FrozenVector({list(self._items)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenVector, (list(self._items),))

    __setitem__ = _refuse_vector("__setitem__")
    __delitem__ = _refuse_vector("__delitem__")
    __iadd__ = _refuse_vector("__iadd__")
    append = _refuse_vector("append")
    extend = _refuse_vector("extend")
    insert = _refuse_vector("insert")
    pop = _refuse_vector("pop")
    remove = _refuse_vector("remove")
    clear = _refuse_vector("clear")
    set = _refuse_vector("set")

    def appended(self, item: T) -> FrozenVector[T]:
        """Return a new vector with ``item`` at the end (O(log n))."""
        out = FrozenVector(self._items.append(item))
        out._memo = self._memo
        return out

    def extended(self, items: Iterable[T]) -> FrozenVector[T]:
        """Return a new vector with ``items`` at the end."""
        out = FrozenVector(self._items.extend(items))
        out._memo = self._memo
        return out

    def prefix_memo(self) -> pyrsistent.PVector:
        """Values computed for this vector's leading items (item ``i`` -> value ``i``); may be empty.

        A memo describes only a prefix of the items, and every item is
        immutable, so a vector made by appending to this one (or a prefix
        slice of it) inherits the memo as is: its leading items are the very
        same objects. The native history keeps chained digests here, so that
        checking a stored prefix costs only the messages added since
        (:mod:`agent_core.values.native_history`). The memo is never serialized.
        """
        return self._memo

    def remember_prefix(self, memo: pyrsistent.PVector) -> None:
        """Keep ``memo`` (at most one value per item) as this vector's prefix memo."""
        if len(memo) > len(self._items):
            raise ValueError(f"a prefix memo of {len(memo)} values for a vector of {len(self._items)} items")
        self._memo = memo
