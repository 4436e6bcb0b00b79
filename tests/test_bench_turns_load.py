"""benchmarks/bench_turns_load.py works: its quick mode runs the headline row on SQLite.

Eight clients post three turns each to one session over two ``agent-core serve`` processes.
No figure is checked (no timed tests); the run itself fails when a turn is lost, a turn calls
the model other than once, two calls overlap on the session, or a conflict/busy/error event comes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.bench  # the benchmark tier: `pytest -m bench` (README, .ci/run)

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_turns_load.py"


def test_quick_mode_saves_every_turn_with_one_model_call():
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick"], check=False, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [line.split() for line in done.stdout.splitlines() if line.startswith("sqlite ")]
    assert len(rows) == 1
    _backend, procs, clients, session, turns, _rate, lost, calls_per_turn = rows[0][:8]
    assert (procs, clients, session, turns, lost, calls_per_turn) == ("2", "8", "one", "24", "0", "1.00")
