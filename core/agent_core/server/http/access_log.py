"""What the server says while it runs: one line per request, through the stdlib ``logging``.

Theory of operation. :class:`AccessLog` is the outermost ASGI layer, so it also sees the
requests the front door (:mod:`agent_core.server.access.guard`) refuses. It wraps ``send`` only to
note the status and the ``x-request-id`` of the response's start; the line is written once,
after the app returns, which for a streamed answer is after its last chunk, so the duration
is the whole answer's and a chunk costs one type check.

Every record goes to the logger named :data:`LOGGER` (``agent_core.server``) with an
``event`` (``start``, ``request``, ``stopping``, ``stop``) and its fields under ``fields``,
so an application embedding :func:`~agent_core.server.create_app` routes them as it likes;
``agent-core serve`` writes them to stderr with :func:`configure_logging`, as text for a
terminal or one JSON object per line for a log collector.

A line holds the method, the path (re-quoted, so a decoded newline cannot start a line of
its own), the status, the duration and the request id: never the query string (it may hold
ids) nor a header (headers carry tokens).
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

__all__ = ["LOGGER", "AccessLog", "JsonFormatter", "TextFormatter", "configure_logging", "log_event"]

#: The name of the logger every server record goes to.
LOGGER = "agent_core.server"

_log = logging.getLogger(LOGGER)

# The characters a path keeps as they are; anything else (a space, a control character) is shown %-encoded.
_PATH_SAFE = "/:@!$&'()*+,;=-._~"
_PATH_MAX = 300


def log_event(level: int, event: str, message: str, **fields: Any) -> None:
    """One record of the server's own, with its ``event`` and ``fields`` for the JSON format."""
    if _log.isEnabledFor(level):
        _log.log(level, message, extra={"event": event, "fields": fields})


def shown_path(path: str) -> str:
    """``path`` as it may appear in a log line: %-encoded where unsafe, cut at 300 characters."""
    text = quote(path, safe=_PATH_SAFE)
    return text if len(text) <= _PATH_MAX else text[:_PATH_MAX] + "..."


class AccessLog:
    """Logs each HTTP request once, when its response has ended (or failed).

    ``running`` counts the requests in flight, which the shutdown line reports.
    """

    def __init__(self, app: Any, *, state: Any = None) -> None:
        self.app = app
        self.running = 0
        # The Starlette app's ``state`` inside, for callers that hold only this outer layer (as for a Starlette app).
        self.state = state if state is not None else getattr(app, "state", None)

    async def drained(self, timeout: float) -> None:
        """Wait until no request runs, at most ``timeout`` seconds.

        At shutdown, after uvicorn cancelled the requests that outlived the grace period: they
        unwind (and write their lines) before uvicorn re-raises the signal, which ends the
        process at once.
        """
        deadline = time.monotonic() + timeout
        while self.running and time.monotonic() < deadline:
            await asyncio.sleep(0.02)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if not _log.isEnabledFor(logging.INFO):  # --quiet: count the request, log nothing
            self.running += 1
            try:
                await self.app(scope, receive, send)
            finally:
                self.running -= 1
            return
        started = time.perf_counter()
        seen: list[Any] = []  # the response's start message, once sent

        async def noting_send(message: Any) -> None:
            if message["type"] == "http.response.start":
                seen.append(message)
            await send(message)

        self.running += 1
        try:
            await self.app(scope, receive, noting_send)
        except BaseException as exc:
            # The server answers 500 when nothing was sent; a started answer keeps its status but is cut.
            self._write(scope, seen, started, exc)
            raise
        finally:
            self.running -= 1
        self._write(scope, seen, started, None)

    @staticmethod
    def _write(scope: Any, seen: list[Any], started: float, exc: BaseException | None) -> None:
        duration_ms = round((time.perf_counter() - started) * 1000, 1)
        status = seen[0]["status"] if seen else (500 if exc is not None else 0)
        request_id = None
        if seen:
            for key, value in seen[0].get("headers", ()):
                if key == b"x-request-id":
                    request_id = bytes(value).decode("latin-1")
                    break
        method, path = scope.get("method", "?"), shown_path(scope.get("path", ""))
        fields: dict[str, Any] = {"method": method, "path": path, "status": status, "duration_ms": duration_ms,
                                  "request_id": request_id}
        note = ""
        if isinstance(exc, asyncio.CancelledError):  # the shutdown cancelled it (after its grace period)
            fields["cut"] = True
            note = " (cut short)"
        elif exc is not None:  # its traceback is uvicorn's to log; the class name says which line it belongs to
            fields["error"] = type(exc).__name__
            note = f" ({type(exc).__name__})"
        _log.info("%s %s %s %.1f ms%s%s", method, path, status or "-", duration_ms,
                  f" id={request_id}" if request_id else "", note, extra={"event": "request", "fields": fields})


class TextFormatter(logging.Formatter):
    """Lines for a terminal: ``HH:MM:SS`` then the message; a level other than INFO is named."""

    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%H:%M:%S", time.localtime(record.created))
        level = "" if record.levelno == logging.INFO else f"{record.levelname.lower()}: "
        text = f"{stamp} {level}{record.getMessage()}"
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ``time`` (ISO 8601, UTC), ``level``, ``event``, ``message`` and the fields.

    A record of another logger (uvicorn's errors) has ``event: "log"`` and its ``logger``.
    """

    def format(self, record: logging.LogRecord) -> str:
        when = datetime.fromtimestamp(record.created, UTC)
        entry: dict[str, Any] = {
            "time": when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z",
            "level": record.levelname.lower(),
            "event": getattr(record, "event", "log"),
        }
        entry.update(getattr(record, "fields", None) or {})
        if record.name != LOGGER:
            entry["logger"] = record.name
        message = record.getMessage()
        # The banner's rows are fields already; its message keeps the headline only.
        entry["message"] = message.partition("\n")[0] if entry["event"] == "start" else message
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


class _NotShutdownCancels(logging.Filter):
    """Drops uvicorn's traceback for a request it cancelled at the end of the grace period.

    That request's own line says ``(cut short)`` and the stop line counts it; a traceback
    would read as a crash.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not (isinstance(exc, asyncio.CancelledError) and "graceful shutdown" in str(exc))


_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


def configure_logging(level: str = "info", *, as_json: bool = False, quiet: bool = False) -> int:
    """Send the server's records, and uvicorn's errors, to stderr in one format; return uvicorn's level.

    ``quiet`` drops the start banner and the request lines (INFO), and keeps warnings and
    errors. uvicorn's own INFO chatter stays off unless ``level`` is ``debug``, as its
    access log always does (ours replaces it).

    Raises:
        ValueError: ``level`` is not one of debug, info, warning, error.
    """
    try:
        ours = _LEVELS[level.lower()]
    except KeyError:
        raise ValueError(f"log level {level!r}: choose one of {', '.join(_LEVELS)}") from None
    if quiet:
        ours = max(ours, logging.WARNING)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if as_json else TextFormatter())
    server = logging.getLogger(LOGGER)
    server.handlers[:] = [handler]
    server.setLevel(ours)
    server.propagate = False
    theirs = ours if ours == logging.DEBUG else max(ours, logging.WARNING)
    handler.addFilter(_NotShutdownCancels())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.asgi"):
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler] if name == "uvicorn" else []
        logger.setLevel(theirs)
        logger.propagate = name != "uvicorn"
    access = logging.getLogger("uvicorn.access")
    access.handlers[:] = []
    access.propagate = False
    access.disabled = True
    return theirs
