"""benchmarks/bench_server.py works: its quick mode streams through a real agent-core serve and counts turns.

No figure is checked (no timed tests); the run itself checks every client's text and every
turn's reply, so a broken facade or a lost turn fails here.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.bench  # the benchmark tier: `pytest -m bench` (README, .ci/run)

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_server.py"


def test_quick_mode_runs_end_to_end():
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick"], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "openai client -> serve -> upstream" in out and "added by the facade" in out
    assert "1 server process(es)" in out and "4 server process(es)" in out
