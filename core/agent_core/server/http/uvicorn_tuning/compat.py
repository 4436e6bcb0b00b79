"""Whether the installed uvicorn is one the tuning was written and tested for.

The tuning subclasses uvicorn's internal HTTP/1.1 protocol and reads the state of its
request cycles; none of that is uvicorn's public API, and a minor release may rename
or drop any of it. Two checks guard it before it is used: the version against
:data:`TESTED`, and the presence of every internal it touches (:data:`NEEDED`). An
attribute set in a method (``self.cycle = ...``) is looked up among the names that
method's code stores or reads, so a renamed attribute is found missing before a
connection fails on it.
"""

from __future__ import annotations

import re
from importlib import metadata
from typing import Any

__all__ = ["NEEDED", "TESTED", "missing_internals", "why_not_tuned"]

#: the uvicorn releases the tuning was tested with: from the first, up to (not including) the second
TESTED: tuple[tuple[int, int], tuple[int, int]] = ((0, 29), (0, 55))

#: (module, class, method or None, names it must hold): each internal the tuning reads, writes or overrides.
#: With a method, the names are attributes that method sets on ``self``; without, the class's own attributes.
NEEDED: tuple[tuple[str, str, str | None, tuple[str, ...]], ...] = (
    ("uvicorn.protocols.http.h11_impl", "H11Protocol", None,
     ("connection_made", "connection_lost", "handle_events", "on_response_complete")),
    ("uvicorn.protocols.http.h11_impl", "H11Protocol", "__init__", ("loop", "cycle", "transport")),
    ("uvicorn.protocols.http.h11_impl", "RequestResponseCycle", None, ("send",)),
    ("uvicorn.protocols.http.h11_impl", "RequestResponseCycle", "__init__",
     ("scope", "transport", "flow", "default_headers", "disconnected", "response_started", "response_complete")),
    ("uvicorn.protocols.http.flow_control", "FlowControl", "__init__", ("write_paused",)),
)


def _release(version: str) -> tuple[int, int] | None:
    """``(major, minor)`` of a version string such as ``0.54.0`` or ``0.55.0rc1``; None if it has none."""
    found = re.match(r"(\d+)\.(\d+)", version)
    return (int(found[1]), int(found[2])) if found else None


def missing_internals(needed: tuple[tuple[str, str, str | None, tuple[str, ...]], ...]) -> list[str]:
    import importlib

    missing: list[str] = []
    for module_name, class_name, method, names in needed:
        try:
            owner: Any = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError):
            missing.append(f"{module_name}.{class_name}")
            continue
        code = getattr(getattr(owner, method, None), "__code__", None) if method else None
        if method and code is None:
            missing.append(f"{class_name}.{method}")
            continue
        for name in names:
            present = name in code.co_names if code is not None else callable(getattr(owner, name, None))
            if not present:
                missing.append(f"{class_name}.{name}")
    return missing


def why_not_tuned(version: str | None = None) -> str | None:
    """Why the tuning must stay off for this uvicorn (the version out of :data:`TESTED`, an internal
    gone, uvicorn not installed), or None when it may run.

    ``version`` defaults to the installed uvicorn's, read from its distribution's metadata.
    """
    if version is None:
        try:
            version = metadata.version("uvicorn")
        except metadata.PackageNotFoundError:
            return "uvicorn is not installed"
    low, high = TESTED
    release = _release(version)
    if release is None or not low <= release < high:
        return (f"uvicorn {version} is outside the releases it was tested with "
                f"({low[0]}.{low[1]} up to, not including, {high[0]}.{high[1]})")
    missing = missing_internals(NEEDED)
    if missing:
        return f"uvicorn {version} lacks internals it relies on: {', '.join(missing)}"
    return None
