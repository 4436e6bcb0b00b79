"""The web console's files: ``GET /`` and ``GET /console/{name}``, from the package, under a strict CSP.

The console (``console/index.html``, its scripts, ``style.css``, ``icon.svg``) is plain files shipped in
the package: no build step, no other origin. They hold no data, so they are served
without a token (a browser cannot add a header to a navigation); everything the console
shows comes from the API routes, which want the token as every client's requests do.
The Host and Origin checks of :class:`~agent_core.server.access.guard.Gate` apply as to any route.

Only the names in :data:`CONSOLE_FILES` are served (no path from a client reaches the
file system), each read once, with headers that keep the page to itself: scripts and
styles from this origin only (no inline script, so text a model writes can never run),
requests to this origin only, no framing, no referrer.
"""

from __future__ import annotations

import functools
from importlib.resources import files

from starlette.requests import Request
from starlette.responses import Response

from ..http.errors import ApiError

__all__ = ["CONSOLE_FILES", "CONSOLE_HEADERS", "PUBLIC_PATHS", "asset", "page"]

#: name -> media type of every file the console consists of
CONSOLE_FILES = {
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "transcript.js": "text/javascript; charset=utf-8",
    "sessions.js": "text/javascript; charset=utf-8",
    "panels.js": "text/javascript; charset=utf-8",
    "markdown.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
    "icon.svg": "image/svg+xml",
}

#: what the browser is told about every console file
CONSOLE_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "cache-control": "no-cache",
}

#: the paths served without a token (the console's files; nothing else)
PUBLIC_PATHS = frozenset({"/", *(f"/console/{name}" for name in CONSOLE_FILES if name != "index.html")})


@functools.cache
def _read(name: str) -> bytes:
    """A console file's bytes, read from the package the first time it is asked for."""
    return files("agent_core.server.console").joinpath(name).read_bytes()


def _answer(name: str) -> Response:
    return Response(_read(name), media_type=CONSOLE_FILES[name], headers=CONSOLE_HEADERS)


async def page(request: Request) -> Response:
    """``GET /``: the console's page."""
    return _answer("index.html")


async def asset(request: Request) -> Response:
    """``GET /console/{name}``: one of the console's scripts, its style sheet or its icon; nothing else."""
    name = request.path_params["name"]
    if name not in CONSOLE_FILES or name == "index.html":
        raise ApiError(404, "not_found", f"the console has no file {name[:100]!r}")
    return _answer(name)
