"""A real uvicorn (or hypercorn) server on 127.0.0.1 running ``create_app``, in a thread, for one test."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn

__all__ = ["free_port", "running", "running_hypercorn", "start_serve", "stop_serve"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Server(uvicorn.Server):
    """uvicorn's server, told to stop at once instead of at its next 0.1 s tick.

    Its main loop wakes ten times a second to look at ``should_exit``; a test that stops it
    waited half a tick on average, then the shutdown. Over two hundred server tests that was
    seconds of the suite. This loop waits on an event the stopping thread sets (and still ticks
    once a second, to keep the date header current).
    """

    _loop: asyncio.AbstractEventLoop | None = None
    _woken: asyncio.Event | None = None

    async def main_loop(self) -> None:
        self._loop, self._woken = asyncio.get_running_loop(), asyncio.Event()
        counter = 0
        should_exit = await self.on_tick(counter)
        while not should_exit:
            counter = (counter + 10) % 864000  # on_tick renews the date header when this is a multiple of 10
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._woken.wait(), 1.0)
            should_exit = await self.on_tick(counter)

    def stop(self) -> None:
        self.should_exit = True
        loop, woken = self._loop, self._woken
        if loop is not None and woken is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed already
                loop.call_soon_threadsafe(woken.set)


@contextmanager
def running(app: Any, *, header_timeout_s: float | None = 10.0, lifespan: str = "off") -> Iterator[str]:
    """Serve ``app``; yield its base URL (``http://127.0.0.1:PORT``); stop it afterwards.

    It is served with the HTTP protocol ``agent-core serve`` uses (a deadline of ``header_timeout_s``
    for headers, writes coalesced per loop turn: :mod:`agent_core.server.http.uvicorn_tuning`), so the
    tests see the server's own bytes; ``header_timeout_s=None`` uses stock uvicorn instead.
    """
    extra: dict[str, Any] = {}
    if header_timeout_s is not None:
        from agent_core.server.http.uvicorn_tuning import http_option

        extra["http"] = http_option(header_timeout_s)
    config = uvicorn.Config(app, host="127.0.0.1", port=_free_port(), log_level="warning", lifespan=lifespan,
                            **extra)
    server = _Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{config.port}"
    finally:
        server.stop()
        thread.join(timeout=10)


@contextmanager
def running_hypercorn(app: Any) -> Iterator[str]:
    """Serve ``app`` with hypercorn (HTTP/1.1 over plain TCP), through its public ``serve``; yield its base URL.

    The app has to work under any ASGI server: this is the other one the tests run it on.
    """
    from hypercorn.asyncio import serve
    from hypercorn.config import Config

    config = Config()
    port = _free_port()
    config.bind = [f"127.0.0.1:{port}"]
    config.loglevel = "WARNING"
    config.graceful_timeout = 1.0  # a stop waits this long at most for responses still open
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()
    failed: list[BaseException] = []

    def run() -> None:
        try:
            loop.run_until_complete(serve(app, config, shutdown_trigger=stop.wait))
        except BaseException as exc:  # noqa: BLE001 - said by the thread that waits for the start
            failed.append(exc)
        finally:
            loop.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while True:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            break
        if failed or not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"hypercorn did not start: {failed[:1]}")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        with contextlib.suppress(RuntimeError):  # the loop has closed already
            loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=10)


free_port = _free_port


def start_serve(tmp_path: Path, *args: str, env: dict[str, str] | None = None,
                wrap: Callable[[list[str]], list[str]] | None = None) -> tuple[subprocess.Popen[bytes], str]:
    """``agent-core serve ARGS`` as a process with ``AGENT_CORE_HOME=tmp_path``; ``(process, base URL)``.

    ``wrap`` turns the command into the one to run (to start it in a namespace of its own, say).
    """
    port = _free_port()
    tmp_path.mkdir(parents=True, exist_ok=True)
    # Its output goes to a file, not a pipe nobody reads: a server that logs a lot (a database
    # outage) would otherwise block on a full pipe. The file is read back when it fails to start.
    log = tmp_path / f"serve-{port}.log"
    with open(log, "wb") as out:
        command = [sys.executable, "-m", "agent_core.cli", "serve", "--port", str(port), *args]
        proc = subprocess.Popen(
            wrap(command) if wrap is not None else command,
            env={**os.environ, "AGENT_CORE_HOME": str(tmp_path), **(env or {})},
            stdout=out, stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        if proc.poll() is not None:
            proc.wait()
            raise AssertionError(log.read_text(errors="replace")[-4000:])
        try:
            httpx.get(f"{url}/healthz", timeout=1)
            return proc, url
        except httpx.TransportError:
            assert time.monotonic() < deadline, "agent-core serve did not start"
            time.sleep(0.1)


def stop_serve(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
