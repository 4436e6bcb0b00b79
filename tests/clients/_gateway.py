"""``agent-core serve`` as an operator starts it, in front of the scripted upstream.

A real process (``python -m agent_core.cli serve``), not an app in the test's thread: the
clients under test share nothing with it but HTTP, and what it does by default (its providers'
retries, its error bodies, its headers) is what is under test, so it gets no test-only config
beyond where the upstream is:

- ``$OPENAI_BASE_URL`` / ``$OPENAI_API_KEY`` and ``$ANTHROPIC_BASE_URL`` / ``$ANTHROPIC_API_KEY``
  point both providers at the upstream, as an operator's environment would;
- ``-c list_models=true``: ``GET /v1/models`` lists what the upstream lists;
- ``--grace 1``: a restart after a failed test does not wait for requests it left running.

The environment it inherits is cleaned of every ``AGENT_CORE_*``, ``OPENAI_*`` and
``ANTHROPIC_*`` variable, so a developer's own settings cannot leak into the tier.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

__all__ = ["Gateway", "GatewayFailed"]

#: Random-looking, as real keys are: the gateway masks any 8-character piece of a key in an error
#: message, so a key made of words would mask the same words in the upstream's messages.
UPSTREAM_OPENAI_KEY = "sk-proj-Xq7RvT2mK9pL4wZ8nB3cF6hJ1dS5gA0e"
UPSTREAM_ANTHROPIC_KEY = "sk-ant-api03-Vb8Nq2Lz5Tw9Hc4Jm7Pk1Rd6Gs3Fy0Ex"
_FOREIGN = ("AGENT_CORE_", "OPENAI_", "ANTHROPIC_")


class GatewayFailed(RuntimeError):
    """``agent-core serve`` exited or did not answer ``/healthz`` in time (the message holds its stderr)."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Gateway:
    """One ``agent-core serve`` process; :meth:`restart` replaces it with a fresh one."""

    def __init__(self, home: Path, openai_base_url: str, anthropic_base_url: str, *extra_args: str) -> None:
        self.home = home
        self.extra_args = extra_args
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(_FOREIGN)}
        self.env.update(
            AGENT_CORE_HOME=str(home),
            OPENAI_BASE_URL=openai_base_url, OPENAI_API_KEY=UPSTREAM_OPENAI_KEY,
            ANTHROPIC_BASE_URL=anthropic_base_url, ANTHROPIC_API_KEY=UPSTREAM_ANTHROPIC_KEY,
            NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost",
        )
        self.process: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.starts = 0

    @property
    def openai_url(self) -> str:
        """The base URL an OpenAI client is given."""
        return f"{self.url}/v1"

    def start(self) -> Gateway:
        """Start the process and wait until it answers.

        Raises:
            GatewayFailed: it exited (an unknown flag, a missing extra) or did not answer in 30 s.
        """
        port = _free_port()
        self.starts += 1
        log = (self.home / f"serve-{self.starts}.log").open("wb")
        args = ["serve", "--port", str(port), "--store", f"sqlite:///{self.home / 'sessions.db'}",
                "--grace", "1", "-c", "list_models=true", *self.extra_args]
        self.process = subprocess.Popen([sys.executable, "-m", "agent_core.cli", *args], env=self.env,
                                        stdout=log, stderr=subprocess.STDOUT)
        log.close()
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            if self.process.poll() is not None:
                raise GatewayFailed(f"agent-core {' '.join(args)} exited with {self.process.returncode}:\n"
                                    f"{self.log_tail()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1, trust_env=False).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise GatewayFailed(f"agent-core serve did not answer /healthz within 30 s:\n{self.log_tail()}")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None

    def restart(self) -> None:
        """A fresh process: a failed test may have left this one retrying or sleeping on an upstream error."""
        self.stop()
        self.start()

    def log_tail(self, size: int = 4000) -> str:
        path = self.home / f"serve-{self.starts}.log"
        return path.read_bytes()[-size:].decode(errors="replace") if path.exists() else ""
