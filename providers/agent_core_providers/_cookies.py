"""The pooled clients keep no cookies: they serve every caller of a base URL alike.

A pooled client serves every caller of its base URL: in ``agent-core serve``,
every tenant. httpx keeps each ``Set-Cookie`` it is answered with and sends it
on the client's later requests, so a session cookie an upstream (or a
gateway before it) gave one tenant's key would ride on the next tenant's
request. LLM APIs authenticate each request by its key; nothing is lost.
"""

from __future__ import annotations

import http.cookiejar
from typing import Any, TypeVar

import httpx

__all__ = ["NoCookies", "without_cookies"]

_C = TypeVar("_C", httpx.Client, httpx.AsyncClient)


class NoCookies(http.cookiejar.CookieJar):
    """A cookie jar that keeps nothing (see the module's docstring)."""

    def extract_cookies(self, response: Any, request: Any) -> None:
        return None

    def set_cookie(self, cookie: http.cookiejar.Cookie) -> None:
        return None


class _NoCookieBox(httpx.Cookies):
    """The pooled clients' cookies: :class:`NoCookies`, and no work per response.

    httpx hands every response to its cookies, which wrap request and response in
    ``urllib`` stand-ins before the jar is asked (about 1 % of a server request's CPU);
    a jar that keeps nothing needs none of it.
    """

    def extract_cookies(self, response: httpx.Response) -> None:
        return None


def without_cookies(client: _C) -> _C:
    """``client``, its cookies replaced by a :class:`_NoCookieBox` (its jar is already a :class:`NoCookies`)."""
    if isinstance(getattr(client, "_cookies", None), httpx.Cookies):  # httpx's own attribute; else the jar suffices
        client._cookies = _NoCookieBox(NoCookies())
    return client
