"""Request bodies, parsed once where they enter into typed values.

Every JSON body is decoded here and nowhere else: checked for nesting depth,
then converted into the route's :class:`msgspec.Struct` (each wing keeps its own: the
facades' beside their dialects, the sessions API's in
:mod:`agent_core.server.sessions.bodies`), so a wrong type anywhere is a 400 whose
message gives the path of the field (``Expected `str`, got `int` - at
`$.messages[1].role```). The routes then trust what they get. The sessions API's own bodies refuse unknown fields (a
typo is named rather than ignored). The facades' bodies declare every field
their API documents; :func:`parse_fields` hands back the others too, so a
field no plugin can honour is refused by name rather than dropped.
"""

from __future__ import annotations

import asyncio
import functools
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import msgspec

from .errors import ApiError

__all__ = [
    "aparse_body",
    "aparse_fields",
    "json_depth",
    "parse_body",
    "parse_fields",
]

T = TypeVar("T")


_decode = msgspec.json.Decoder().decode


def json_depth(value: Any, limit: int) -> int:
    """How deeply ``value`` nests (a scalar is 0), counting no further than ``limit + 1``.

    Level by level, each level's containers gathered by a comprehension: a body of 100,000
    small objects is walked in tens of milliseconds, not the half second a stack of
    (item, depth) pairs took. Decoded JSON holds plain ``dict`` and ``list`` only.
    """
    level = [value] if value.__class__ is dict or value.__class__ is list else []
    depth = 0
    while level and depth <= limit:
        depth += 1
        below: list[Any] = []
        for item in level:
            below += [c for c in (item.values() if item.__class__ is dict else item)
                      if c.__class__ is dict or c.__class__ is list]
        level = below
    return depth


async def aparse_fields(raw: bytes, kind: type[T], *, max_depth: int, check: Callable[[T], None] | None = None,
                        early: Callable[[bytes], None] | None = None) -> tuple[T, dict[str, Any]]:
    """:func:`parse_fields`, on a thread of the server's own for a large body.

    A body of megabytes takes a fifth of a second to parse and check; on the event loop that
    would hold every other client's request (``/healthz`` included) as long. The parse threads
    are not the default pool's, which the store's calls use.
    """
    if len(raw) < OFF_LOOP_BYTES:
        return parse_fields(raw, kind, max_depth=max_depth, check=check)
    return await asyncio.get_running_loop().run_in_executor(
        _parsers(), functools.partial(parse_fields, raw, kind, max_depth=max_depth, check=check, early=early))


async def aparse_body(raw: bytes, kind: type[T], *, max_depth: int, empty_ok: bool = False) -> T:
    """:func:`parse_body`, off the event loop for a large body (see :func:`aparse_fields`)."""
    if len(raw) < OFF_LOOP_BYTES:
        return parse_body(raw, kind, max_depth=max_depth, empty_ok=empty_ok)
    return await asyncio.get_running_loop().run_in_executor(
        _parsers(), functools.partial(parse_body, raw, kind, max_depth=max_depth, empty_ok=empty_ok))


#: bodies at least this large are parsed off the event loop
OFF_LOOP_BYTES = 256 * 1024


@functools.cache
def _parsers() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=2, thread_name_prefix="agent-core-parse")


def parse_fields(raw: bytes, kind: type[T], *, max_depth: int, check: Callable[[T], None] | None = None,
                 early: Callable[[bytes], None] | None = None) -> tuple[T, dict[str, Any]]:
    """``raw`` as a ``kind`` value, and the top-level fields ``kind`` does not declare (by name).

    ``check`` (a facade's count of what the request becomes) sees the typed value and may
    refuse it. ``early`` sees a large body first: a count over a shallow decode (one pass in
    C that builds no object per content block), so a body of 100,000 blocks is refused before
    the generic decode and the depth walk build and visit each of them.
    """
    if early is not None and len(raw) >= OFF_LOOP_BYTES:
        early(raw)
    value = _object_of(raw, max_depth, empty_ok=False)
    known = set(kind.__struct_fields__)  # type: ignore[attr-defined]
    typed = _converted(value, kind)
    if check is not None:
        check(typed)
    return typed, {k: v for k, v in value.items() if k not in known}


def parse_body(raw: bytes, kind: type[T], *, max_depth: int, empty_ok: bool = False) -> T:
    """``raw`` as a ``kind`` value.

    Raises:
        ApiError: 400 ``invalid_json`` (not JSON, not an object, too deep) or
            ``invalid_request_error`` (a field of the wrong type or value, named by its path).
    """
    return _converted(_object_of(raw, max_depth, empty_ok=empty_ok), kind)


def _object_of(raw: bytes, max_depth: int, *, empty_ok: bool) -> dict[str, Any]:
    if not raw.strip():
        if empty_ok:
            return {}
        raise ApiError(400, "invalid_json", "the request body is empty; send a JSON object")
    try:
        value = _decode(raw)
    except RecursionError:
        raise ApiError(400, "invalid_json", f"the request body nests deeper than {max_depth} levels") from None
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ApiError(400, "invalid_json", f"the request body is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ApiError(400, "invalid_json", f"the request body must be a JSON object, got {type(value).__name__}")
    if json_depth(value, max_depth) > max_depth:
        raise ApiError(400, "invalid_json",
                       f"the request body nests deeper than {max_depth} levels (max_json_depth)")
    return value


def _converted(value: dict[str, Any], kind: type[T]) -> T:
    try:
        return msgspec.convert(value, kind)
    except msgspec.ValidationError as exc:
        raise ApiError(400, "invalid_request_error", str(exc), param=_param(str(exc))) from None


def _param(message: str) -> str | None:
    """The field a msgspec validation message is about, as ``messages[0].role``."""
    where = _AT.search(message)
    path = where.group(1) if where else ""
    missing = _MISSING.search(message)
    if missing:
        path = f"{path}.{missing.group(1)}" if path else missing.group(1)
    return path or None


_AT = re.compile(r"- at `\$\.?([^`]*)`$")
_MISSING = re.compile(r"missing required field `([^`]*)`")
