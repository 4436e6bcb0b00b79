"""agent-core's pytest plugin: the ``agent_snapshot`` fixture.

Registered through the ``pytest11`` entry point, so installing agent-core is
enough for pytest to offer it. syrupy is imported only when a test asks for
the fixture: without it (``pip install 'agent-core[testing]'`` brings it) pytest
still runs every other test, and a test using ``agent_snapshot`` errors with a
message saying what to install.
"""

from __future__ import annotations

from typing import Any

import pytest

from ..errors import install_hint

__all__ = ["agent_snapshot"]


@pytest.fixture
def agent_snapshot(request: pytest.FixtureRequest) -> Any:
    """A syrupy snapshot that stores agent-core values as stable text (see ``agent_core.testing.render``).

    ``assert harness.stream(chunks) == agent_snapshot``; ``pytest --snapshot-update`` writes it.
    """
    try:
        import syrupy  # noqa: F401
    except ImportError:
        syrupy = None
    if syrupy is None:  # failing outside the except block keeps the ImportError out of the report
        pytest.fail(
            f"the agent_snapshot fixture needs syrupy, which is not installed: {install_hint('testing')}",
            pytrace=False,
        )
    from .snapshot import AgentSnapshotExtension

    try:
        snapshot = request.getfixturevalue("snapshot")
    except pytest.FixtureLookupError:
        snapshot = None
    if snapshot is None:
        pytest.fail(
            "the agent_snapshot fixture needs syrupy's pytest plugin, which is installed but not active "
            "(was it disabled with -p no:syrupy?)",
            pytrace=False,
        )
    return snapshot.use_extension(AgentSnapshotExtension)
