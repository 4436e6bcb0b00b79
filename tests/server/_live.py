"""A real uvicorn server on 127.0.0.1 running ``create_app``, in a thread, for one test."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn

__all__ = ["free_port", "running", "start_serve", "stop_serve"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def running(app: Any, *, header_timeout_s: float | None = None, lifespan: str = "off") -> Iterator[str]:
    """Serve ``app``; yield its base URL (``http://127.0.0.1:PORT``); stop it afterwards.

    ``header_timeout_s`` serves it with the protocol ``agent-core serve`` uses (a deadline for headers).
    """
    extra: dict[str, Any] = {}
    if header_timeout_s is not None:
        from agent_core.server.protocol import with_header_timeout

        extra["http"] = with_header_timeout(header_timeout_s)
    config = uvicorn.Config(app, host="127.0.0.1", port=_free_port(), log_level="warning", lifespan=lifespan,
                            **extra)
    server = uvicorn.Server(config)
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
        server.should_exit = True
        thread.join(timeout=10)


free_port = _free_port


def start_serve(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen[bytes], str]:
    """``agent-core serve ARGS`` as a process with ``AGENT_CORE_HOME=tmp_path``; ``(process, base URL)``."""
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent_core.cli", "serve", "--port", str(port), *args],
        env={**os.environ, "AGENT_CORE_HOME": str(tmp_path), **(env or {})},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        assert proc.poll() is None, proc.communicate()[1].decode()
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
