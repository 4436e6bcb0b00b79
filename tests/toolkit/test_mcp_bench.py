"""benchmarks/bench_mcp.py and bench_mcp_read.py run and print their tables (no figure is checked: tests assert
behaviour, not timings).

Each request the benchmark times checks its own tool message, so a run whose MCP calls fail
exits non-zero instead of printing a row.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.bench  # the benchmark tier: `pytest -m bench` (README, .ci/run)

SCRIPT = Path(__file__).resolve().parent.parent.parent / "benchmarks" / "bench_mcp.py"


def test_the_mcp_benchmark_prints_a_row_per_server() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--rounds", "2"], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line.split("|")[1].strip() for line in done.stdout.splitlines() if line.startswith("| ")]
    assert rows == ["server", "time", "web"]


def test_the_mcp_read_benchmark_prints_a_row_per_size() -> None:
    script = SCRIPT.parent / "bench_mcp_read.py"
    done = subprocess.run([sys.executable, str(script), "--quick"], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line.split("|")[1].strip() for line in done.stdout.splitlines() if line.startswith("| ")]
    assert rows == ["message MB", "0.5", "1"]
