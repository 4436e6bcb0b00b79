"""How the pool reaches an MCP server: stdio and streamable HTTP, each reading at most a set size per message.

Theory of operation. A server's answer is read before anyone can judge it,
so its size must be bounded while it is read, not after: a 50 MB result read
whole, then cut, has already cost the time and the memory. Both transports
here take ``max_message_bytes`` and a callback, ``on_oversize``; the moment
one message passes the cap they stop reading it, call the callback (the
pool then drops the connection, failing the calls in flight, and the next
use opens a new one) and end the stream.

* **stdio**: :func:`stdio_transport` runs the server and frames its stdout
  itself. The SDK's own stdio client joins the whole pending buffer to every
  chunk it reads, so one message of n bytes costs O(n²) (4 MB of text takes
  over a second, 8 MB several: ``benchmarks/bench_mcp_read.py``); here the
  chunks of a line are kept in a list and joined once, when its newline
  comes. It is an ``mcp.client.Transport`` (the SDK's public seam): an async
  context manager yielding the read and write streams of ``SessionMessage``.
* **streamable HTTP**: the SDK's client reads through an ``httpx2`` client we
  give it; :func:`http_client` gives one whose transport counts each
  response's bytes since the last blank line (an SSE event ends at one; a
  JSON body has none), so both an SSE event and a JSON body are bounded.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import httpx2
import mcp_types
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage

from agent_core_plugins.mcp_servers import ServerSpec

__all__ = ["CapPassed", "http_client", "stdio_transport"]

#: bytes asked of a pipe per read: large reads keep a big message's chunk count (and list) small
READ_BYTES = 1 << 20
#: seconds a stdio server is given to exit after its stdin closes, then after SIGTERM
EXIT_GRACE_S = 2.0

OnOversize = Callable[[int], None]


def _parse(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:  # not JSON-RPC: the session reports it, the connection goes on
        return exc


async def _frames(stdout: Any, cap: int, on_oversize: OnOversize) -> AsyncIterator[bytes]:
    """The lines of ``stdout`` (without their newline); stops after calling ``on_oversize`` when one passes ``cap``."""
    parts: list[bytes] = []
    pending = 0
    while True:
        try:
            chunk = await stdout.receive(READ_BYTES)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            return
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            if pending + end - start > cap:
                on_oversize(pending + end - start)
                return
            parts.append(chunk[start:end])
            line = b"".join(parts)
            parts, pending, start = [], 0, end + 1
            if line.strip():
                yield line
        if start < len(chunk):
            parts.append(chunk[start:])
            pending += len(chunk) - start
            if pending > cap:
                on_oversize(pending)
                return


def _signal(process: Any, hard: bool) -> None:
    """Stop the server's whole process group (it has a session of its own, so no grandchild is left)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if hasattr(os, "killpg"):
            os.killpg(process.pid, signal.SIGKILL if hard else signal.SIGTERM)
        elif hard:  # Windows has no process groups to signal
            process.kill()
        else:
            process.terminate()


async def _stop(process: Any, *, at_once: bool) -> None:
    """End the server: stdin closed and a grace period (unless ``at_once``), then SIGTERM, then SIGKILL."""
    with contextlib.suppress(Exception):
        await process.stdin.aclose()
    for step in (("grace",) if not at_once else ()) + ("term", "kill"):
        if step != "grace" and process.returncode is None:
            _signal(process, hard=step == "kill")
        with anyio.move_on_after(EXIT_GRACE_S):
            while process.returncode is None:
                await anyio.sleep(0.01)
        if process.returncode is not None:
            break
    with contextlib.suppress(Exception):
        await process.aclose()


@contextlib.asynccontextmanager
async def stdio_transport(spec: ServerSpec, max_message_bytes: int, on_oversize: OnOversize,
                          errlog: Any = None) -> AsyncIterator[tuple[Any, Any]]:
    """Run ``spec``'s command and speak newline-delimited JSON-RPC on its pipes.

    Raises:
        OSError: the command could not be started.
    """
    assert spec.command is not None
    process = await anyio.open_process([spec.command, *spec.args], env=get_default_environment() | dict(spec.env),
                                       cwd=spec.cwd, stderr=errlog, start_new_session=True)
    to_session, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, from_session = anyio.create_memory_object_stream[SessionMessage](0)
    breached: list[int] = []

    def oversize(size: int) -> None:
        breached.append(size)
        on_oversize(size)

    async def read() -> None:
        async with to_session:
            async for line in _frames(process.stdout, max_message_bytes, oversize):
                try:
                    await to_session.send(_parse(line))
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return

    async def write() -> None:
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            async with from_session:
                async for message in from_session:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await process.stdin.send(data.encode())
        await to_session.aclose()  # the server cannot be written to: the session must see the end

    async with anyio.create_task_group() as group:
        group.start_soon(read)
        group.start_soon(write)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                await write_stream.aclose()
                await read_stream.aclose()
                await _stop(process, at_once=bool(breached))
            group.cancel_scope.cancel()


class CapPassed(httpx2.StreamError):
    """An HTTP response passed the per-message cap; the pool has dropped the connection already."""


class _QuietAboutOurCap(logging.Filter):
    """Drop the SDK's error log of a body we stopped reading: the call's error result already says so."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], CapPassed))


logging.getLogger("mcp.client.streamable_http").addFilter(_QuietAboutOurCap())


class _Counted(httpx2.AsyncByteStream):
    """A response body that stops at the first stretch of ``cap`` bytes with no blank line in it."""

    def __init__(self, inner: Any, cap: int, on_oversize: OnOversize) -> None:
        self._inner, self._cap, self._on_oversize = inner, cap, on_oversize

    async def __aiter__(self) -> AsyncIterator[bytes]:
        run, tail = 0, b""
        async for chunk in self._inner:
            seen = tail + chunk
            cut = max(seen.rfind(b"\n\n"), seen.rfind(b"\r\n\r\n"))
            run = len(seen) - cut - 2 if cut >= 0 else run + len(chunk)
            if run > self._cap:
                self._on_oversize(run)
                raise CapPassed(f"an MCP message passed {self._cap} bytes")
            tail = seen[-3:]
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class _CappedTransport(httpx2.AsyncBaseTransport):
    def __init__(self, cap: int, on_oversize: OnOversize) -> None:
        self._inner = httpx2.AsyncHTTPTransport()
        self._cap, self._on_oversize = cap, on_oversize

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        return httpx2.Response(response.status_code, headers=response.headers, request=request,
                               extensions=response.extensions,
                               stream=_Counted(response.stream, self._cap, self._on_oversize))

    async def aclose(self) -> None:
        await self._inner.aclose()


def http_client(spec: ServerSpec, max_message_bytes: int, on_oversize: OnOversize) -> httpx2.AsyncClient:
    """An ``httpx2`` client for the SDK's streamable-HTTP transport: ``spec``'s headers, each message bounded.

    The timeouts are the SDK's recommended ones (30 s, and 300 s to read, for
    a stream the server holds open); each call is bounded by ``tool_timeout_s``.
    """
    return httpx2.AsyncClient(headers=dict(spec.headers), timeout=httpx2.Timeout(30.0, read=300.0),
                              transport=_CappedTransport(max_message_bytes, on_oversize))
