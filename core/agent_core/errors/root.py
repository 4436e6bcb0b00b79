"""The root of agent-core's errors, and how they survive pickling.

Its own module so the error families (:mod:`agent_core.errors.llm`,
:mod:`agent_core.errors.store`, :mod:`agent_core.errors`) can share it
without importing each other; import errors from :mod:`agent_core.errors`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["AgentCoreError", "RebuiltByKeywords", "rebuild"]


def rebuild(cls: type[BaseException], args: tuple[Any, ...], kwargs: dict[str, Any]) -> BaseException:
    """Re-create an error from its constructor arguments (pickle / deepcopy).

    ``BaseException`` pickles as ``cls(*self.args)``, which breaks any error
    whose ``__init__`` takes other arguments than its message.
    """
    return cls(*args, **kwargs)


class RebuiltByKeywords:
    """Pickles (and deep-copies) an error built as ``cls(message, **keywords)`` by calling that again.

    An error whose ``__init__`` takes keyword arguments beside its message
    names them in ``_keywords``, each kept as the attribute of that name. One
    whose ``__init__`` takes other positional arguments writes its own
    ``__reduce__`` with :func:`rebuild`; with no ``_keywords`` the builtin way
    (``cls(*args)``, then the attributes) is used.
    """

    __slots__ = ()

    _keywords: tuple[str, ...] = ()

    def __reduce__(self) -> Any:
        if not self._keywords:
            return super().__reduce__()
        error: Any = self
        return rebuild, (type(self), error.args, {k: getattr(self, k) for k in self._keywords}), error.__dict__


class AgentCoreError(RebuiltByKeywords, Exception):
    """The root of agent-core's typed errors: catch this to catch any of them."""
