"""Whether a provider streams: declared by the provider, read once per provider call, never guessed.

A streaming request calls ``stream_api`` (or ``astream_api``) only when the
provider streams; otherwise ``call_api``. The engine must not find that out
from an empty stream at run time (retrying with ``call_api`` would be a second,
billable request whenever a real stream happens to send nothing), and it does
not read the hook's code either. The provider says it:

* ``streams = True``: its stream hooks are real; a streaming request uses them.
* ``streams = False``: its ``stream_api`` is a placeholder (the seed's minimal
  provider writes ``yield from []`` and answers through ``call_api``), so every
  request uses ``call_api`` / ``acall_api``.
* not declared: it streams when it defines ``stream_api`` or ``astream_api``
  itself. The protocol base's ``stream_api`` (what a ``BaseProvider`` subclass
  inherits, yielding nothing) is the hook's default, not a stream.
"""

from __future__ import annotations

from ..errors import ConfigError
from .hooks import PluginSpec

__all__ = ["provider_streams"]

_STREAM_HOOKS = ("stream_api", "astream_api")
_CALL_HOOKS = ("call_api", "acall_api")


def provider_streams(spec: PluginSpec) -> bool:
    """Whether a streaming request to this provider streams (see the module docstring).

    Raises:
        ConfigError: ``streams`` is not True, False or absent, or it promises
            hooks the provider does not define (``True`` without
            ``stream_api``/``astream_api``, ``False`` without
            ``call_api``/``acall_api``); the message names the provider.
    """
    declared = getattr(spec.cls, "streams", None)
    if declared is None:
        return any(h in spec.defined for h in _STREAM_HOOKS)
    if declared is not True and declared is not False:
        raise ConfigError(
            f"provider {spec.name!r}: streams must be True or False, got {declared!r}", plugins=[spec.name]
        )
    needed = _STREAM_HOOKS if declared else _CALL_HOOKS
    if not any(h in spec.defined for h in needed):
        raise ConfigError(
            f"provider {spec.name!r} declares streams = {declared} but defines none of {', '.join(needed)}",
            plugins=[spec.name],
        )
    return declared
