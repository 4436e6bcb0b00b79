"""Reading what the API answered: the status, a JSON body, and how much of a stream arrived.

Pure functions over a response's status, headers and bytes, shared by every
attempt whatever drives it: an error status becomes its typed error, a JSON
body is decoded (or refused as malformed, quoting it scrubbed), a streamed
body that ended is checked for completeness, and one that broke off is
salvaged when its events already complete the answer.
"""

from __future__ import annotations

from typing import Any

import httpx
import msgspec
from agent_core.errors import LLMError, MalformedResponseError, ProviderUnavailableError

from ._call import HTTPCall
from ._errors import error_from_redirect, error_from_response, scrub
from ._sse import JSONEventReader, bad_utf8, quote_line

__all__ = ["check_status", "decode_body", "is_json", "looks_like_sse", "raw_body", "salvage", "truncated"]

_json_decoder = msgspec.json.Decoder()


def check_status(call: HTTPCall, response: httpx.Response, body: bytes) -> None:
    """Raise the typed error of a redirect (3xx) or an error status (>= 400), quoting ``body`` scrubbed; else nothing.

    A redirect is never followed (the clients are built not to): it is a
    :class:`~agent_core.errors.RedirectError` naming the status and the ``Location``.
    """
    if 300 <= response.status_code < 400:
        raise error_from_redirect(call.provider, response.status_code, response.headers, call.secrets, url=call.url)
    if response.status_code >= 400:
        raise error_from_response(
            call.provider, response.status_code, response.headers, body, call.secrets, url=call.url, method=call.method
        )


def decode_body(call: HTTPCall, body: bytes, status: int) -> Any:
    """The JSON value of a whole body.

    Raises:
        MalformedResponseError: the body is not valid JSON or not UTF-8 (quoted, scrubbed).
    """
    try:
        return _json_decoder.decode(body)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        what = "not valid UTF-8" if bad_utf8(exc) else "invalid JSON"
        raise MalformedResponseError(
            f"the API answered with {what}: {quote_line(body, secrets=call.secrets)}",
            provider=call.provider,
            status_code=status,
        ) from None


def is_json(response: httpx.Response) -> bool:
    """The response says it is one JSON document (a server that ignored ``stream: true``, or an error)."""
    return response.headers.get("content-type", "").lower().startswith("application/json")


def looks_like_sse(body: bytes) -> bool:
    """The body starts like an event stream, whatever its content type said."""
    return body.lstrip()[:6].startswith((b"data:", b"event:", b":", b"id:", b"retry:"))


def raw_body(response: httpx.Response) -> bool:
    """True when the body is sent as it is (no ``Content-Encoding``), the usual event stream.

    Then the raw bytes are read without httpx's decoder layer: one
    generator and a decoder call fewer per network read on the hot path.
    """
    if response.is_stream_consumed:  # a body already read (a replay, a mock transport): iter_bytes serves it
        return False
    encoding = ", ".join(response.headers.get_list("content-encoding"))
    return not encoding or encoding.strip().lower() == "identity"


def truncated(call: HTTPCall, reader: JSONEventReader) -> LLMError | None:
    """The error for a body that ended before the API marked the stream complete, else ``None``."""
    reason = reader.incomplete_reason()
    if reason is None:
        return None
    return ProviderUnavailableError(scrub(reason, call.secrets), provider=call.provider)


def salvage(reader: JSONEventReader | None) -> list[Any] | None:
    """After the body broke off: the last events if they complete the answer, else ``None``."""
    if reader is None:
        return None
    if reader.done:
        return []
    try:
        events = reader.finish()
    except LLMError:
        return None
    return events if reader.done else None
