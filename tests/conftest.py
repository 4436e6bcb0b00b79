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


def _order_line(config: pytest.Config) -> str | None:
    """How to repeat this run's order (pytest-randomly's seed); None when the order is the files' own."""
    seed = getattr(config.option, "randomly_seed", None)
    if not config.pluginmanager.hasplugin("randomly") or not isinstance(seed, int):
        return None
    return f"random order: --randomly-seed={seed} repeats it (-p no:randomly keeps the files' order)"


def pytest_sessionstart(session: pytest.Session) -> None:
    """The seed at the top too: ``-q`` (our addopts) hides pytest-randomly's own header line."""
    line, reporter = _order_line(session.config), session.config.pluginmanager.get_plugin("terminalreporter")
    if line and reporter is not None:
        reporter.write_line(line)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    line = _order_line(config)
    if line:
        terminalreporter.write_line(line)
