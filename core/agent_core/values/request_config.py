"""The config a request hands its plugins: a frozen mapping that names a key nobody declared.

A plugin reads its settings as ``state["config"]["key"]`` or ``context["config"]["key"]``.
When it forgot to declare the key in its ``config_schema``, a plain mapping would fail
with a bare ``KeyError: 'key'`` far from the cause, or (when the user happened to set
the key) work on one machine and not on the next. This mapping says what happened and
what the fix is (:class:`~agent_core.errors.UndeclaredConfigKeyError`, still a
``KeyError``); the engine then names the plugin and hook that read it. Reading a key
that is there costs what it costs on any dict: ``__missing__`` runs only on a miss.
"""

from __future__ import annotations

import difflib
from typing import Any, NoReturn

from ..errors import UndeclaredConfigKeyError
from .frozen import FrozenDict, left_as_is

__all__ = ["RequestConfig"]


@left_as_is
class RequestConfig(FrozenDict):
    """A request's config (see the module docstring); ``set``, ``merged`` and ``without`` keep the class."""

    __slots__ = ()

    def __missing__(self, key: Any) -> NoReturn:
        if not isinstance(key, str):
            raise KeyError(key)
        close = difflib.get_close_matches(key, [k for k in self if isinstance(k, str)], n=1, cutoff=0.75)
        raise UndeclaredConfigKeyError(key, close[0] if close else None)

    def __reduce__(self) -> tuple[Any, ...]:
        return (RequestConfig, (dict(self),))
