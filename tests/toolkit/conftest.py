"""Fixtures for the plugin-author toolkit's tests: a loopback server, the recordings.

``pytester`` is loaded for the whole suite by ``-p pytester`` in pyproject.toml's addopts (a
conftest below the root may not declare ``pytest_plugins``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_core_providers.clients import close_clients
from providers._server import ScriptedServer

RECORDINGS = Path(__file__).resolve().parent.parent / "providers" / "recordings"


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    srv = ScriptedServer()
    try:
        yield srv
    finally:
        srv.close()
        close_clients()
