"""A plugin's near misses, said when it is registered, and warnings that point at the caller's line.

Three mistakes cost a plugin author an afternoon because nothing says them plainly: a
method named almost like a hook (``proces_chunk``), which the engine never calls; a hook
that leaves out a middle parameter (Python then reports "multiple values for argument
'state'" at the first call); and a warning whose line is somewhere inside the engine.
:func:`warn_near_misses` and :func:`check_positions` say the first two when a plugin is
registered; :func:`caller_level` makes every engine warning name the line outside
agent_core that led to it.
"""

from __future__ import annotations

import abc
import difflib
import os
import sys
import warnings
from collections.abc import Collection, Sequence

from ..errors import ConfigError, UnknownHookWarning

__all__ = ["caller_level", "check_positions", "warn_near_misses"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def caller_level() -> int:
    """The ``stacklevel`` of the first frame outside agent_core, so a warning names the caller's line.

    A fixed number would point into the engine from some entry points and too far out from
    others (a request, a stream, a resolve, a server route all reach this at other depths).
    """
    frame, level = sys._getframe(1), 1  # the caller of this function, which calls warnings.warn
    while frame is not None and (frame.f_code.co_filename.startswith(_PACKAGE)
                                 or frame.f_code.co_filename in _MACHINERY):
        frame, level = frame.f_back, level + 1
    return level


#: frames between a class statement and ``__init_subclass__`` (the plugin kit's bases are ABCs)
_MACHINERY = frozenset({"<frozen abc>", getattr(abc, "__file__", "<frozen abc>")})


#: (class, kind) -> its near misses as (method, hook it resembles, kind of that hook or None for its own)
_NEAR_MISSES: dict[tuple[type, str], list[tuple[str, str, bool]]] = {}


def warn_near_misses(cls: type, kind: str, plugin: str, hooks: Collection[str], all_hooks: Collection[str]) -> None:
    """Warn of a method named almost like a hook (``proces_chunk``): it would never be called.

    The search runs once per class; the warning is issued at every registration, so each
    test that registers the plugin sees it (Python's own filters still show it once per
    line in a long-running process). A name close to a hook of another kind of plugin
    (``proces_chunk`` on a feature) is said too, since the plugin may be registered as
    the wrong kind.
    """
    found = _NEAR_MISSES.get((cls, kind))
    if found is None:
        found = []
        for attr in dir(cls):
            if attr.startswith("_") or attr in hooks or not callable(getattr(cls, attr, None)):
                continue
            if attr in all_hooks:  # exactly a hook of another kind (process_chunk on a feature): never called
                found.append((attr, attr, False))
                continue
            own = difflib.get_close_matches(attr, sorted(hooks), n=1, cutoff=0.85)
            other = own or difflib.get_close_matches(attr, sorted(all_hooks), n=1, cutoff=0.85)
            if other:
                found.append((attr, other[0], bool(own)))
        _NEAR_MISSES[(cls, kind)] = found
    for attr, hook, own in found:
        where = "" if own else f" (a hook of another kind of plugin: is {plugin!r} registered as the right kind?)"
        meant = f"; did you mean {hook!r}?" if hook != attr else ""
        warnings.warn(UnknownHookWarning(
            f"plugin {plugin!r} defines {attr!r}, which is no {kind} hook and will never be called{meant}{where}",
            plugin=plugin, name=attr, suggestion=hook), stacklevel=caller_level())


def check_positions(plugin: str, hook: str, names: Sequence[str], expected: Sequence[str]) -> None:
    """Refuse a hook whose parameters sit at other positions than the engine passes them.

    Arguments go by position, so a hook that leaves out a middle parameter would get the
    next one's value under this name; only trailing parameters may be left out.

    Raises:
        ConfigError: names the plugin, the hook and the parameters it lacks.
    """
    for i, name in enumerate(names):
        if name in expected and expected.index(name) != i:
            lacking = [n for n in expected[:expected.index(name)] if n not in names]
            raise ConfigError(
                f"plugin {plugin!r}: hook {hook!r} takes ({', '.join(names)}), but the engine passes "
                f"({', '.join(expected)}) by position: it lacks {', '.join(map(repr, lacking))} before {name!r} "
                "(a hook may leave out trailing parameters only)",
                plugins=[plugin],
            )
