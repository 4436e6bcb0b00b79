"""Headless Chromium for what only a browser shows: which cross-site requests a page can really send.

``load(url)`` opens a page in a fresh profile, lets its scripts run, and returns the DOM it
ends with (``--dump-dom``). The page reports what it saw by writing into its own document.
Without Chromium the tests skip, unless ``AGENT_CORE_BROWSER=required`` (``.ci/run`` sets it),
where they fail instead.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

import pytest

__all__ = ["chromium", "load"]


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if path is None:
        if os.environ.get("AGENT_CORE_BROWSER") == "required":
            pytest.fail("Chromium is required (AGENT_CORE_BROWSER=required) but not installed")
        pytest.skip("no Chromium on this machine (Debian package chromium)")
    return path


def load(url: str, *, budget_ms: int = 5000) -> str:
    """The DOM of ``url`` after its scripts ran (up to ``budget_ms`` of page time)."""
    binary = chromium()
    with tempfile.TemporaryDirectory() as profile:
        done = subprocess.run(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}", f"--virtual-time-budget={budget_ms}", "--dump-dom", url],
            capture_output=True, timeout=60, check=False,
        )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    return done.stdout.decode()
