"""The server's front door: what a request must show before any route sees it.

Theory of operation. Two ASGI layers wrap the routes, cheapest refusal first:

1. :class:`Gate` looks only at headers. The ``Host`` must be one the server
   answers to (a page on ``evil.example`` that rebinds its name to 127.0.0.1
   still sends ``Host: evil.example``), and an ``Origin``, which browsers add to
   every cross-site POST, must be the server's own or one the operator allowed.
   So no other site's page can use the server, whatever it sends.
2. :class:`Admission` admits the request: a free slot (``max_concurrent``), a
   token naming a tenant when tokens are set, a free slot of that tenant's own
   (``tenant_max_concurrent``, so one tenant cannot take every slot), a JSON content type on a request
   with a body (a web page can send ``text/plain`` without asking; it cannot
   send ``application/json`` cross-site without a preflight), and a body read in
   full within ``max_body_bytes`` and ``body_timeout_s``. The tenant rides in the
   ASGI scope to the routes; the body is replayed to them from memory. The web
   console's static files (``public``) are the one exception to the token: they
   hold no data, and a browser cannot add a header to a page it navigates to.

Every refusal is the JSON error body the routes use, with a status that says
what to change. Slow headers are the HTTP server's to bound
(:mod:`agent_core.server.http.uvicorn_tuning`).
"""

from __future__ import annotations

import asyncio
import fnmatch
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from ..http.failures import Failure, dialect_of, render
from .gate import is_ascii_int
from .settings import LOOPBACK_NAMES, ServeSettings
from .tenants import Tenant, TokenTable

__all__ = ["TENANT_KEY", "Admission", "Gate", "tenant_cap"]

#: Where the tenant of a request is kept in its ASGI scope.
TENANT_KEY = "agent_core.tenant"

_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
#: most bytes of header names and values in one request; h11 bounds only a head still arriving,
#: so a whole head in one read could be far larger (nginx's default is the same 32 KiB)
MAX_HEADER_BYTES = 32 * 1024


async def _refuse(scope: Any, send: Any, status: int, kind: str, message: str,
                  headers: dict[str, str] | None = None) -> None:
    """Answer before the app runs, in the dialect of the route asked for (an OpenAI client reads OpenAI's shape)."""
    extra = dict(headers or {})
    if status in (408, 413, 431):  # the rest of the body is not read: the connection cannot carry another request
        extra["connection"] = "close"
    response = render(Failure(status=status, kind=kind, message=message, headers=extra), dialect_of(scope.get("path", "")))
    await response({"type": "http"}, _no_receive, send)


async def _no_receive() -> dict[str, Any]:  # JSONResponse never reads; kept for the ASGI signature
    return {"type": "http.disconnect"}


def _header(scope: Any, name: bytes) -> bytes | None:
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value)
    return None


def _utf8(content_type: bytes) -> bool:
    """Whether a content type's ``charset``, if it names one, is UTF-8: the one encoding JSON has (RFC 8259).

    The body is read as UTF-8 whatever the header says; a client that declares UTF-7 would
    have bytes one reader decodes one way and another reader another way.
    """
    for param in content_type.split(b";")[1:]:
        name, _, value = param.partition(b"=")
        if name.strip().lower() == b"charset" and value.strip().strip(b'"').lower() not in (b"utf-8", b"utf8"):
            return False
    return True


def _headers(scope: Any, name: bytes) -> list[bytes]:
    """Every value of header ``name``: a request may repeat one, and each copy must pass the check."""
    return [bytes(value) for key, value in scope["headers"] if key == name]


_NOT_IN_HOST = re.compile(r"[\s/@?#\\]")  # whitespace, or what would start a path, user info, query or fragment


def _host_name(raw: str) -> str | None:
    """The name part of a ``Host`` value (``[::1]:8000`` -> ``::1``), lower-cased; None when malformed."""
    raw = raw.strip().lower()
    if not raw or _NOT_IN_HOST.search(raw):
        return None
    if raw.startswith("["):
        end = raw.find("]")
        if end < 0 or (raw[end + 1:] and not (raw[end + 1] == ":" and is_ascii_int(raw[end + 2:]))):
            return None
        return raw[1:end]
    name, _, port = raw.partition(":")
    if port and not is_ascii_int(port):
        return None
    return name.rstrip(".") or None


class Gate:
    """Refuses a foreign ``Host`` (400) and a foreign ``Origin`` (403) before anything else runs."""

    def __init__(self, app: Any, *, allowed_hosts: Iterable[str] = (), cors_origins: Iterable[str] = ()) -> None:
        self.app = app
        hosts = {h.lower().rstrip(".") for h in allowed_hosts}
        self.any_host = "*" in hosts
        self.hosts = frozenset(LOOPBACK_NAMES | {h for h in hosts if "*" not in h})
        self.host_patterns = tuple(h for h in hosts if "*" in h and h != "*")
        origins = {o.rstrip("/").lower() for o in cors_origins}
        self.any_origin = "*" in origins
        self.origins = frozenset(origins - {"*"})

    def _host_ok(self, name: str | None) -> bool:
        if name is None:
            return False
        if self.any_host or name in self.hosts:
            return True
        return any(fnmatch.fnmatchcase(name, p) for p in self.host_patterns)

    def _origin_ok(self, origin: str, host: str, scheme: str) -> bool:
        origin = origin.strip().rstrip("/").lower()
        if self.any_origin or origin in self.origins:
            return True
        parts = urlsplit(origin)
        # Same origin: the page was served by this server, under the scheme and Host it asked for.
        return parts.scheme == scheme and bool(parts.netloc) and parts.netloc == host.strip().lower()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if sum(len(key) + len(value) for key, value in scope["headers"]) > MAX_HEADER_BYTES:
            await _refuse(scope, send, 431, "request_header_fields_too_large",
                          f"the request's headers hold more than {MAX_HEADER_BYTES // 1024} KiB")
            return
        hosts = _headers(scope, b"host")
        if len(hosts) > 1:  # which one counts differs between servers and proxies: refused (RFC 9112, 3.2)
            await _refuse(scope, send, 400, "invalid_host", "the request has more than one Host header")
            return
        raw_host = (hosts[0] if hosts else b"").decode("latin-1")
        if not self._host_ok(_host_name(raw_host)):
            await _refuse(scope, send, 400, "invalid_host",
                          f"the Host header {raw_host[:100]!r} is not a name this server answers to; "
                          "its operator can add one with --allowed-host")
            return
        for origin in _headers(scope, b"origin"):  # a repeated Origin: every copy must be allowed
            if not self._origin_ok(origin.decode("latin-1"), raw_host, scope.get("scheme", "http")):
                await _refuse(scope, send, 403, "origin_not_allowed",
                              f"requests from web pages at {origin.decode('latin-1')[:100]!r} are not allowed; "
                              "its operator can allow that origin with --cors-origin")
                return
        await self.app(scope, receive, send)


def tenant_cap(settings: ServeSettings, tokens: TokenTable | None) -> int | None:
    """How many requests one tenant may have in flight in this process (None: only the process's cap).

    With several tenants the default is half the process's slots, so no tenant can take them all.
    """
    if settings.tenant_max_concurrent is not None:
        return settings.tenant_max_concurrent
    if tokens is not None and len(tokens.tenants()) > 1:
        return max(1, settings.max_concurrent // 2)
    return None


class Admission:
    """Admits a request: a free slot, a known token, a JSON body read within its limits."""

    def __init__(self, app: Any, settings: ServeSettings, tokens: TokenTable | None, default: Tenant,
                 public: frozenset[str] = frozenset()) -> None:
        self.app = app
        self.settings = settings
        self.tokens = tokens
        self.default = default
        self.public = public  # GET paths that hold no data (the console's files): no token wanted
        self.running = 0
        self.by_tenant: dict[str, int] = {}  # requests in flight per tenant name
        self.tenant_cap = tenant_cap(settings, tokens)

    def _tenant(self, scope: Any) -> Tenant | None:
        if self.tokens is None:
            return self.default
        raw = _header(scope, b"authorization")
        if raw is None:
            api_key = _header(scope, b"x-api-key")  # how Anthropic clients send their key
            return self.tokens.find(api_key.decode("latin-1").strip()) if api_key else None
        scheme, _, token = raw.decode("latin-1").strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return None
        return self.tokens.find(token)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limits = self.settings
        if self.running >= limits.max_concurrent:
            await _refuse(scope, send, 503, "server_busy",
                          f"this server process is handling {limits.max_concurrent} requests already; retry shortly",
                          {"retry-after": "1"})
            return
        self.running += 1
        try:
            await self._admit(scope, receive, send)
        finally:
            self.running -= 1

    async def _admit(self, scope: Any, receive: Any, send: Any) -> None:
        tenant = self._tenant(scope)
        if tenant is None and scope["method"] in ("GET", "HEAD") and scope.get("path") in self.public:
            tenant = self.default  # a static file: what it is does not depend on who asks
        if tenant is None:
            await _refuse(scope, send, 401, "authentication_error",
                          "missing or wrong bearer token (Authorization: Bearer ...)", {"www-authenticate": "Bearer"})
            return
        method = scope["method"]
        content_type = _header(scope, b"content-type")
        json_type = content_type is not None and content_type.split(b";")[0].strip().lower() == b"application/json"
        if method in _BODY_METHODS and content_type is not None and not (json_type and _utf8(content_type)):
            await _refuse(scope, send, 415, "unsupported_media_type",
                          f"the request body must be JSON sent as Content-Type: application/json, in UTF-8; "
                          f"got {content_type.decode('latin-1')[:100]!r}")
            return
        declared = _header(scope, b"content-length")
        if declared is not None:
            if not is_ascii_int(declared.strip().decode("latin-1")):
                await _refuse(scope, send, 400, "invalid_request_error", "the Content-Length header is not a number")
                return
            if int(declared) > self.settings.max_body_bytes:
                await _refuse(scope, send, 413, "request_too_large", self._too_large())
                return
        body = await self._read_body(scope, receive, send)
        if body is None:
            return
        if body and method in _BODY_METHODS and not json_type:
            await _refuse(scope, send, 415, "unsupported_media_type",
                          "the request body must be JSON sent as Content-Type: application/json")
            return
        if self.tenant_cap is not None and self.by_tenant.get(tenant.name, 0) >= self.tenant_cap:
            await _refuse(scope, send, 429, "tenant_busy",
                          f"this tenant has {self.tenant_cap} requests in flight on this server process already "
                          "(tenant_max_concurrent); retry shortly", {"retry-after": "1"})
            return
        scope[TENANT_KEY] = tenant
        self.by_tenant[tenant.name] = self.by_tenant.get(tenant.name, 0) + 1
        try:
            await self._replayed(scope, receive, send, body)
        finally:
            left = self.by_tenant[tenant.name] - 1
            if left:
                self.by_tenant[tenant.name] = left
            else:
                del self.by_tenant[tenant.name]

    async def _replayed(self, scope: Any, receive: Any, send: Any, body: bytes) -> None:
        """Run the app with ``body`` handed to it from memory."""
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # after the body: only the client hanging up is left to hear

        await self.app(scope, replay, send)

    def _too_large(self) -> str:
        return (f"the request body is larger than this server's limit of {self.settings.max_body_bytes} bytes "
                "(max_body_bytes)")

    async def _read_body(self, scope: Any, receive: Any, send: Any) -> bytes | None:
        """The whole body, or None after answering 413 (too large), 408 (too slow) or nothing (gone)."""
        limit = self.settings.max_body_bytes
        parts: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout(self.settings.body_timeout_s):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        return None
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    if size > limit:
                        await _refuse(scope, send, 413, "request_too_large", self._too_large())
                        return None
                    parts.append(chunk)
                    if not message.get("more_body", False):
                        return b"".join(parts)
        except TimeoutError:
            await _refuse(scope, send, 408, "request_timeout",
                          f"the request body did not arrive within {self.settings.body_timeout_s:g} s "
                          "(body_timeout_s)")
            return None
