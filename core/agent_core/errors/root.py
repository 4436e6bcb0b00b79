"""The root of agent-core's errors, and how they survive pickling.

Its own module so the error families (:mod:`agent_core.errors.llm`,
:mod:`agent_core.errors.store`, :mod:`agent_core.errors`) can share it
without importing each other; import errors from :mod:`agent_core.errors`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["AgentCoreError", "rebuild"]


def rebuild(cls: type[BaseException], args: tuple[Any, ...], kwargs: dict[str, Any]) -> BaseException:
    """Re-create an error from its constructor arguments (pickle / deepcopy).

    ``BaseException`` pickles as ``cls(*self.args)``, which breaks any error
    whose ``__init__`` takes other arguments than its message.
    """
    return cls(*args, **kwargs)


class AgentCoreError(Exception):
    """The root of agent-core's typed errors: catch this to catch any of them."""
