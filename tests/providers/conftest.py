"""Fixtures for provider tests: a scripted loopback server, clean client pools, wire helpers."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agent_core_providers._routing import OURS, TRANSPORT_ENV
from agent_core_providers.clients import aclose_clients, close_clients


@pytest.fixture(autouse=True)
def _fresh_pools() -> Iterator[None]:
    """Each test gets new pooled clients (servers change port), closed afterwards."""
    yield
    close_clients()


@pytest.fixture(autouse=True)
def _own_transport_for_its_own_tests(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A module that tests agent-core's transport itself (``OUR_TRANSPORT_ONLY = True``) runs on it.

    The rest of the directory runs on whichever transport ``$AGENT_CORE_TRANSPORT``
    chooses, so the same tests pass against stock httpx's (``.ci/run`` runs them so).
    """
    if getattr(request.module, "OUR_TRANSPORT_ONLY", False):
        monkeypatch.setenv(TRANSPORT_ENV, OURS)


def run_async(coro_fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``asyncio.run`` that also closes the loop's pooled clients before the loop ends."""

    async def main() -> Any:
        try:
            return await coro_fn(*args, **kwargs)
        finally:
            await aclose_clients()

    return asyncio.run(main())


@pytest.fixture(scope="session")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key (trust it with ``SSL_CERT_FILE``)."""
    where = tmp_path_factory.mktemp("tls")
    cert, key = where / "cert.pem", where / "key.pem"
    try:
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                        "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key),
                        "-out", str(cert)], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("no openssl to make a test certificate")
    return cert, key
