"""Connections to MCP servers, kept for the process: one background event loop owns them all.

Theory of operation. Plugins are made fresh for every request, but starting
an MCP server (a process, or an HTTP session with a handshake) costs hundreds
of milliseconds, so connections live here, in a process-wide :class:`Pool`
keyed by each server's :attr:`~agent_core_plugins.mcp_servers.ServerSpec.identity`
(a digest of its whole config: two configs that differ in a header get two
connections, and no key holds a credential).

The official SDK is async (anyio), and its connections are bound to the event
loop and the task that opened them, while agent-core is called from sync code
(the CLI, a thread per request) and from async code on loops that come and go.
So one daemon thread runs one asyncio loop for the process, and every
connection is opened, used and closed on it. Each connection has an owner
task that enters the SDK's ``Client`` and waits until told to close, because
anyio requires a context to be left by the task that entered it. Callers hand
coroutines to the loop: :func:`run_sync` blocks the calling thread,
:func:`run_async` awaits from any asyncio loop; both cancel the coroutine when
the request's cancellation token fires (or, async, when the awaiting task is
cancelled), so cancelling a request cancels the MCP call.

A connection's tool list is listed again when the server says it changed
(``notifications/tools/list_changed`` on a handshake-era connection, a
``subscriptions/listen`` event on a 2026-07-28 one) and, since a server need
not say so, whenever it is older than the request's ``mcp_tools_max_age_s``.
A connection is dropped, its calls in flight failed at once, when its server
dies, when a call runs out of ``tool_timeout_s``, or when one message passes
``mcp_max_result_bytes`` while it is read (:mod:`agent_core_plugins.mcp_transports`):
the next use opens a new one, so it starts clean. :func:`close_all` closes
every connection (``AgentCore.close()``, server shutdown, and at interpreter
exit).
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import os
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import mcp_types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from agent_core_plugins.mcp_servers import Limits, ServerSpec
from agent_core_plugins.mcp_transports import http_client, stdio_transport

__all__ = ["CONNECT_TIMEOUT_S", "MAX_LIST_PAGES", "MAX_TOOLS", "Connection", "MessageTooLarge", "Pool",
           "ServerUnavailable", "close_all", "pool", "run_async", "run_sync"]

#: how long opening a connection (start, handshake) may take
CONNECT_TIMEOUT_S = 20.0
#: pages of tools/list read at most: a server whose cursor never ends cannot hang the catalog
MAX_LIST_PAGES = 20
#: tools kept per server: a server listing thousands cannot fill the model's context (the first are kept)
MAX_TOOLS = 256
#: bytes an SSE event may hold beyond our own cap before the SDK's reader refuses it (ours refuses first)
_SSE_SLACK = 64 * 1024

T = TypeVar("T")


class ServerUnavailable(RuntimeError):
    """A server could not be started, reached or kept; the message names it, never a credential."""


class MessageTooLarge(ServerUnavailable):
    """A server's message passed ``mcp_max_result_bytes`` while it was read; its connection was dropped."""


class Connection:
    """One open MCP session; lives on the pool's loop (every method runs there)."""

    def __init__(self, spec: ServerSpec, limits: Limits) -> None:
        self.spec, self.limits = spec, limits
        self.client: Client | None = None
        self.tools: list[mcp_types.Tool] | None = None  # None: list again before use
        self.listed_at = 0.0  # the loop's clock when ``tools`` was listed
        self.cache_ok = True  # False once a list_changed subscription has ended: list for every request
        self.alive = False
        self._ready = asyncio.Event()
        self._closing = asyncio.Event()
        self._failure: BaseException | None = None
        self._owner: asyncio.Task[None] | None = None

    def _client(self, errlog: Any) -> Client:
        spec, cap = self.spec, self.limits.max_message_bytes
        if spec.command is not None:
            transport: Any = stdio_transport(spec, cap, self._oversize, errlog)
        else:
            assert spec.url is not None
            transport = streamable_http_client(spec.url, http_client=http_client(spec, cap, self._oversize),
                                               max_sse_event_size=cap + _SSE_SLACK)
        return Client(transport, cache=None, message_handler=self._on_message)

    def _oversize(self, size: int) -> None:
        self.drop(MessageTooLarge(
            f"MCP server {self.spec.where} sent a message of more than {size} bytes, over "
            f"mcp_max_result_bytes ({self.limits.max_message_bytes}); it was not read further and the "
            "connection was closed (the next call opens a new one)"))

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, mcp_types.ToolListChangedNotification):
            self.tools = None

    async def _listen(self, client: Client) -> None:
        """On a 2026-07-28 connection, list changes come as events of a subscription."""
        with contextlib.suppress(Exception):
            async with client.listen(tools_list_changed=True) as sub:
                async for _event in sub:
                    self.tools = None
        self.cache_ok, self.tools = False, None  # the subscription ended: changes would go unseen

    async def _own(self) -> None:
        try:
            # a stdio server's own log (stderr) would interleave with the CLI's output
            with open(os.devnull, "w") as quiet:  # noqa: ASYNC230 - /dev/null never blocks
                client = self._client(quiet)
                async with client, anyio.create_task_group() as group:
                    self.client, self.alive = client, True
                    caps = client.server_capabilities.tools
                    if client.protocol_version in MODERN_PROTOCOL_VERSIONS and caps is not None and caps.list_changed:
                        group.start_soon(self._listen, client)
                    self._ready.set()
                    await self._closing.wait()
                    group.cancel_scope.cancel()
        except BaseException as exc:  # noqa: BLE001 - the owner task records it; callers raise ServerUnavailable
            self._failure = self._failure or exc
        finally:
            self.alive, self.client = False, None
            self._ready.set()

    async def open(self) -> None:
        """Start the owner task and wait for the handshake.

        Raises:
            ServerUnavailable: the server did not start or answer within :data:`CONNECT_TIMEOUT_S`.
        """
        self._owner = asyncio.get_running_loop().create_task(self._own())
        try:
            await asyncio.wait_for(self._ready.wait(), CONNECT_TIMEOUT_S)
        except TimeoutError:
            self._owner.cancel()  # a handshake that hangs would hold the process (or session) for ever
            raise ServerUnavailable(f"MCP server {self.spec.where} did not answer within {CONNECT_TIMEOUT_S:g} s") \
                from None
        except BaseException:
            self._owner.cancel()  # the caller was cancelled while opening: nobody would close what opens
            raise
        if not self.alive:
            raise ServerUnavailable(f"MCP server {self.spec.where} could not be started or reached: "
                                    f"{_reason(self._failure)}")

    async def list_tools(self, max_age_s: float) -> list[mcp_types.Tool]:
        """The server's tools: cached until the server says they changed, or older than ``max_age_s``."""
        loop = asyncio.get_running_loop()
        if self.tools is not None and self.cache_ok and loop.time() - self.listed_at <= max_age_s:
            return self.tools
        client = self._live()
        asked = loop.time()
        tools: list[mcp_types.Tool] = []
        cursor = None
        for _ in range(MAX_LIST_PAGES):
            page = await self._watched(client.list_tools(cursor=cursor, cache_mode="refresh"))
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None or len(tools) >= MAX_TOOLS:
                break
        self.tools, self.listed_at = tools[:MAX_TOOLS], asked
        return self.tools

    async def still_offers(self, name: str) -> bool:
        """Whether the server lists ``name`` now (listed afresh).

        A server that cannot list either (it restarted and forgot the session,
        say) is no use on this connection: it is dropped, and True returned, as
        not knowing is no reason to call the tool gone.
        """
        try:
            return any(t.name == name for t in await self.list_tools(0.0))
        except Exception as exc:  # noqa: BLE001
            self.drop(exc)
            return True

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        return await self._watched(self._live().call_tool(name, arguments))

    async def _watched(self, request: Awaitable[T]) -> T:
        """Await a request; it fails at once when the connection is dropped meanwhile (:meth:`drop`).

        An error that says the server is gone drops the connection first.
        """
        task = asyncio.ensure_future(request)
        closing = asyncio.ensure_future(self._closing.wait())
        try:
            await asyncio.wait((task, closing), return_when=asyncio.FIRST_COMPLETED)
            cut = not task.done()
        finally:
            closing.cancel()
            if not task.done():  # dropped, or the caller was cancelled: the SDK cancels the call on the server
                task.cancel()
                await asyncio.wait((task,), timeout=5)
        if cut:
            raise self._failure if isinstance(self._failure, ServerUnavailable) else ServerUnavailable(
                f"MCP server {self.spec.where} closed the connection: {_reason(self._failure)}")
        try:
            return task.result()
        except MCPError as exc:
            if exc.code == mcp_types.CONNECTION_CLOSED:
                self.drop(exc)
                if isinstance(self._failure, ServerUnavailable):
                    raise self._failure from None
            raise
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            self.drop(exc)
            raise

    def drop(self, why: BaseException) -> None:
        """Leave this connection (its server crashed, hung up, ran out of time or sent too much).

        Its calls in flight fail now, its owner task closes it (stopping a stdio
        server), and the pool opens a new one for the next use.
        """
        if self.alive or self._failure is None:
            self._failure = why
        self.alive = False
        self._closing.set()

    def _live(self) -> Client:
        if self.client is None or not self.alive:
            raise ServerUnavailable(f"MCP server {self.spec.where} closed the connection: {_reason(self._failure)}")
        return self.client

    async def close(self) -> None:
        """Ask the owner task to leave the SDK's client (which stops a stdio server); cancel it after 10 s."""
        self._closing.set()
        if self._owner is not None:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(self._owner), 10)
            self._owner.cancel()


def _reason(exc: BaseException | None) -> str:
    """Why a connection failed, in one line: the innermost error of an exception group, its type and text."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if exc is None:
        return "no reason given"
    return f"{type(exc).__name__}: {str(exc)[:300]}" if str(exc) else type(exc).__name__


class Pool:
    """Connections by server identity, and the thread whose loop owns them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._connections: dict[str, Connection] = {}
        self._opening: dict[str, asyncio.Future[Connection]] = {}

    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="agent-core-mcp", daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    def on_loop_thread(self) -> bool:
        return self._thread is not None and threading.current_thread() is self._thread

    async def connection(self, spec: ServerSpec, limits: Limits) -> Connection:
        """The open connection for ``spec`` read under ``limits``, opened now when there is none.

        Concurrent callers share one open.
        """
        key = f"{spec.identity}:{limits.max_message_bytes}"
        conn = self._connections.get(key)
        if conn is not None and conn.alive:
            return conn
        pending = self._opening.get(key)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[Connection] = asyncio.get_running_loop().create_future()
        self._opening[key] = future
        try:
            conn = Connection(spec, limits)
            await conn.open()
            self._connections[key] = conn
            future.set_result(conn)
            return conn
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: no "never retrieved" warning when nobody else waits
            raise
        finally:
            del self._opening[key]

    async def close_connections(self) -> None:
        connections, self._connections = list(self._connections.values()), {}
        await asyncio.gather(*(c.close() for c in connections), return_exceptions=True)

    def close(self) -> None:
        """Close every connection (and stop the loop's servers); the pool opens new ones when used again."""
        with self._lock:
            loop = self._loop
        if loop is None or not loop.is_running() or self.on_loop_thread():
            return
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self.close_connections(), loop).result(timeout=15)


_POOL = Pool()


def pool() -> Pool:
    """The process's pool."""
    return _POOL


def close_all() -> None:
    """Close every MCP connection this process holds (safe to call at any time, any number of times)."""
    _POOL.close()


atexit.register(close_all)


def _submit(work: Callable[[], Awaitable[T]]) -> concurrent.futures.Future[T]:
    if _POOL.on_loop_thread():
        raise RuntimeError("an MCP call was made from the MCP pool's own thread")

    async def run() -> T:
        return await work()

    return asyncio.run_coroutine_threadsafe(run(), _POOL.loop())


def run_sync(work: Callable[[], Awaitable[T]], token: Any = None) -> T:
    """Run ``work()`` on the pool's loop and wait; a cancelled ``token`` cancels it.

    Raises:
        concurrent.futures.CancelledError: the token was cancelled first.
    """
    future = _submit(work)
    remove = token.on_cancel(future.cancel) if token is not None else None
    try:
        return future.result()
    finally:
        if remove is not None:
            remove()


async def run_async(work: Callable[[], Awaitable[T]]) -> T:
    """Run ``work()`` on the pool's loop from any asyncio loop; cancelling the awaiting task cancels ``work``.

    No token here: the engine cancels an async tool's task when its request is
    cancelled, and that cancellation is what reaches ``work``.
    """
    return await asyncio.wrap_future(_submit(work))
