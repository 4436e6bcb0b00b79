"""What a client's values may become: the checks every route shares, one per kind of value.

Theory of operation. Headers are checked before any route runs (:mod:`.guard`), and a
request's ``config`` goes through the tenant's :class:`~agent_core.ConfigPolicy`. The
values here reach the engine or the store by other paths, so they get checks of their own,
written once and used by each route that takes such a value:

- **Integers** in headers, the query and paths are read with an ASCII grammar. Python's
  ``str.isdigit`` is true for ``"²"`` and ``"٣"``, which ``int`` then refuses or reads
  as another number: :func:`ascii_int` takes ``[0-9]`` only.
- **Session metadata** a client stores is data, not configuration, with two exceptions
  the engine would obey: ``plugins`` (a session's own plugin list) and the keys under the
  ``agent_core.`` prefix (the engine's own records, such as a provider's native history).
  :func:`check_metadata` refuses both; a stored list the server finds anyway (written by
  the operator's CLI on the same store, or before this check) is not read
  (:func:`session_plugin_mode`).
- **Amounts**: what a facade request becomes is counted before any work
  (:mod:`.amounts`).

The full table of what a client can send and what becomes of it is in ``docs/security.md``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ...errors import ConfigNotAllowedError
from ..http.errors import ApiError

__all__ = ["RESERVED_PREFIX", "ascii_int", "check_metadata", "is_ascii_int", "session_plugin_mode"]

#: Session and message metadata keys under this prefix are the engine's own records.
RESERVED_PREFIX = "agent_core."

_DIGITS = re.compile(r"[0-9]+", re.ASCII)


def is_ascii_int(text: str) -> bool:
    """Whether ``text`` is one or more ASCII digits and nothing else (``"²"`` and ``"١"`` are not)."""
    return _DIGITS.fullmatch(text) is not None


def ascii_int(text: str, field: str, low: int, high: int, *, code: str = "invalid_request_error",
              example: str = "") -> int:
    """``text`` as an integer from ``low`` to ``high``; else a 400 naming ``field``.

    At most 18 digits are read, so no client can make the server convert a long string.
    """
    if is_ascii_int(text) and len(text) <= 18:
        value = int(text)
        if low <= value <= high:
            return value
    hint = f" (e.g. {example})" if example else ""
    raise ApiError(400, code, f"{field} must be an integer from {low} to {high}{hint}, got {text[:40]!r}",
                   param=field)


def session_plugin_mode(allow: frozenset[str]) -> str:
    """How the engine reads a stored session's ``plugins`` list for a tenant allowed ``allow``.

    Only a tenant that may set ``enabled_plugins`` may have a session list read, and then only
    to opt plugins in (``add``): a list never switches off what the operator runs. For every
    other tenant the list is not read (``ignore``).
    """
    return "add" if "enabled_plugins" in allow else "ignore"


def check_metadata(metadata: Mapping[str, Any], allow: frozenset[str], how_to_allow: str,
                   where: str = "metadata") -> None:
    """Refuse session metadata the engine would obey as configuration.

    Raises:
        ConfigNotAllowedError: ``plugins`` from a tenant that may not set ``enabled_plugins`` (403).
        ApiError: a key under :data:`RESERVED_PREFIX` (400), whoever sends it.
    """
    for key in metadata:
        if isinstance(key, str) and key.startswith(RESERVED_PREFIX):
            raise ApiError(400, "invalid_request_error",
                           f"{where}.{key}: keys starting with {RESERVED_PREFIX!r} are the engine's own records; "
                           "a client may not write them", param=f"{where}.{key}")
    if "plugins" in metadata and "enabled_plugins" not in allow:
        raise ConfigNotAllowedError(
            f"{where}.plugins is a session's plugin list, which the operator sets, not a client; to let clients "
            "opt plugins in, " + how_to_allow.replace("{key}", "enabled_plugins"), key=f"{where}.plugins")
