"""Fixtures every test folder shares."""

from __future__ import annotations

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
