"""A resolution the caller already made, handed to the request it was made for.

A caller that must know which plugins run before it starts a request (the server's
facades read the running plugins' declared keys to fit a client's fields) would
otherwise pay for resolution twice: once to look, once inside the request. So
``AgentCore.resolve`` records what each resolution was made from (a :class:`Basis`),
and a request given ``resolution=`` takes it instead of resolving again, once the
basis is checked to match: the same core with the same registered plugins, an equal
config and the same session plugin list. A mismatch is the caller's bug, not a reason
to quietly resolve again, so it is refused with an error that says which part differs.

A resolution carries the plugin instances its request then runs, and those live for
one request; handing the same resolution to a second request is refused too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import InvalidArgumentError
from ..plugins.resolution import Resolution
from ..values.frozen import freeze

__all__ = ["Basis", "check_handed"]


class Basis:
    """What a resolution was made from: the core, its registered plugins, the config, the session's plugin list."""

    __slots__ = ("_ticket", "config", "core", "only", "specs")

    def __init__(self, core: Any, specs: tuple[Any, ...], config: Mapping[str, Any],
                 only: frozenset[str] | None) -> None:
        self.core = core
        self.specs = specs  # the per-kind tuples as they were: registering a plugin replaces one
        self.config = freeze(dict(config))  # a frozen copy: a later edit of the caller's dict cannot hide
        self.only = only
        self._ticket = [True]  # one request takes it; list.pop is atomic, so two threads cannot both

    def take(self) -> bool:
        """Mark the resolution as used by a request; False when one already had it."""
        try:
            return self._ticket.pop()
        except IndexError:
            return False


def check_handed(resolution: Any, core: Any, specs: tuple[Any, ...], config: Mapping[str, Any],
                 only: frozenset[str] | None) -> Resolution:
    """``resolution`` if it was made by ``core`` for this config and session and not used yet.

    Raises:
        InvalidArgumentError (``argument="resolution"``): not a Resolution, made by another
            core or before a plugin was registered, for another config or session plugin
            list, or already used by a request.
    """
    basis = resolution.basis if isinstance(resolution, Resolution) else None
    if not isinstance(basis, Basis):
        problem = (f"must be a Resolution from AgentCore.resolve, got {type(resolution).__name__}"
                   if not isinstance(resolution, Resolution) else "was not made by AgentCore.resolve")
    elif basis.core is not core:
        problem = "was made by another AgentCore"
    elif len(basis.specs) != len(specs) or any(a is not b for a, b in zip(basis.specs, specs, strict=True)):
        problem = "was made before the plugins registered on this core changed"
    elif basis.config != freeze(dict(config)):
        problem = "was made for a different config (resolve the config this request runs with)"
    elif basis.only != only:
        problem = "was made for a different session plugin list (pass session= to resolve)"
    elif not basis.take():
        problem = "was already used by a request (its plugin instances serve one request; resolve again)"
    else:
        return resolution
    raise InvalidArgumentError(f"resolution {problem}", argument="resolution")
