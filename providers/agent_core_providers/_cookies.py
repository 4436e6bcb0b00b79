"""The pooled clients keep no cookies: they serve every caller of a base URL alike.

A pooled client serves every caller of its base URL: in ``agent-core serve``,
every tenant. httpx keeps each ``Set-Cookie`` it is answered with and sends it
on the client's later requests, so a session cookie an upstream (or a
gateway before it) gave one tenant's key would ride on the next tenant's
request. LLM APIs authenticate each request by its key; nothing is lost.
"""

from __future__ import annotations

import http.cookiejar
from typing import Any

__all__ = ["NoCookies"]

class NoCookies(http.cookiejar.CookieJar):
    """A cookie jar that keeps nothing (see the module's docstring)."""

    def extract_cookies(self, response: Any, request: Any) -> None:
        return None

    def set_cookie(self, cookie: http.cookiejar.Cookie) -> None:
        return None
