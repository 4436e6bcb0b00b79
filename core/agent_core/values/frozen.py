"""Deeply immutable containers that still look like ``dict`` and ``list``.

Theory of operation
-------------------
Plugins written in the style of the original platform treat messages and
state as plain dicts and lists: they test ``isinstance(m, dict)``, splat them
(``{**m, "content": ...}``), and build new lists with ``[*native, msg]``.
Wrapping values in a foreign ``Mapping`` type would break every one of those
plugins, so the two workhorse containers here *are* a ``dict`` and a ``list``
(subclasses) whose mutating methods raise a ``TypeError`` that says what to
write instead. Reading costs what reading a dict or list costs.

``freeze`` turns any JSON-like value into these containers, recursively. It
never walks into a container that is already frozen: a frozen container only
ever holds frozen values (its constructor guarantees it), so a plugin that
returns the history it was given costs one ``isinstance`` check, not a walk
over the history. That is what keeps the per-chunk cost of the hot path
independent of the conversation length.

``FrozenVector`` (in :mod:`agent_core.values.vector`) is the one persistent structure: a pyrsistent vector behind
a read-only ``Sequence`` face, used for ``Session.messages`` so that adding a
message shares structure with the old session (O(log n)) instead of copying
the whole history.

Two bounds keep every value safe to walk, print and encode. ``freeze``
refuses a value nested deeper than :data:`MAX_DEPTH` levels (a value that
contains itself always is) with :class:`~agent_core.errors.InvalidValueError`,
never a bare ``RecursionError``. And :func:`freeze_json`, used for what goes
into messages, sessions and tool results, also makes sure JSON can carry the
value exactly, so ``Session.from_json(s.to_json()) == s`` always holds: it
normalises, once, what has one obvious JSON form and refuses the rest (the
rule is in ``docs/conventions.md``). A container it has checked remembers
that, so checking a session again costs only its new parts.

A determined caller can still bypass the guards with ``dict.__setitem__(d,
...)``; the guards exist to catch the honest mistake (``native.append(m)``
silently losing ``m``), not to sandbox hostile code.

Why one module: the two containers and ``freeze`` keep one promise together (a frozen
container only holds frozen values), which ``freeze`` relies on to skip what is frozen.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar, overload
from weakref import ref as _weak

import pyrsistent

from ..errors import InvalidValueError
from .vector import FrozenVector, refusing

__all__ = ["MAX_DEPTH", "FrozenDict", "FrozenList", "FrozenVector", "freeze", "left_as_is", "thaw"]

T = TypeVar("T")

#: how deeply a value may nest (a JSON object or array counts one level)
MAX_DEPTH = 256


_SCALARS = frozenset({str, int, float, bool, type(None), bytes})  # a set: one hash per check, not six compares


def _refuse_dict(name: str) -> Any:
    return refusing(
        name,
        f"FrozenDict is immutable: {name}() would change a value other plugins "
        "also see. Build a new mapping instead and return it from your hook, e.g. "
        "{**state, 'key': value} for the state, or {**message, 'content': text} for a message.",
    )


def _refuse_list(name: str) -> Any:
    return refusing(
        name,
        f"FrozenList is immutable: {name}() would change a value other plugins "
        "also see. Return a new list instead, e.g. [*native_messages, msg], or "
        "[{**m, 'content': text} for m in partial_messages].",
    )


class _Frozen:
    """What both frozen containers do alike: a hash made once and kept, a repr and a pickle that
    name the frozen type, and copies that are the value itself (nothing in it can change)."""

    __slots__ = ()
    _hash: int | None
    _builtin: type  # the container it is made of (dict, list), for its repr and its pickle

    def _hash_key(self) -> Any:
        raise NotImplementedError

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(self._hash_key())
        return self._hash

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._builtin.__repr__(self)})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self._builtin(self),))

    def __copy__(self) -> Any:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return self


class FrozenDict(_Frozen, dict):  # type: ignore[type-arg]
    """A ``dict`` that refuses mutation and freezes the values it is given.

    Equal to any dict with the same items; hashable when its values are.
    Use :meth:`set`, :meth:`merged` or :meth:`without` (or a dict display)
    to derive a changed copy.
    """

    __slots__ = ("_hash", "_json")
    _builtin = dict

    def _hash_key(self) -> Any:
        return frozenset(self.items())

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raw = dict(*args, **kwargs)
        dict.__init__(self, {k: freeze(v) for k, v in raw.items()})
        self._hash: int | None = None
        self._json = False  # True once freeze_json has checked this tree

    @classmethod
    def from_frozen(cls, items: Mapping[str, Any]) -> FrozenDict:
        """A FrozenDict of ``items`` whose values are already frozen, copied without a walk.

        The constructor freezes every value, which for a value built of frozen
        parts (a context of frozen config and views, a message's fields) is a
        walk that finds nothing to do; this is the same dict without it. The
        caller vouches that every value is frozen (a scalar, a ``FrozenDict``
        or ``FrozenList``, or another immutable value): one that is not stays
        mutable inside the frozen dict.
        """
        new = _new_dict(cls)  # bound C methods below: dict.__init__ would go through its slot wrapper
        _fill_dict(new, items)
        new._hash = None
        new._json = False
        return new

    @classmethod
    def fromkeys(cls, keys: Iterable[Any], value: Any = None) -> FrozenDict:  # type: ignore[override]
        # dict.fromkeys fills the new instance with __setitem__, which we refuse.
        frozen = freeze(value)
        return cls.from_frozen({k: frozen for k in keys})

    __setitem__ = _refuse_dict("__setitem__")
    __delitem__ = _refuse_dict("__delitem__")
    __ior__ = _refuse_dict("__ior__")
    clear = _refuse_dict("clear")
    pop = _refuse_dict("pop")
    popitem = _refuse_dict("popitem")
    setdefault = _refuse_dict("setdefault")
    update = _refuse_dict("update")

    def __or__(self, other: Any) -> FrozenDict:  # type: ignore[override]
        if not isinstance(other, Mapping):
            return NotImplemented
        return self.merged(other)

    def set(self, key: str, value: Any) -> FrozenDict:
        """Return a copy with ``key`` bound to ``value`` (frozen)."""
        items = dict(self)
        items[key] = freeze(value)
        return type(self).from_frozen(items)

    def merged(self, other: Mapping[str, Any] | None = None, **kwargs: Any) -> FrozenDict:
        """Return a copy updated with ``other`` and ``kwargs`` (shallow merge)."""
        items = dict(self)
        for source in (other or {}, kwargs):
            for k, v in source.items():
                items[k] = freeze(v)
        return type(self).from_frozen(items)

    def without(self, *keys: str) -> FrozenDict:
        """Return a copy without ``keys`` (missing keys are ignored)."""
        return type(self).from_frozen({k: v for k, v in self.items() if k not in keys})


class FrozenList(_Frozen, list):  # type: ignore[type-arg]
    """A ``list`` that refuses mutation and freezes its items.

    Equal to any list with the same items; hashable when its items are.
    """

    # _head: a weak reference to the list this one was made from by _joined (see begins_with)
    __slots__ = ("_hash", "_json", "_head", "__weakref__")
    _builtin = list

    def _hash_key(self) -> Any:
        return tuple(self)

    def __init__(self, items: Iterable[Any] = ()) -> None:
        list.__init__(self, [freeze(v) for v in items])
        self._hash: int | None = None
        self._json = False

    @classmethod
    def from_frozen(cls, items: Iterable[Any]) -> FrozenList:
        """A FrozenList of ``items``, already frozen, copied without a walk.

        As :meth:`FrozenDict.from_frozen`: the caller vouches that every item
        is frozen (descriptors, frozen messages, the parts of other frozen lists).
        """
        new = _new_list(cls)  # as FrozenDict.from_frozen: list.extend costs less than list.__init__
        _extend(new, items)
        new._hash = None
        new._json = False
        return new

    @classmethod
    def joined(cls, head: Iterable[Any], tail: Iterable[Any]) -> FrozenList:
        """``head`` then ``tail``, both already frozen, in one copy (histories grow this way).

        The new list remembers ``head`` (weakly), so :func:`begins_with` can
        tell that it starts with it without comparing the items.
        """
        new = _new_list(cls)
        _extend(new, head)
        _extend(new, tail)
        new._hash = None
        # two lists freeze_json has checked make a checked list: nothing new to walk
        new._json = getattr(head, "_json", False) and getattr(tail, "_json", False)
        if head.__class__ is FrozenList and head:
            new._head = _weak(head)
        return new

    _joined = joined  # the name the kernel used before joined was public

    __setitem__ = _refuse_list("__setitem__")
    __delitem__ = _refuse_list("__delitem__")
    __iadd__ = _refuse_list("__iadd__")
    __imul__ = _refuse_list("__imul__")
    append = _refuse_list("append")
    clear = _refuse_list("clear")
    extend = _refuse_list("extend")
    insert = _refuse_list("insert")
    pop = _refuse_list("pop")
    remove = _refuse_list("remove")
    reverse = _refuse_list("reverse")
    sort = _refuse_list("sort")

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> FrozenList: ...
    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return FrozenList.from_frozen(list.__getitem__(self, index))
        return list.__getitem__(self, index)

    def __add__(self, other: Any) -> FrozenList:  # type: ignore[override]
        return FrozenList.from_frozen([*self, *(freeze(v) for v in other)])

    def appended(self, item: Any) -> FrozenList:
        """Return a copy with ``item`` (frozen) at the end."""
        return FrozenList.from_frozen([*self, freeze(item)])


#: classes ``freeze`` returns as they are: checked in its loops so a mostly frozen value costs
#: no call per item (a plugin's new state is the old one with a key or two changed)
_KEPT = {*_SCALARS, FrozenDict, FrozenList}


def left_as_is(cls: type[T]) -> type[T]:
    """Mark the kernel's own ``cls`` as one :func:`freeze` hands back at once, as it is.

    Freeze leaves any object that is not a container as it is, but it learns
    that only after asking whether it is a mapping, a sequence or a set, three
    ``isinstance`` checks against abstract classes. The pipeline and the tool
    registry ride in every hook's context, which is frozen a few times a
    request; a class marked here skips those questions. Only the exact class
    is marked (a subclass is asked as before), and only for classes that are
    none of those things, so the answer cannot differ.
    """
    _KEPT.add(cls)
    return cls
_new_dict, _fill_dict, _set_item = dict.__new__, dict.update, dict.__setitem__
_new_list, _extend, _set_index = list.__new__, list.extend, list.__setitem__


def begins_with(value: FrozenList, base: Sequence[Any]) -> bool:
    """True when ``value``'s first ``len(base)`` items equal ``base``'s.

    A history grows by :meth:`FrozenList._joined`, which remembers (weakly)
    the list it started from; since frozen lists never change, a list
    descended from ``base`` that way begins with it, and finding that out
    costs a few pointer hops instead of a pass over every item. Anything else
    is compared in C.
    """
    link: Any = value
    for _ in range(8):  # a history is joined a few times per provider call
        ref = getattr(link, "_head", None)
        if ref is None:
            break
        link = ref()
        if link is base:
            return True
        if link is None:
            break
    k = len(base)
    return len(value) >= k and list.__getitem__(value, slice(0, k)) == base


def freeze(value: Any, _budget: int = MAX_DEPTH) -> Any:
    """Return a deeply immutable version of a JSON-like ``value``.

    Dicts become :class:`FrozenDict`, lists and tuples become
    :class:`FrozenList`, sets become ``frozenset``. Already-frozen containers
    and scalars come back as the same object, so freezing something that is
    mostly frozen costs only the new parts. Other objects (a plugin's client,
    the ``core`` in a context) are left as they are. (``_budget`` is the
    recursion's own bookkeeping: how many more levels may follow.)

    Raises:
        InvalidValueError: ``value`` nests deeper than :data:`MAX_DEPTH`
            levels (a value that contains itself always does).
    """
    # Loops rather than comprehensions: one Python frame per level, so the
    # depth bound, not the interpreter's recursion limit, is what stops a walk.
    cls = value.__class__
    if cls in _KEPT:
        return value
    if _budget <= 0:
        raise InvalidValueError(f"the value is nested deeper than {MAX_DEPTH} levels (or contains itself)")
    _budget -= 1
    # the plain types first: isinstance against the ABCs costs more than the copy of a small dict.
    # Copied in C, then only the items that are not frozen yet are replaced: a plugin's new state
    # is usually the old one with one key changed.
    if cls is dict:
        new = _new_dict(FrozenDict)
        _fill_dict(new, value)
        for k, v in value.items():
            if v.__class__ not in _KEPT:
                _set_item(new, k, freeze(v, _budget))
        new._hash = None
        new._json = False
        return new
    if cls is list or cls is tuple:
        lst = _new_list(FrozenList)
        _extend(lst, value)
        i = 0
        for v in value:
            if v.__class__ not in _KEPT:
                _set_index(lst, i, freeze(v, _budget))
            i += 1
        lst._hash = None
        lst._json = False
        return lst
    return _freeze_other(value, _budget)


def _freeze_other(value: Any, budget: int) -> Any:
    """:func:`freeze` of what is not a plain dict, list or tuple: other mappings and sequences, sets, objects.

    Out of :func:`freeze` so that its plain cases, which a plugin's state and
    messages almost always are, stay one frame; ``budget`` is already counted
    down for this level.
    """
    if isinstance(value, (dict, Mapping)) and not isinstance(value, FrozenDict):
        items = {}
        for k, v in value.items():
            items[k] = v if v.__class__ in _KEPT else freeze(v, budget)
        new = _new_dict(FrozenDict)
        _fill_dict(new, items)
        new._hash = None
        new._json = False
        return new
    if isinstance(value, (list, tuple, pyrsistent.PVector)) and not isinstance(value, FrozenList):
        out = []
        for v in value:
            out.append(v if v.__class__ in _KEPT else freeze(v, budget))
        lst = _new_list(FrozenList)
        _extend(lst, out)
        lst._hash = None
        lst._json = False
        return lst
    if isinstance(value, (FrozenDict, FrozenList, FrozenVector, frozenset)):
        return value
    if isinstance(value, (set, pyrsistent.PSet)):
        return frozenset(freeze(v, budget) for v in value)
    return value


def thaw(value: Any) -> Any:
    """Return a plain, mutable, independent deep copy of a frozen value."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, FrozenVector, pyrsistent.PVector)):
        return [thaw(v) for v in value]
    if isinstance(value, frozenset):
        return [thaw(v) for v in value]
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray)):
        return [thaw(v) for v in value]  # a lazy view (agent_core.values.views.MessagesView)
    if hasattr(value, "to_dict") and callable(value.to_dict):
        return value.to_dict()
    return value
