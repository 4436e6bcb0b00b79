"""Request headers read without an exception for a missing one, with ``Headers.get``'s answers.

Most requests carry no X-Session-Id, X-Request-Id or If-Match, and starlette's ``Headers.get``
finds a missing header by raising and catching a KeyError; the server asks for the values instead.
The upstream's Content-Encoding is read the same way from httpx's headers.
"""

from __future__ import annotations

import sys
from typing import Any

import httpx
import pytest
from agent_core.server.access.ids import if_match, request_id_of, session_id_of
from agent_core_providers._decoding import raw_body
from starlette.requests import Request


def _request(*headers: tuple[bytes, bytes]) -> Request:
    return Request({"type": "http", "method": "POST", "path": "/", "headers": list(headers)})


def _raised(fn: Any, *args: Any) -> tuple[Any, list[str]]:
    """``fn(*args)`` and the exceptions raised anywhere beneath it."""
    raised: list[str] = []

    def trace(frame: Any, event: str, arg: Any) -> Any:
        def local(frame: Any, event: str, arg: Any) -> Any:
            if event == "exception":
                raised.append(arg[0].__name__)
            return local
        return local

    sys.settrace(trace)
    try:
        return fn(*args), raised
    finally:
        sys.settrace(None)


def test_missing_headers_are_none_and_raise_nothing_inside() -> None:
    request = _request((b"content-type", b"application/json"))
    assert _raised(session_id_of, request) == (None, [])
    assert _raised(if_match, request) == (None, [])
    rid, raised = _raised(request_id_of, request)
    assert len(rid) == 32 and raised == []  # a fresh one


def test_a_repeated_header_gives_its_first_value_as_headers_get_does() -> None:
    request = _request((b"x-session-id", b"first"), (b"x-session-id", b"second"), (b"x-request-id", b"r-1"),
                       (b"if-match", b'"3"'))
    assert session_id_of(request) == request.headers.get("x-session-id") == "first"
    assert request_id_of(request) == "r-1"
    assert if_match(request) == 3


@pytest.mark.parametrize(("headers", "raw"), [
    ([], True),
    ([("content-encoding", "identity")], True),
    ([("content-encoding", " Identity ")], True),
    ([("content-encoding", "")], True),  # an empty value is no encoding, as Headers.get says
    ([("content-encoding", "gzip")], False),
    ([("content-encoding", "identity"), ("content-encoding", "gzip")], False),  # joined, as Headers.get joins
])
def test_the_upstreams_content_encoding_decides_a_raw_body_as_headers_get_would(headers: list, raw: bool) -> None:
    response = httpx.Response(200, headers=headers, stream=httpx.ByteStream(b""))
    got, raised = _raised(raw_body, response)
    assert got is raw
    assert raised == []
