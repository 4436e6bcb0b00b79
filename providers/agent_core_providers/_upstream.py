"""The upstream API's own account of a failure, as a gateway must repeat it.

Our typed errors reword a failure for a program that calls agent-core. A
server in front of other clients (``agent-core serve``) must instead answer
with what the API said: OpenAI's clients tell a spent quota from throttling
by ``code``, find the offending field by ``param``, pace themselves by the
``x-ratelimit-*`` headers, and quote the upstream request id to support. So
every error built from an API's answer carries an
:class:`~agent_core.errors.UpstreamDetail` with those values untouched, except
that every text is scrubbed of the call's secrets and bounded: a hostile or
broken server must not be able to make us forward a key or a megabyte.

Only the headers a gateway should pass on are kept (:func:`passed_headers`):
the rate-limit families, ``retry-after`` / ``retry-after-ms`` and the
request-id headers. Cookies, server banners and the like stay behind.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import msgspec
from agent_core.errors import UpstreamDetail

from ._scrub import bounded, scrub

__all__ = [
    "HEADER_LIMIT",
    "MAX_HEADERS",
    "PASSED_HEADERS",
    "PASSED_PREFIXES",
    "passed_headers",
    "scrubbed_upstream",
    "upstream_detail",
]

#: Response headers passed on by exact (lowercase) name.
PASSED_HEADERS = frozenset({"retry-after", "retry-after-ms", "x-request-id", "request-id"})
#: Response header families passed on by prefix: OpenAI's and Anthropic's rate-limit state.
PASSED_PREFIXES = ("x-ratelimit-", "anthropic-ratelimit-")
#: At most this many headers are kept; OpenAI sends six rate-limit headers, Anthropic about a dozen.
MAX_HEADERS = 32
#: A header name or value longer than this is no rate-limit number or id: it is dropped, not cut.
HEADER_LIMIT = 256
#: ``type``, ``code`` and ``param`` are identifiers; anything longer is cut.
FIELD_LIMIT = 200


def passed_headers(headers: Mapping[str, str], secrets: Iterable[str | None] = ()) -> dict[str, str]:
    """The headers of ``headers`` a gateway should pass on, names lowercased, values scrubbed.

    A value too long to be a number or an id is dropped rather than cut, so
    a client never parses half of one.
    """
    secrets = tuple(secrets)
    out: dict[str, str] = {}
    for name, value in headers.items():
        low = name.lower()
        if low not in PASSED_HEADERS and not low.startswith(PASSED_PREFIXES):
            continue
        if len(low) > HEADER_LIMIT or len(value) > HEADER_LIMIT:
            continue
        out[low] = scrub(value, secrets)
        if len(out) >= MAX_HEADERS:
            break
    return out


def _field(value: Any, secrets: tuple[str | None, ...]) -> str | None:
    """An error object's ``type`` / ``code`` / ``param`` as text; an integer code keeps its digits."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str) or not value:
        return None
    return bounded(value, secrets, FIELD_LIMIT)


def upstream_detail(
    status: int | None,
    err: Mapping[str, Any],
    message: str,
    headers: Mapping[str, str] | None = None,
    secrets: Iterable[str | None] = (),
) -> UpstreamDetail:
    """The detail of an error object ``err`` (``{"type"?, "code"?, "param"?, ...}``).

    Args:
        status: the response status, ``None`` for an error event in a stream.
        err: the error object the API sent (``{}`` when its body held none).
        message: the API's message, already scrubbed (the caller picked it).
        headers: the response headers, when there was a response.
        secrets: strings to scrub from every field.
    """
    secrets = tuple(secrets)
    code = _field(err.get("code"), secrets)
    details = err.get("details")
    if code is None and isinstance(details, Mapping):  # Anthropic: {"details": {"error_code": ...}}
        code = _field(details.get("error_code"), secrets)
    return UpstreamDetail(
        status=status,
        type=_field(err.get("type"), secrets),
        code=code,
        param=_field(err.get("param"), secrets),
        message=message,
        headers=passed_headers(headers, secrets) if headers else {},
    )


def scrubbed_upstream(upstream: UpstreamDetail, secrets: Iterable[str | None]) -> UpstreamDetail:
    """``upstream`` with every text scrubbed of ``secrets`` (itself when nothing changed)."""
    secrets = tuple(secrets)
    changes: dict[str, Any] = {}
    for name in ("type", "code", "param", "message"):
        value = getattr(upstream, name)
        if value and scrub(value, secrets) != value:
            changes[name] = scrub(value, secrets)
    headers = {k: scrub(v, secrets) for k, v in upstream.headers.items()}
    if headers != upstream.headers:
        changes["headers"] = headers
    return msgspec.structs.replace(upstream, **changes) if changes else upstream
