"""Fixtures every test folder shares."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from agent_core_providers.clients import close_clients
from providers._server import ScriptedServer


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    """A scripted loopback HTTP server (``enqueue`` replies, read ``requests``); pooled clients closed after."""
    srv = ScriptedServer()
    try:
        yield srv
    finally:
        srv.close()
        close_clients()


@pytest.fixture(scope="session", autouse=True)
def _agent_core_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Runs the CLI keeps (``agent-core run`` saves each one) go to a directory of the test run's, not ~."""
    before = os.environ.get("AGENT_CORE_HOME")
    os.environ["AGENT_CORE_HOME"] = str(tmp_path_factory.mktemp("agent-core-home"))
    yield
    if before is None:
        os.environ.pop("AGENT_CORE_HOME", None)
    else:
        os.environ["AGENT_CORE_HOME"] = before
