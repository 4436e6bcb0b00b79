"""Fixtures for the plugin-author toolkit's tests: a loopback server, the recordings.

``pytester`` is loaded for the whole suite by ``-p pytester`` in pyproject.toml's addopts (a
conftest below the root may not declare ``pytest_plugins``).
"""

from __future__ import annotations

from pathlib import Path

RECORDINGS = Path(__file__).resolve().parent.parent / "providers" / "recordings"


